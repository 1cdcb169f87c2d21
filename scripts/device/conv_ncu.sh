#!/usr/bin/env bash
# Nsight Compute on the tensor-core conv (scripts/device/conv_ncu.py: confirmed bests, more tilings, cuDNN's pick), one call:
#   run(command="TUNERWEB_COMMIT=<sha> JSON=<a tensor_core_conv.json> LAYERS='7² 512,14² 1024' CONFIGS='<knob values> ...' \
#       bash scripts/device/conv_ncu.sh", timeout_s=420)
# 1. the probe alone (<= PROBE_S, 120 s): registers, shared memory and warm µs of every kernel (cuDNN as a CUDA graph);
# 2. the confirmed bests and cuDNN's pick in that process (with NCU_CONFIGS=1 the CONFIGS too) once each under
#    ncu --set full (--clock-control none: the clocks left alone), <= NCU_S (240 s): conv.*;
# 3. SEARCH=1: per layer of JSON's confirmed rows (those matching SEARCH_LAYERS, comma-separated parts of their
#    descriptions; default all), cuDNN's search under ncu, profiling only the kernel the confirmation recorded as
#    cuDNN's pick (-k, -c 1; <= SEARCH_S, 60 s each): cudnn-<n>.*.
# Each profile NAME leaves NAME.ncu-rep, NAME-run.txt, NAME-details.txt (ncu's details page), NAME-raw.csv.gz (every
# metric) and NAME-summary.txt (scripts/device/ncu_summary.py, printed). A device call returns at most 8 files: all but
# the reports go into $OUT/conv_ncu.tgz, and $OUT keeps that, conv_ncu.txt (the probe) and conv-summary.txt; the
# reports (16 MB each) stay on the device unless KEEP_REPORTS=1 (then only without SEARCH: 8 files at most).
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CUPY_TF32=0
: "${JSON:?set JSON to a tensor_core_conv.json: its confirmed bests are what is profiled}"
ARGS=(--json "$JSON" --layers "${LAYERS:-}" --precision "${PRECISION:-float16}")
PROBE_ARGS=("${ARGS[@]}")
for config in ${CONFIGS:-}; do PROBE_ARGS+=(--config "$config"); done
[ "${NCU_CONFIGS:-0}" = 1 ] && ARGS=("${PROBE_ARGS[@]}")  # else ncu sees the confirmed bests and cuDNN only

profile() {  # profile NAME TIMEOUT_S [NCU ARGS] -- CONV_NCU.PY ARGS
    local name=$1 limit=$2 ncu_args=()
    shift 2
    while [ "$1" != -- ]; do ncu_args+=("$1"); shift; done
    shift
    timeout -k 5 "$limit" ncu --profile-from-start off --clock-control none --set full --import-source no \
        ${ncu_args[@]+"${ncu_args[@]}"} --export "$OUT/$name" --force-overwrite \
        python3 scripts/device/conv_ncu.py "$@" > "$OUT/$name-run.txt" 2>&1 < /dev/null
    echo "$name: ncu exit status $?" | tee -a "$OUT/conv_ncu.txt"
    grep -E '^==ERROR' "$OUT/$name-run.txt" | head -n 3
    ncu --import "$OUT/$name.ncu-rep" --page details > "$OUT/$name-details.txt" 2>&1
    ncu --import "$OUT/$name.ncu-rep" --page raw --csv 2> /dev/null | gzip > "$OUT/$name-raw.csv.gz"
    python3 scripts/device/ncu_summary.py "$OUT/$name-raw.csv.gz" | tee "$OUT/$name-summary.txt" | cut -c1-330
}

{ echo "commit ${TUNERWEB_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null)}, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
  python3 -c 'import torch, cupy; print("torch", torch.__version__, "cudnn", torch.backends.cudnn.version(), "cupy", cupy.__version__)'
  ncu --version | tail -n 1; } | tee "$OUT/conv_ncu.txt"
timeout -k 5 "${PROBE_S:-120}" python3 scripts/device/conv_ncu.py "${PROBE_ARGS[@]}" >> "$OUT/conv_ncu.txt" 2>&1
echo "probe exit status $?" | tee -a "$OUT/conv_ncu.txt"
grep -E '^\S|ours|cuDNN' "$OUT/conv_ncu.txt" | grep -v '^  [[:upper:]]' | cut -c1-200 | tail -n 40
profile conv "${NCU_S:-240}" -- "${ARGS[@]}" --launches 1 --rounds 1
if [ "${SEARCH:-0}" = 1 ]; then
    python3 scripts/device/conv_ncu.py --json "$JSON" --layers "${SEARCH_LAYERS:-}" --precision "${PRECISION:-float16}" \
        --search-targets > "$OUT/search-targets.tsv"
    n=0
    while IFS=$'\t' read -r layer kernel; do
        n=$((n + 1))
        echo "cudnn-$n: $layer, $kernel" | tee -a "$OUT/conv_ncu.txt"
        profile "cudnn-$n" "${SEARCH_S:-60}" -k "regex:^$kernel" -c 1 -- \
            --layers "$layer" --precision "${PRECISION:-float16}" --profile-search
    done < "$OUT/search-targets.tsv"
fi
keep=(! -name conv_ncu.tgz ! -name conv_ncu.txt ! -name conv-summary.txt)
[ "${KEEP_REPORTS:-0}" = 1 ] && keep+=(! -name '*.ncu-rep')
(cd "$OUT" && tar czf /tmp/conv_ncu.tgz --exclude '*.ncu-rep' . && mv /tmp/conv_ncu.tgz . \
    && find . -maxdepth 1 -type f "${keep[@]}" -delete)
ls "$OUT"
