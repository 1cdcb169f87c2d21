#!/usr/bin/env bash
# Tensor-core implicit-GEMM conv (conv2d_nhwc_tensorcore: fp16, bf16, NHWC) on the device, one call of at most 4.5 minutes
# (CONFIRM2=1 adds up to CONFIRM_S more):
#   run(command="TUNERWEB_COMMIT=<short sha> bash scripts/device/tensor_core_conv.sh", timeout_s=270)
# No carry: it needs only what the device image has (Python 3.12, CuPy, PyTorch with cuDNN, numpy, cuda-bindings NVRTC),
# but for the GPU tests' tuning test (engine.tuners imports xgboost): carry .whl (scripts/device/wheels.txt) for it.
# The pattern of scripts/device/tensor_core_gemm.sh: phases of benchmarks/tensor_core_conv.py, each in its own
# process under its own timeout (GNU timeout signals the whole process group: the measuring children go with it),
# each merging its part into the JSON, so a phase that fails or runs out of time leaves the others' results:
# 0. GPU_TESTS=1 (the default): pytest -m gpu tests/test_gpu_conv2d_tensorcore.py (<= GPU_TESTS_S, 45 s; GPU_TESTS_K, a
#    pytest -k expression, picks some of them);
# 1. check (<= CHECK_S, 35 s): the six ResNet-50 batch-32 layers in fp16 and bf16, 17-22 configs each, against the
#    float64 reference at the precision's tolerance; a failing config is reported, not fatal;
# 2. tune (<= TUNE_S, 100 s): per layer, fp16 then bf16, a fixed list of 146-185 configs (benchmarks/tensor_core_conv.py's
#    TUNE_PICKS valid on the layer: hand-picked mma.sync tiles, wgmma tiles of either loader, stream-K, the transposed
#    product, clusters sharing the pixels and of 4 and 8 blocks; a seeded random sample);
# 3. confirm (<= CONFIRM_S, 70 s): each best re-timed in a fresh process, interleaved with cuDNN of the same
#    precision on channels-last tensors (cudnn.benchmark, exhaustive) and the default config, warm and cold, 5 rounds
#    (TOP=K: the pick among each layer's K fastest, benchmarks/phases.py; CONFIRM2=1: again in another fresh process).
# LAYERS=<presets, comma-separated> (TCC-7-512-512-k3-f16, ...) checks and tunes only those layers.
# Writes to $OUT: tensor_core_conv.txt (all output), tensor_core_conv.json (every phase's rows),
# tensor_core_conv.log (every tuning record, AutoTVM format); prints the confirmed table last.
NAME=tensor_core_conv source scripts/device/phases.sh
source scripts/device/offline_deps.sh  # the carried wheels (the GPU tests tune: xgboost)

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee -a "$TXT"
python3 -c 'import torch, cupy; print("torch", torch.__version__, "cudnn", torch.backends.cudnn.version(), "cupy", cupy.__version__)' | tee -a "$TXT"
if [ "${GPU_TESTS:-1}" = 1 ]; then
    timeout -k 5 "${GPU_TESTS_S:-45}" python3 -m pytest -q -m gpu -p no:cacheprovider ${GPU_TESTS_K:+-k "$GPU_TESTS_K"} \
        tests/test_gpu_conv2d_tensorcore.py >> "$TXT" 2>&1
    echo "gpu tests exit status $?" | tee -a "$TXT"
    grep -E 'passed|failed|FAILED' "$TXT" | tail -n 6
fi
phase check ${CHECK_S:=35} $(( CHECK_S * 3 / 5 )) ${LAYERS:+--layers $LAYERS}
grep -E '^check' "$TXT" | grep -E 'FAIL|configs correct' | tail -n 12
phase tune ${TUNE_S:=100} $(( TUNE_S * 3 / 4 )) --log "$OUT/tensor_core_conv.log" ${LAYERS:+--layers $LAYERS}
grep -E '^tune' "$TXT" | tail -n 13
confirmations ${CONFIRM_S:=70}
python3 "$BENCH" table --json "$JSON"
