"""The conv2d operator: tiling (params, rules), kernel (CUDA source), template."""
