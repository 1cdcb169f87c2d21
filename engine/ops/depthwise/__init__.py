"""The depthwise operator: tiling (params, rules), kernel (CUDA source), template."""
