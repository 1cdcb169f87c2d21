"""The gemm operator: tiling (params, rules), kernel (CUDA source), template."""
