#!/usr/bin/env bash
# Issue 18's tensor-core rows still short of their goals, in one device call of at most 9.5 minutes:
#   run(command="TUNERWEB_COMMIT=<clean short sha> bash scripts/device/short_rows.sh", carry=[".whl", ".debs"],
#       timeout_s=590)
# 1. step 3, the two M = 64 decode steps (bf16, bf16 C) by scripts/device/tensor_core_gemm.sh: their GPU tests
#    (-k swap_ab), the check, the tune (COLD_SCREEN 10), two confirmations (TOP 3), under DECODE_S (270 s);
# 2. step 4, the 7² 512→512 3×3 and 14² 1024→256 1×1 layers in fp16 and bf16 by scripts/device/tensor_core_conv.sh:
#    the conv's GPU tests, then the same phases, under CONV_S (270 s).
# Each part's files come back as one archive ($OUT/decode.tar.gz, $OUT/conv.tar.gz: the device returns 8 files at
# most) and its confirmed table is printed last. Limits: CHECK_S (25), DECODE_TESTS_S (60), DECODE_TUNE_S (75),
# DECODE_CONFIRM_S (50), CONV_TESTS_S (100), CONV_TUNE_S (50), CONV_CONFIRM_S (45), each confirmation twice;
# SHAPES and LAYERS pick other decode shapes and conv presets.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export TUNERWEB_COMMIT=${TUNERWEB_COMMIT:-unknown}

part() {  # part NAME LIMIT_S SCRIPT: the script's phases into /tmp/parts/NAME, archived once it ends or times out
    local name=$1 limit=$2 script=$3
    echo "== $name (up to $limit s)"
    rm -rf "/tmp/parts/$name" && mkdir -p "/tmp/parts/$name"  # a warm machine keeps the last call's files
    OUT=/tmp/parts/$name timeout -k 5 "$limit" bash "$script" > "/tmp/parts-$name.txt" 2>&1
    echo "$name exit status $?"
    cp "/tmp/parts-$name.txt" "/tmp/parts/$name/console.txt"
    tar czf "$OUT/$name.tar.gz" -C /tmp/parts "$name"
    grep -E 'passed|failed|configs correct|^phase ' "/tmp/parts-$name.txt" | tail -n 12
    sed -n '/^| /p' "/tmp/parts-$name.txt" | tail -n 8
}

ONLY=wgmma DECODE=1 C16=1 SHAPES=${SHAPES:-64x4096x4096,64x4096x14336} GPU_TESTS=1 GPU_TESTS_K="swap_ab" \
    GPU_TESTS_S=${DECODE_TESTS_S:-60} CHECK_S=${CHECK_S:-25} TUNE_S=${DECODE_TUNE_S:-75} COLD_SCREEN=10 \
    CONFIRM_S=${DECODE_CONFIRM_S:-50} TOP=3 CONFIRM2=1 part decode "${DECODE_S:-270}" scripts/device/tensor_core_gemm.sh
GPU_TESTS=1 GPU_TESTS_S=${CONV_TESTS_S:-100} CHECK_S=${CHECK_S:-25} TUNE_S=${CONV_TUNE_S:-50} COLD_SCREEN=10 \
    CONFIRM_S=${CONV_CONFIRM_S:-45} TOP=3 CONFIRM2=1 \
    LAYERS=${LAYERS:-TCC-7-512-512-k3-f16,TCC-14-1024-256-k1-f16,TCC-7-512-512-k3-bf16,TCC-14-1024-256-k1-bf16} \
    part conv "${CONV_S:-270}" scripts/device/tensor_core_conv.sh
