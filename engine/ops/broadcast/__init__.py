"""The broadcast operator: tiling (params, rules), kernel (CUDA source), template."""
