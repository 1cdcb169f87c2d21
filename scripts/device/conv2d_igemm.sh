#!/usr/bin/env bash
# Issue 18 step 2 on the device, in one call (each step under its own time limit):
#   run(command="TUNERWEB_COMMIT=<clean short sha> OUT=$OUT/r bash scripts/device/conv2d_igemm.sh",
#       carry=[".whl", ".debs"], timeout_s=590)
# 1. gputests: the implicit-GEMM conv's GPU tests (random configs on ResNet-18 and batched layers,
#    its cuDNN baseline) -> pytest-gpu.txt
# 2. tune: benchmarks/conv2d_resnet.py, the XGBoost tuner over LAYERS (presets; default IG-C1 ... IG-C12),
#    TRIALS configs each, every record logged -> tune.json, tune.md, logs.tar.gz (the AutoTVM logs)
# 3. confirm: benchmarks/verify_bests.py over the new logs and COMPARE's (default: the direct schedule's
#    committed C1-C12 logs, so each layer's two templates meet cuDNN in the same process), twice, each run
#    in a measuring process of its own (A picks a layer's template, B re-measures) -> confirm-a.json, confirm-b.json
# STEPS (default "gputests tune confirm") picks steps; *_S variables set the limits.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT/logs"
source scripts/device/offline_deps.sh
export PYTHONUNBUFFERED=1 CUPY_TF32=0 TUNERWEB_KERNEL_CACHE=/tmp/tunerweb-kernels
shopt -s nullglob
STEPS=${STEPS:-gputests tune confirm}
LAYERS=${LAYERS:-$(printf 'IG-C%s,' $(seq 1 12) | sed 's/,$//')}
COMPARE=${COMPARE-docs/benchmarks/conv2d-h200-logs/*.log.gz}
started=$SECONDS
step() { echo "== $1 at +$(( SECONDS - started )) s"; }
has() { [[ " $STEPS " == *" $1 "* ]]; }

if has gputests; then
    step gputests
    { echo "commit ${TUNERWEB_COMMIT:-unknown}, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
      echo "command: python3 -m pytest -q -m gpu tests/test_gpu_operators.py -k implicit_gemm"
      timeout ${GPU_TESTS_S:-90} python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_operators.py \
          -k implicit_gemm 2>&1; echo "exit status $?"; } > "$OUT/pytest-gpu.txt"
    tail -n 4 "$OUT/pytest-gpu.txt"
fi
if has tune; then
    step tune
    timeout ${TUNE_S:-300} python3 benchmarks/conv2d_resnet.py --layers "$LAYERS" --trials ${TRIALS:-400} \
        --batch-size 64 --sa-iterations 150 --log-dir "$OUT/logs" --json "$OUT/tune.json" --markdown "$OUT/tune.md" \
        --budget-s $(( ${TUNE_S:-300} - 45 )) > "$OUT/tune.txt" 2>&1
    echo "tune exit status $?"; tail -n 16 "$OUT/tune.md"
fi
if has confirm; then
    for run in a b; do
        step "confirm $run"
        limit=$([ $run = a ] && echo ${CONFIRM_A_S:-120} || echo ${CONFIRM_B_S:-100})
        timeout $limit python3 benchmarks/verify_bests.py "$OUT"/logs/*.log $COMPARE --rounds 5 \
            --budget-s $(( limit - 20 )) --json "$OUT/confirm-$run.json" > "$OUT/confirm-$run.txt" 2>&1
        echo "run $run exit status $? ($(grep -c '^{' "$OUT/confirm-$run.txt") workloads measured)"
    done
    tail -n 30 "$OUT/confirm-b.txt"
fi
(cd "$OUT" && tar czf logs.tar.gz logs && rm -rf logs)
step done
