#!/usr/bin/env bash
# Configs per second with the default tuner on the H200, in one call of about 5 minutes:
#   run(command="bash scripts/device/configs_per_second.sh", carry=[".whl"], timeout_s=420)
# .whl/ holds xgboost-cpu (as for scripts/device/operators.sh). Writes to $OUT: one AutoTVM log
# per layer, configs_per_second.json and .md, stdout.txt; prints the table last.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site || exit 1
export PYTHONUNBUFFERED=1 CUPY_TF32=0 TUNERWEB_KERNEL_CACHE=/tmp/tunerweb-kernels
timeout 400 python3 scripts/device/configs_per_second.py --out "$OUT" --seconds ${SECONDS_PER_LAYER:-16} > "$OUT/stdout.txt" 2>&1
status=$?
tail -n 22 "$OUT/stdout.txt"
echo "exit status $status"
