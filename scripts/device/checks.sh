#!/usr/bin/env bash
# One device call for a session's GPU work, each step under its own time limit, so a step
# that hangs or fails costs only its own slot and the rest still runs:
#   run(command="TUNERWEB_COMMIT=<clean short sha> bash scripts/device/checks.sh",
#       carry=[".whl", ".debs"], timeout_s=560)
# 1. the GPU suite (pytest -m gpu over the suites that need no Django) -> pytest-gpu.txt
# 2. scripts/device/confirm_probe.py: what slows a warm replay -> probe.txt;
#    scripts/device/vendor_probe.py (step vendorprobe): what the vendor libraries do to a 2 us kernel -> vendor-probe.txt
# 3. benchmarks/verify_bests.py over every committed log's bests, twice, each in its own
#    measuring process (A: the leaderboard's confirmations, B: re-measures them), and
#    benchmarks/confirmed_tables.py comparing B with A -> confirm-a.json, confirm-b.json, confirmed-tables.md
#    Step verifysubset: the workloads of VERIFY_ONLY (comma-separated names) alone in a fresh process (C),
#    held against a committed run A (VERIFY_AGAINST) -> confirm-c.json, confirmed-subset.md
#    Step vendorruns: VENDOR_RUNS (3) more fresh processes over the workloads with a vendor baseline, for
#    benchmarks/confirmed_tables.py --vendor-runs (cuDNN's pick differs between processes) -> confirm-v<i>.json
# 4. scripts/device/tensor_core_gemm.sh -> tensor-core.tar.gz
# 5. scripts/device/network_job.sh (ResNet-18 as one network job on this host) -> network/
# STEPS (default "suite probe verify tensor network") picks steps; *_S variables set the limits.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
source scripts/device/offline_deps.sh
export PYTHONUNBUFFERED=1 CUPY_TF32=0 TUNERWEB_KERNEL_CACHE=/tmp/tunerweb-kernels
shopt -s globstar nullglob
STEPS=${STEPS:-suite probe verify tensor network}
LOGS=(docs/benchmarks/conv2d-h200-logs/*.log.gz docs/benchmarks/operators-h200-logs/**/*.log.gz)
GPU_SUITES=(tests/test_gpu_measurer.py tests/test_gpu_operators.py tests/test_gpu_cli.py
            tests/test_measurer_contract.py tests/test_gpu_confirm.py tests/test_gpu_gemm_tensorcore.py
            tests/test_gpu_conv2d_tensorcore.py)
started=$SECONDS
step() { echo "== $1 at +$(( SECONDS - started )) s"; }
has() { [[ " $STEPS " == *" $1 "* ]]; }

if has suite; then
    step suite
    existing=(); for f in "${GPU_SUITES[@]}"; do [ -f "$f" ] && existing+=("$f"); done
    { echo "commit ${TUNERWEB_COMMIT:-unknown}, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
      echo "command: python3 -m pytest -q -m gpu ${existing[*]}"
      timeout ${SUITE_S:-70} python3 -m pytest -q -m gpu -p no:cacheprovider "${existing[@]}" 2>&1; echo "exit status $?"; } \
        > "$OUT/pytest-gpu.txt"
    tail -n 3 "$OUT/pytest-gpu.txt"
fi
if has probe; then
    step probe
    timeout ${PROBE_S:-30} python3 scripts/device/confirm_probe.py > "$OUT/probe.txt" 2>&1
    echo "probe exit status $?"; grep -E '^[A-Z][^ ]* +primes' "$OUT/probe.txt" | cut -c1-400
fi
if has vendorprobe; then
    step vendorprobe
    timeout ${VENDOR_PROBE_S:-150} python3 scripts/device/vendor_probe.py --json "$OUT/vendor-probe.json" > "$OUT/vendor-probe.txt" 2>&1
    echo "vendor probe exit status $?"; grep -E 'warm/cold' "$OUT/vendor-probe.txt" | cut -c1-400
fi
if has verify; then
    step verify
    for run in a b; do
        limit=$([ $run = a ] && echo ${RUN_A_S:-90} || echo ${RUN_B_S:-60})
        TUNERWEB_COMMIT=${TUNERWEB_COMMIT:-} timeout $limit python3 benchmarks/verify_bests.py "${LOGS[@]}" --rounds 5 \
            --budget-s $(( limit - 20 )) --json "$OUT/confirm-$run.json" > /tmp/confirm-$run.txt 2>&1
        echo "run $run exit status $? ($(grep -c '^{' /tmp/confirm-$run.txt) workloads measured)"
    done
    python3 benchmarks/confirmed_tables.py "$OUT/confirm-a.json" --compare "$OUT/confirm-b.json" > "$OUT/confirmed-tables.md" 2>&1
    echo "tables exit status $?"; grep -E '^Largest deviation' "$OUT/confirmed-tables.md"
fi
if has verifysubset; then
    step verifysubset
    TUNERWEB_COMMIT=${TUNERWEB_COMMIT:-} timeout ${RUN_C_S:-90} python3 benchmarks/verify_bests.py "${LOGS[@]}" --rounds 5 \
        --only "$VERIFY_ONLY" --budget-s $(( ${RUN_C_S:-90} - 20 )) --json "$OUT/confirm-c.json" > /tmp/confirm-c.txt 2>&1
    echo "run c exit status $? ($(grep -c '^{' /tmp/confirm-c.txt) workloads measured)"
    python3 benchmarks/confirmed_tables.py "$VERIFY_AGAINST" --compare "$OUT/confirm-c.json" > "$OUT/confirmed-subset.md" 2>&1
    echo "tables exit status $?"; grep -E '^Largest deviation' "$OUT/confirmed-subset.md"
fi
if has vendorruns; then
    step vendorruns
    vendor_workloads=$(echo C{1..12} D{1..9} G{1..5} | tr ' ' ,)
    for i in $(seq 1 ${VENDOR_RUNS:-3}); do
        TUNERWEB_COMMIT=${TUNERWEB_COMMIT:-} timeout ${RUN_V_S:-60} python3 benchmarks/verify_bests.py "${LOGS[@]}" --rounds 5 \
            --only "$vendor_workloads" --budget-s $(( ${RUN_V_S:-60} - 15 )) --json "$OUT/confirm-v$i.json" > /tmp/confirm-v$i.txt 2>&1
        echo "vendor run $i exit status $? ($(grep -c '^{' /tmp/confirm-v$i.txt) workloads measured)"
    done
fi
if has tensor && [ -f scripts/device/tensor_core_gemm.sh ]; then
    step tensor
    mkdir -p /tmp/tc && OUT=/tmp/tc CHECK_S=${CHECK_S:-40} TUNE_S=${TUNE_S:-50} CONFIRM_S=${CONFIRM_S:-45} timeout ${TENSOR_S:-140} bash scripts/device/tensor_core_gemm.sh > /tmp/tc/console.txt 2>&1
    echo "tensor-core exit status $?"; tail -n 25 /tmp/tc/console.txt
    tar -czf "$OUT/tensor-core.tar.gz" -C /tmp tc
fi
if has network; then
    step network
    # Its two files (summary.txt, best.log) go straight to $OUT/network: a step cut short keeps them.
    OUT=$OUT/network LIMIT=${NETWORK_LIMIT:-115} timeout ${NETWORK_S:-135} bash scripts/device/network_job.sh > /tmp/network.txt 2>&1
    echo "network exit status $?"; tail -n 20 /tmp/network.txt
fi
step done
