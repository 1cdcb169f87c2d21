#!/usr/bin/env bash
# Tensor-core GEMM (gemm_tensorcore: bf16, fp16, tf32) on the device, in one call of at most 4 minutes (CONFIRM2=1 adds
# up to CONFIRM_S more):
#   run(command="TUNERWEB_COMMIT=<short sha> bash scripts/device/tensor_core_gemm.sh", timeout_s=300)
# No carry: it needs only what the device image has (Python 3.12, CuPy, PyTorch, numpy, cuda-bindings NVRTC).
# Three phases of benchmarks/tensor_core_gemm.py, each in its own process under its own timeout (GNU
# timeout signals the whole process group: the measuring children go with it), each merging its part
# into the JSON, so a phase that fails or runs out of time leaves the others' results:
# 1. check (<= 50 s): a handful of configs per precision on small shapes with tails and a decode shape,
#    against the float64 reference at the precision's tolerance; a failing config is reported, not fatal;
# 2. tune (<= 95 s): 4096^3 and 16x4096x4096 per precision (tf32 last), then bf16 64x4096x4096,
#    128x4096x4096, 16x4096x14336 and 8192^3, a fixed list of 25-70 configs each (split K, deep rings, L2 hints and
#    stream-K on decode shapes);
# 3. confirm (<= 85 s): each best re-timed in a fresh process, interleaved with cuBLAS of the same
#    precision (TF32 allowed for the tf32 rows only) and the default config, warm and cold, 5 rounds (TOP=K: the
#    pick among each workload's K fastest, benchmarks/phases.py; CONFIRM2=1: again in another fresh process, its picks).
# ONLY=wgmma (or mma_sync) keeps one mainloop's configs in check and tune (check --only wgmma also
# runs four 4096^3 wgmma configs, cp_async, tma, tma in 2-block clusters and those persistent, and
# prints each config's relative L2 error).
# SQUARE=1 tunes only bf16 and fp16 at 4096^3 and 8192^3 (issue 18's goal of 0.95 of cuBLAS);
# DECODE=1 only bf16 16x, 64x, 128x4096x4096 and 16x, 64x, 128x4096x14336 (issue 18's decode steps); SHAPES=<tags, comma-separated> tunes only those.
# TF32=1 checks and tunes only tf32, at 4096^3 and 8192^3 (issue 18's goal of 0.90), wgmma's configs beside mma_sync's.
# C16=1 gives the bf16 and fp16 workloads of check and tune a C in their own precision (cuBLAS writes the same).
# GPU_TESTS=1 first runs pytest -m gpu tests/test_gpu_gemm_tensorcore.py (up to GPU_TESTS_S=90 s more; then timeout_s=400;
# GPU_TESTS_K, a pytest -k expression, picks some of them).
# NCU_TILING="128,256,64,16,16,1,4,8,wgmma,2,1,1,tma,1,1 ..." (knob values in the space's order, one or
# more tilings) last profiles those bf16 4096^3 kernels and cuBLAS's under Nsight Compute
# (--clock-control none, up to NCU_S=90 s more)
# into $OUT/ncu.txt: speed of light, compute and memory workloads, warp stalls, occupancy.
# Writes to $OUT: tensor_core_gemm.txt (all output), tensor_core_gemm.json (every phase's rows),
# tensor_core_gemm.log (every tuning record, AutoTVM format); prints the confirmed table last.
NAME=tensor_core_gemm source scripts/device/phases.sh

if [ "${GPU_TESTS:-0}" = 1 ]; then  # optional (adds up to 90 s): the GPU-marked tests of the family
    timeout -k 5 "${GPU_TESTS_S:-90}" python3 -m pytest -q -m gpu -p no:cacheprovider ${GPU_TESTS_K:+-k "$GPU_TESTS_K"} \
        tests/test_gpu_gemm_tensorcore.py >> "$TXT" 2>&1
    echo "gpu tests exit status $?" | tee -a "$TXT"
fi
ONLY_ARGS=${ONLY:+--only $ONLY}
SQUARE_ARGS=$([ "${SQUARE:-0}" = 1 ] && echo --square)
DECODE_ARGS=$([ "${DECODE:-0}" = 1 ] && echo --decode)
TF32_ARGS=$([ "${TF32:-0}" = 1 ] && echo --tf32)
C16_ARGS=$([ "${C16:-0}" = 1 ] && echo --c16)
SHAPES_ARGS=${SHAPES:+--shapes $SHAPES}
phase check ${CHECK_S:=50} $(( CHECK_S * 3 / 5 )) $ONLY_ARGS $TF32_ARGS $C16_ARGS
grep -E '^check' "$TXT" | grep -E 'FAIL|configs correct' | tail -n 20
phase tune ${TUNE_S:=95} $(( TUNE_S * 2 / 3 )) --log "$OUT/tensor_core_gemm.log" $ONLY_ARGS $SQUARE_ARGS $DECODE_ARGS $TF32_ARGS $C16_ARGS $SHAPES_ARGS
grep -E '^tune' "$TXT" | tail -n 8
confirmations ${CONFIRM_S:=85}
if [ -n "${NCU_TILING:-}" ]; then
    timeout -k 5 "${NCU_S:-90}" ncu --clock-control none -k 'regex:gemm|nvjet|cutlass|sm90' \
        --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
        --section WarpStateStats --section Occupancy --section LaunchStats \
        python3 scripts/device/gemm_ncu.py --size "${NCU_SIZE:-4096x4096x4096}" --precision "${NCU_PRECISION:-bfloat16}" $C16_ARGS \
        $(for tiling in $NCU_TILING; do echo --tiling "$tiling"; done) --launches 1 > "$OUT/ncu.txt" 2>&1
    echo "ncu exit status $?" | tee -a "$TXT"
    grep -E 'gemm_tc_kernel|nvjet|cutlass|sm90|Duration|Compute \(SM\) Throughput|Memory Throughput|error' "$OUT/ncu.txt" | head -n 30
fi
python3 "$BENCH" table --json "$JSON"
