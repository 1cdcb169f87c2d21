# Sourced by the device scripts whose benchmark runs in phases (tensor_core_gemm.sh, tensor_core_conv.sh, simt_gemm.sh),
# with NAME set to the benchmark's name (benchmarks/$NAME.py): $OUT/$NAME.json gathers every phase's rows,
# $OUT/$NAME.txt all output. Each phase is its own process under its own timeout (GNU timeout signals the
# whole process group: the measuring children go with it), so a phase that fails or runs out of time
# leaves the others' results.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CUPY_TF32=0 TUNERWEB_KERNEL_CACHE=/tmp/tunerweb-kernels
JSON="$OUT/$NAME.json"
TXT="$OUT/$NAME.txt"
BENCH=benchmarks/$NAME.py
: > "$TXT"

phase() {  # phase PHASE TIMEOUT_S BUDGET_S [more args]
    local name=$1 limit=$2 budget=$3
    shift 3
    # COLD_SCREEN=N: the tune times each workload's N fastest configs cold too, and TOP=K then confirms the
    # K fastest warm and the K fastest cold (benchmarks/phases.py's ColdScreen)
    if [ "$name" = tune ] && [ -n "${COLD_SCREEN:-}" ]; then set -- "$@" --cold-screen "$COLD_SCREEN"; fi
    local started=$SECONDS
    timeout -k 5 "$limit" python3 "$BENCH" "$name" --json "$JSON" --budget-s "$budget" "$@" >> "$TXT" 2>&1
    local status=$?
    echo "phase $name exit status $status ($((SECONDS - started)) s)$([ $status = 124 ] && echo ': timed out')" | tee -a "$TXT"
}

# confirmations TIMEOUT_S: the confirm phase, then (CONFIRM2=1) the same again in another fresh process.
# TOP=K: the first confirms each workload's K fastest tuned configs and picks one (benchmarks/phases.py);
# the second starts from a copy of the JSON without the first's rows but with its picks
# (second-confirmation.json, .txt), so the figures quoted were not the ones that chose.
confirmations() {
    local limit=$1 second=$OUT/second-confirmation
    phase confirm "$limit" $(( limit * 2 / 3 )) --top "${TOP:-1}"
    grep -E 'Traceback|Error' "$TXT" | tail -n 5
    if [ "${CONFIRM2:-0}" = 1 ]; then
        python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); d.pop("confirm", None)
json.dump(d, open(sys.argv[2], "w"))' "$JSON" "$second.json"
        timeout -k 5 "$limit" python3 "$BENCH" confirm --json "$second.json" --budget-s $(( limit * 2 / 3 )) \
            > "$second.txt" 2>&1
        echo "second confirmation exit status $?" | tee -a "$TXT"
        grep -E 'Traceback|Error' "$second.txt" | tail -n 5
        python3 "$BENCH" table --json "$second.json" | tail -n 14
    fi
}
