#!/usr/bin/env bash
# Configs per second with the default tuner on the H200, in one call of about 5 minutes:
#   run(command="bash scripts/device/configs_per_second.sh", carry=[".whl"], timeout_s=420)
# .whl/ holds xgboost-cpu (as for scripts/device/operators.sh). Writes to $OUT: one AutoTVM log
# per layer, configs_per_second.json and .md, stdout.txt; prints the table last.
set -uo pipefail
source "$(dirname "$0")/env.sh"
timeout 400 python3 scripts/device/configs_per_second.py --out "$OUT" --seconds ${SECONDS_PER_LAYER:-16} > "$OUT/stdout.txt" 2>&1
status=$?
tail -n 22 "$OUT/stdout.txt"
echo "exit status $status"
