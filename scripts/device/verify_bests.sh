#!/usr/bin/env bash
# Confirmed figures on the device, in one call of about 5 minutes:
#   run(command="bash scripts/device/verify_bests.sh", timeout_s=420)
# Needs only what the device image has (Python 3.12, CuPy, PyTorch with cuDNN, numpy, cuda-bindings NVRTC).
# 1. pytest -m gpu tests/test_gpu_confirm.py: confirmations of real kernels interleaved with cuDNN / cuBLAS and
#    the default config in a fresh process, warm and cold; a generator change detected (about 1 minute);
# 2. benchmarks/verify_bests.py over every committed log's bests (ResNet-18 C1-C12, depthwise D1-D9, GEMM G1-G5,
#    the broadcast and custom workloads), twice, each run in a measuring process of its own:
#    run A gives the docs' tables and the leaderboard's confirmations, run B re-measures them;
# 3. benchmarks/confirmed_tables.py: A's tables, and B against A (each best within 3 %); printed last.
# Writes to $OUT: gpu_confirm_tests.txt, confirm-a.json/.txt, confirm-b.json/.txt, confirmed-tables.md.
# Then, on the CPU machine, from the repository root with the files copied back:
#   python benchmarks/confirmed_tables.py confirm-a.json --compare confirm-b.json --leaderboard --write-docs
#   python manage.py import_confirmations confirm-a.json      # the leaderboard's confirmations
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CUPY_TF32=0 TUNERWEB_KERNEL_CACHE=/tmp/tunerweb-kernels
shopt -s globstar nullglob
LOGS=(docs/benchmarks/conv2d-h200-logs/*.log.gz docs/benchmarks/operators-h200-logs/**/*.log.gz)

timeout ${GPU_TEST_S:-120} python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_confirm.py 2>&1 \
    | tee "$OUT/gpu_confirm_tests.txt" | tail -n 8

for run in a b; do
    timeout ${RUN_S:-150} python3 benchmarks/verify_bests.py "${LOGS[@]}" --rounds ${ROUNDS:-5} --budget-s $(( ${RUN_S:-150} - 20 )) \
        --json "$OUT/confirm-$run.json" > "$OUT/confirm-$run.txt" 2>&1
    echo "run $run exit status $? ($(grep -c '^{' "$OUT/confirm-$run.txt") workloads)"
done
python3 benchmarks/confirmed_tables.py "$OUT/confirm-a.json" --compare "$OUT/confirm-b.json" > "$OUT/confirmed-tables.md" 2>&1
echo "tables exit status $?"
tail -n 60 "$OUT/confirmed-tables.md"
