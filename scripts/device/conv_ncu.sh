#!/usr/bin/env bash
# Nsight Compute on the tensor-core conv (scripts/device/conv_ncu.py: confirmed bests, more tilings, cuDNN's pick), one call:
#   run(command="TUNERWEB_COMMIT=<sha> JSON=<a tensor_core_conv.json> LAYERS='7² 512,14² 1024' CONFIGS='<knob values> ...' \
#       bash scripts/device/conv_ncu.sh", timeout_s=420)
# 1. the probe alone (<= PROBE_S, 120 s): registers, shared memory, event-timed warm µs of every kernel;
# 2. the confirmed bests and cuDNN's (with NCU_CONFIGS=1 the CONFIGS too) once each under ncu --set full (--clock-control none: the clocks left alone), <= NCU_S (240 s);
# 3. the report's details page and its raw metrics (CSV, gzipped); scripts/device/ncu_summary.py's table printed last;
# 4. SEARCH=1: per layer of JSON's confirmed rows, cuDNN's search under ncu, profiling the one kernel the confirmation
#    recorded as cuDNN's pick (-k, -c 1; <= SEARCH_S, 60 s each): cudnn-<n>.{ncu-rep,details.txt,raw.csv.gz,summary.txt}.
# Writes to $OUT: conv_ncu.txt (the probe), ncu-summary.txt, and conv_ncu.tgz holding those and ncu-run.txt,
# ncu-details.txt, ncu-raw.csv.gz and the cudnn-<n> files.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CUPY_TF32=0
ARGS=(--json "$JSON" --layers "${LAYERS:-}" --precision "${PRECISION:-float16}")
PROBE_ARGS=("${ARGS[@]}")
for config in ${CONFIGS:-}; do PROBE_ARGS+=(--config "$config"); done
[ "${NCU_CONFIGS:-0}" = 1 ] && ARGS=("${PROBE_ARGS[@]}")  # else ncu sees the confirmed bests and cuDNN only
{ echo "commit ${TUNERWEB_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null)}, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
  python3 -c 'import torch, cupy; print("torch", torch.__version__, "cudnn", torch.backends.cudnn.version(), "cupy", cupy.__version__)'
  ncu --version | tail -n 1; } | tee "$OUT/conv_ncu.txt"
timeout -k 5 "${PROBE_S:-120}" python3 scripts/device/conv_ncu.py "${PROBE_ARGS[@]}" >> "$OUT/conv_ncu.txt" 2>&1
echo "probe exit status $?" | tee -a "$OUT/conv_ncu.txt"
grep -E '^\S|ours|cuDNN' "$OUT/conv_ncu.txt" | grep -v '^  [A-Z]' | cut -c1-200 | tail -n 40
timeout -k 5 "${NCU_S:-240}" ncu --profile-from-start off --clock-control none --set full --import-source no \
    --export "$OUT/conv" --force-overwrite \
    python3 scripts/device/conv_ncu.py "${ARGS[@]}" --launches 1 --rounds 1 > "$OUT/ncu-run.txt" 2>&1
echo "ncu exit status $?" | tee -a "$OUT/conv_ncu.txt"
grep -E '^==(ERROR|WARNING)' "$OUT/ncu-run.txt" | head -n 5
ncu --import "$OUT/conv.ncu-rep" --page details > "$OUT/ncu-details.txt" 2>&1
ncu --import "$OUT/conv.ncu-rep" --page raw --csv 2> /dev/null | gzip > "$OUT/ncu-raw.csv.gz"
python3 scripts/device/ncu_summary.py "$OUT/ncu-raw.csv.gz" | tee "$OUT/ncu-summary.txt" | cut -c1-330
if [ "${SEARCH:-0}" = 1 ]; then
    python3 - "$JSON" "${PRECISION:-float16}" > "$OUT/search-targets.tsv" <<'PY'
import json, sys
for row in json.load(open(sys.argv[1]))["confirm"]:
    if row["workload"].endswith(" " + sys.argv[2]) and row["cudnn"]["details"].get("algorithm"):
        print(row["workload"], row["cudnn"]["details"]["algorithm"].split(",")[0].strip(), sep="\t")
PY
    n=0
    while IFS=$'\t' read -r layer kernel; do
        n=$((n + 1))
        timeout -k 5 "${SEARCH_S:-60}" ncu --profile-from-start off --clock-control none --set full --import-source no \
            -k "regex:^${kernel}" -c 1 --export "$OUT/cudnn-$n" --force-overwrite \
            python3 scripts/device/conv_ncu.py --layers "$layer" --precision "${PRECISION:-float16}" --profile-search \
            > "$OUT/cudnn-$n-run.txt" 2>&1 < /dev/null
        echo "search $n ($layer: $kernel): ncu exit status $?" | tee -a "$OUT/conv_ncu.txt"
        ncu --import "$OUT/cudnn-$n.ncu-rep" --page details > "$OUT/cudnn-$n-details.txt" 2>&1
        ncu --import "$OUT/cudnn-$n.ncu-rep" --page raw --csv 2> /dev/null | gzip > "$OUT/cudnn-$n-raw.csv.gz"
        python3 scripts/device/ncu_summary.py "$OUT/cudnn-$n-raw.csv.gz" | tee "$OUT/cudnn-$n-summary.txt" | cut -c1-330
    done < "$OUT/search-targets.tsv"
fi
# At most 8 files come back from a device call: the text and CSVs in one archive, the reports (16 MB each) left there
# unless KEEP_REPORTS=1.
(cd "$OUT" && tar czf /tmp/conv_ncu.tgz --exclude "*.ncu-rep" . && mv /tmp/conv_ncu.tgz . && find . -maxdepth 1 -type f \
    ! -name conv_ncu.tgz ! -name conv_ncu.txt ! -name ncu-summary.txt $([ "${KEEP_REPORTS:-0}" = 1 ] && echo ! -name '*.ncu-rep') -delete)
ls "$OUT"
