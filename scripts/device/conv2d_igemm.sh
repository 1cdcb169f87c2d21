#!/usr/bin/env bash
# Issue 18 step 2 on the device, in one call (each step under its own time limit):
#   run(command="TUNERWEB_COMMIT=<clean short sha> OUT=$OUT/r bash scripts/device/conv2d_igemm.sh",
#       carry=[".whl", ".debs"], timeout_s=590)
# 1. gputests: GPU_TESTS, pytest's arguments split at spaces (default the implicit-GEMM conv's tests: random
#    configs on ResNet-18 and batched layers, its cuDNN baseline) -> pytest-gpu.txt
# 2. tune: benchmarks/conv2d_resnet.py, the XGBoost tuner over LAYERS (presets; default IG-C1 ... IG-C12),
#    TRIALS configs each, every record logged -> tune.json, tune.md, the AutoTVM logs (in run.tar.gz); with
#    VARY (a knob) and SET_VARIED (KNOB=VALUE) it first measures each log's 3 fastest configs at VARY's other options
# 3. confirm: benchmarks/verify_bests.py over the new logs and COMPARE's (default: the direct schedule's
#    committed C1-C12 logs, so each layer's two templates meet cuDNN in the same process), twice, each run
#    in a measuring process of its own (A picks a layer's template, B re-measures) -> confirm-a.json, confirm-b.json
#    ONLY (comma-separated presets) confirms those alone. Each run's own logs are the new ones and COMPARE's; with RESUME (committed log folders) the tuning goes on
#    from their records (a layer's TRIALS count them).
# 4. ncu: scripts/device/igemm_ncu.py under Nsight Compute (--set full, clocks left alone) for NCU_LAYERS: the
#    logs' best of each and cuDNN's call on it -> igemm-summary.txt (scripts/device/ncu_summary.py); the report,
#    its details page and raw metrics go into run.tar.gz
# STEPS (default "gputests tune confirm") picks steps; *_S variables set the limits (the defaults' sum, with ncu's,
# stays under the call's 590 s). Besides the JSONs, tune.md
# and pytest-gpu.txt, everything (logs, texts, reports) comes back in run.tar.gz.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT/logs"
source scripts/device/offline_deps.sh
export PYTHONUNBUFFERED=1 CUPY_TF32=0 TUNERWEB_KERNEL_CACHE=/tmp/tunerweb-kernels
shopt -s nullglob
STEPS=${STEPS:-gputests tune confirm}
LAYERS=${LAYERS:-$(printf 'IG-C%s,' $(seq 1 12) | sed 's/,$//')}
COMPARE=${COMPARE-docs/benchmarks/conv2d-h200-logs/*.log.gz}
GPU_TESTS=${GPU_TESTS:-tests/test_gpu_operators.py -k implicit_gemm}
started=$SECONDS
step() { echo "== $1 at +$(( SECONDS - started )) s"; }
has() { [[ " $STEPS " == *" $1 "* ]]; }

if has gputests; then
    step gputests
    { echo "commit ${TUNERWEB_COMMIT:-unknown}, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
      echo "command: python3 -m pytest -q -m gpu $GPU_TESTS"
      timeout ${GPU_TESTS_S:-90} python3 -m pytest -q -m gpu -p no:cacheprovider $GPU_TESTS 2>&1
      echo "exit status $?"; } > "$OUT/pytest-gpu.txt"
    tail -n 4 "$OUT/pytest-gpu.txt"
fi
for folder in ${RESUME:-}; do
    for log in "$folder"/*.log.gz; do gunzip -c "$log" > "$OUT/logs/$(basename "$log" .gz)"; done
done
if has tune; then
    step tune
    timeout ${TUNE_S:-240} python3 benchmarks/conv2d_resnet.py --layers "$LAYERS" --trials ${TRIALS:-300} \
        --batch-size 64 --sa-iterations 150 --log-dir "$OUT/logs" --json "$OUT/tune.json" --markdown "$OUT/tune.md" \
        ${VARY:+--vary "$VARY"} ${SET_VARIED:+--set-varied "$SET_VARIED"} \
        --budget-s $(( ${TUNE_S:-240} - 45 )) > "$OUT/tune.txt" 2>&1
    echo "tune exit status $?"; tail -n 16 "$OUT/tune.md"
fi
if has confirm; then
    for run in a b; do
        step "confirm $run"
        limit=$([ $run = a ] && echo ${CONFIRM_A_S:-70} || echo ${CONFIRM_B_S:-60})
        timeout $limit python3 benchmarks/verify_bests.py "$OUT"/logs/*.log $COMPARE --rounds 5 --only "${ONLY:-}" \
            --budget-s $(( limit - 20 )) --json "$OUT/confirm-$run.json" > "$OUT/confirm-$run.txt" 2>&1
        echo "run $run exit status $? ($(grep -c '^{' "$OUT/confirm-$run.txt") workloads measured)"
    done
    tail -n 30 "$OUT/confirm-b.txt"
fi
if has ncu; then
    step ncu
    : "${NCU_LAYERS:?set NCU_LAYERS to the conv presets to profile (IG-..., WG-..., WN-...)}"
    timeout -k 5 ${NCU_S:-120} ncu --profile-from-start off --clock-control none --set full --import-source no \
        --export "$OUT/igemm" --force-overwrite python3 scripts/device/igemm_ncu.py "$OUT"/logs/*.log $COMPARE \
        --layers "$NCU_LAYERS" > "$OUT/igemm-run.txt" 2>&1 < /dev/null
    echo "ncu exit status $?"; grep -E '^(IG|WG|WN)|^  ours' "$OUT/igemm-run.txt"
    ncu --import "$OUT/igemm.ncu-rep" --page details > "$OUT/igemm-details.txt" 2>&1
    ncu --import "$OUT/igemm.ncu-rep" --page raw --csv 2> /dev/null | gzip > "$OUT/igemm-raw.csv.gz"
    python3 scripts/device/ncu_summary.py "$OUT/igemm-raw.csv.gz" > "$OUT/igemm-summary.txt" 2>&1
    cut -c1-400 "$OUT/igemm-summary.txt"
fi
# One archive of all but the JSONs and the short texts (made outside $OUT: tar must not read what it writes).
(cd "$OUT" && tar czf /tmp/run.tar.gz --exclude '*.json' --exclude tune.md --exclude pytest-gpu.txt \
    --exclude igemm-summary.txt . && find . -mindepth 1 -maxdepth 1 ! -name '*.json' ! -name tune.md \
    ! -name pytest-gpu.txt ! -name igemm-summary.txt -exec rm -rf {} + && mv /tmp/run.tar.gz .)
step done
