#!/usr/bin/env bash
# The fp32 SIMT GEMM (gemm: its TMA loaders beside the threads' loaders) on the device, one call of at most 7 minutes:
#   run(command="TUNERWEB_COMMIT=<short sha> bash scripts/device/simt_gemm.sh", timeout_s=450)
# No carry: it needs only what the device image has (Python 3.12, CuPy, PyTorch, numpy, cuda-bindings NVRTC, ncu).
# The pattern of scripts/device/tensor_core_gemm.sh: phases of benchmarks/simt_gemm.py, each in its own process
# under its own timeout, each merging its part into the JSON:
# 0. GPU_TESTS=1 (the default): the TMA loaders' GPU tests, multicast's too (tests/test_gpu_operators.py, <= GPU_TESTS_S,
#    60 s);
# 1. check (<= CHECK_S, 40 s): the TMA loaders' tiles (benchmarks/simt_gemm.py's TMA_TILES) on three small shapes
#    with tails, against the float64 reference;
# 2. tune (<= TUNE_S, 150 s): G1 4096³, G2 8192³, G3 1024³, G5 128×3136×576, each the TMA tiles and the threads'
#    loaders' confirmed bests (SHAPES=G1,G2 tunes only those);
#    MULTICAST=1: check and tune take benchmarks/simt_gemm.py's MULTICAST_TILES instead, each at multicast 1, 2 and 4
#    (A's box shared by a cluster of tile columns), e.g. MULTICAST=1 SHAPES=G1,G5 for 4096³ and 128×3136×576;
# 3. confirm (<= CONFIRM_S, 120 s): each best re-timed in a fresh process, interleaved with cuBLAS (TF32 off) and the
#    default config, warm and cold, 5 rounds (TOP=K: the pick among each workload's K fastest, benchmarks/phases.py);
#    CONFIRM2=1 then does it again in another fresh process, from a copy of the JSON without the first's rows
#    (second-confirmation.json, .txt);
# 4. NCU_TILING="<knob values in the space's order> ..." (one or more tilings): Nsight Compute of those kernels and
#    cuBLAS's at NCU_SIZE (4096x4096x4096) into $OUT/ncu.txt (up to NCU_S, 120 s): speed of light, compute and
#    memory workloads, instruction statistics, warp states and each stall reason's warps per issue, occupancy.
# 5. SUITE=1: the whole GPU suite (scripts/device/checks.sh's suite step, up to SUITE_S, 300 s) into $OUT/pytest-gpu.txt;
#    it needs tunerweb's runtime dependencies: carry=[".whl", ".debs"] (scripts/device/offline_deps.sh).
# Writes to $OUT: simt_gemm.txt (all output), simt_gemm.json (every phase's rows), simt_gemm.log (every tuning
# record, AutoTVM format); prints the confirmed table last.
NAME=simt_gemm source scripts/device/phases.sh

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee -a "$TXT"
python3 -c 'import torch, cupy; print("torch", torch.__version__, "cupy", cupy.__version__)' | tee -a "$TXT"
echo "commit ${TUNERWEB_COMMIT:-unknown}" | tee -a "$TXT"
if [ "${GPU_TESTS:-1}" = 1 ]; then
    timeout -k 5 "${GPU_TESTS_S:-60}" python3 -m pytest -q -m gpu -p no:cacheprovider \
        tests/test_gpu_operators.py::test_tma_loader_configs_compute_the_product \
        tests/test_gpu_operators.py::test_tma_multicast_configs_compute_the_product >> "$TXT" 2>&1
    echo "gpu tests exit status $?" | tee -a "$TXT"
    grep -E 'passed|failed|FAILED' "$TXT" | tail -n 6
fi
MULTICAST_ARG=$([ "${MULTICAST:-0}" = 1 ] && echo --multicast)
phase check ${CHECK_S:=40} $(( CHECK_S * 3 / 5 )) $MULTICAST_ARG
grep -E '^check' "$TXT" | grep -E 'FAIL|configs correct' | tail -n 12
phase tune ${TUNE_S:=150} $(( TUNE_S * 3 / 4 )) --log "$OUT/simt_gemm.log" ${SHAPES:+--shapes $SHAPES} $MULTICAST_ARG
grep -E '^tune' "$TXT" | tail -n 6
confirmations ${CONFIRM_S:=120}
if [ -n "${NCU_TILING:-}" ]; then
    timeout -k 5 "${NCU_S:-120}" ncu --clock-control none -k 'regex:gemm|sgemm|cutlass|sm90|xmma' \
        --section SpeedOfLight --section ComputeWorkloadAnalysis --section InstructionStats \
        --section WarpStateStats --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis \
        --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio' \
        python3 scripts/device/gemm_ncu.py --size "${NCU_SIZE:-4096x4096x4096}" \
        $(for tiling in $NCU_TILING; do echo --tiling "$tiling"; done) --launches 1 > "$OUT/ncu.txt" 2>&1
    echo "ncu exit status $?" | tee -a "$TXT"
    grep -E 'gemm_kernel|sgemm|cutlass|sm90|xmma|Duration|Issue Slots Busy|Compute \(SM\) Throughput|error' "$OUT/ncu.txt" | head -n 30
fi
if [ "${SUITE:-0}" = 1 ]; then  # checks.sh's suite step: its list of GPU suites, into $OUT/pytest-gpu.txt
    STEPS=suite SUITE_S=${SUITE_S:-300} bash scripts/device/checks.sh
fi
python3 "$BENCH" table --json "$JSON"
