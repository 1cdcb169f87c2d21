#!/usr/bin/env bash
# Confirmed figures on the device, in one call of at most 6 minutes:
#   run(command="TUNERWEB_COMMIT=<short sha> bash scripts/device/verify_bests.sh", timeout_s=400)
# (the device's copy of the tree has no .git: the commit is named by the caller, and must be clean)
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

timeout ${GPU_TEST_S:-100} python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_confirm.py 2>&1 \
    | tee "$OUT/gpu_confirm_tests.txt" | tail -n 8

# Run B finds every kernel in the disk cache run A filled, so it needs less time.
for run in a b; do
    limit=$([ $run = a ] && echo ${RUN_A_S:-150} || echo ${RUN_B_S:-120})
    timeout $limit python3 benchmarks/verify_bests.py "${LOGS[@]}" --rounds ${ROUNDS:-5} --budget-s $(( limit - 25 )) \
        --json "$OUT/confirm-$run.json" > "$OUT/confirm-$run.txt" 2>&1
    echo "run $run exit status $? ($(grep -c '^{' "$OUT/confirm-$run.txt") workloads measured)"
done
python3 benchmarks/confirmed_tables.py "$OUT/confirm-a.json" --compare "$OUT/confirm-b.json" > "$OUT/confirmed-tables.md" 2>&1
echo "tables exit status $?"
tail -n 60 "$OUT/confirmed-tables.md"
