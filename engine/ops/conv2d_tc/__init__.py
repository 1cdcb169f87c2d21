"""Implicit-GEMM conv2d on tensor cores (fp16, bf16; NHWC)."""
