"""The gemm_tc operator (tensor-core GEMM): tiling (params, rules), kernel (CUDA source), template."""
