#!/usr/bin/env bash
# Operator templates on the device, in one call of about 8 minutes:
#   run(command="bash scripts/device/operators.sh", carry=[".whl"], timeout_s=600)
# .whl/ holds xgboost-cpu (the device image has Python 3.12, CuPy, torch and numpy, not xgboost);
# leave pip's numpy and scipy wheels out of it: the device has numpy, and they pass the 64 MiB carry.
# 1. pytest -m gpu tests/test_gpu_operators.py: random configs of gemm, depthwise, broadcast
#    and custom kernels against their references, and the vendor baselines (about 1 minute);
# 2. benchmarks/operators.py with a 360 s budget: xgb tuning of GEMM G1-G5, depthwise D1-D9 and
#    the 12 broadcast workloads against cuBLAS, cuDNN and copy bandwidth.
# Writes to $OUT: gpu_tests.txt, operators.txt (full output), operators.json, operators-h200.md
# (copy to docs/benchmarks/), operators.log (every tuning record, AutoTVM format); prints the table last.
set -uo pipefail
source "$(dirname "$0")/env.sh"

timeout ${GPU_TEST_S:-110} python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_operators.py 2>&1 | tee "$OUT/gpu_tests.txt" | tail -n 15

timeout $((${BUDGET_S:-360} + 70)) python3 benchmarks/operators.py --budget-s ${BUDGET_S:-360} --trials 200 --batch-size 48 --sections "${SECTIONS:-gemm,depthwise,broadcast}" \
    --log "$OUT/operators.log" --json "${JSON_OUT:-$OUT/operators.json}" --markdown "$OUT/operators-h200.md" \
    > "$OUT/operators.txt" 2>&1
status=$?
tail -n 30 "$OUT/operators.txt" | grep -v '^{' >&2
echo "benchmark exit status $status"
cat "$OUT/operators-h200.md" 2>/dev/null || echo "no table written (see operators.txt)"
