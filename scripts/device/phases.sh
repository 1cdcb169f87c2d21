# Sourced by the device scripts whose benchmark runs in phases (tensor_core_gemm.sh, tensor_core_conv.sh),
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
    local started=$SECONDS
    timeout -k 5 "$limit" python3 "$BENCH" "$name" --json "$JSON" --budget-s "$budget" "$@" >> "$TXT" 2>&1
    local status=$?
    echo "phase $name exit status $status ($((SECONDS - started)) s)$([ $status = 124 ] && echo ': timed out')" | tee -a "$TXT"
}
