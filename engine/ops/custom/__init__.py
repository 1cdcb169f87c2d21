"""The custom operator: tiling (params, rules), kernel (CUDA source), template."""
