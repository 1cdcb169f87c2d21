"""TMA tensor maps (engine.ops.base.TensorMap) encoded for a kernel's device arrays at load time.

The runner passes kernels arrays only, so a kernel that copies with the tensor memory accelerator
reads its CUtensorMaps from `__constant__` symbols (PTX takes a tensor map's generic address in
param, const or global space); they are filled here, once per loaded module, from the task's
arrays: the same arrays every launch of that module gets (the runner's and the confirmation's).
"""
from __future__ import annotations

from engine.ops.base import Im2colTensorMap, KernelSource, TensorMap

TENSOR_MAP_BYTES = 128  # sizeof(CUtensorMap)


def encode(spec: TensorMap | Im2colTensorMap, address: int) -> bytes:
    """The 128 bytes of `spec`'s CUtensorMap for its array at device `address`: 128B swizzle,
    L2 promotion by 256 bytes, zeros outside the array. Dimensions go innermost first."""
    from cuda.bindings import driver

    element = {2: driver.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_UINT16,
               4: driver.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_UINT32}[spec.element_bytes]
    wide, narrow = driver.cuuint64_t, driver.cuuint32_t  # the bindings take these, not ints, in lists
    modes = (driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
             driver.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B,
             driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
             driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
    if isinstance(spec, Im2colTensorMap):
        n, h, w, c = spec.shape
        pitches = [c, c * w, c * w * h]  # a pixel's, an image row's, an image's (elements)
        err, tensor_map = driver.cuTensorMapEncodeIm2col(
            element, 4, address, [wide(d) for d in (c, w, h, n)], [wide(p * spec.element_bytes) for p in pitches],
            [spec.lower[1], spec.lower[0]], [spec.upper[1], spec.upper[0]], spec.channels, spec.pixels,
            [narrow(1), narrow(spec.strides[1]), narrow(spec.strides[0]), narrow(1)], *modes)
    else:
        err, tensor_map = driver.cuTensorMapEncodeTiled(
            element, 2, address,
            [wide(spec.columns), wide(spec.rows)],
            [wide(spec.columns * spec.element_bytes)],  # the row pitch (bytes; the innermost stride is the element)
            [narrow(spec.box_columns), narrow(spec.box_rows)],
            [narrow(1), narrow(1)], *modes)
    if err != driver.CUresult.CUDA_SUCCESS:
        raise ValueError(f"the driver refused the tensor map {spec} ({err.name})")
    return b"".join(int(word).to_bytes(8, "little") for word in tensor_map.opaque)


def mapped_shapes(spec: TensorMap | Im2colTensorMap, array) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The shape `spec` maps and `array`'s read the same way: an NHWC tensor, or a matrix whose
    row is the array's trailing axes (the KRSC weights are a K x RSC matrix)."""
    if isinstance(spec, Im2colTensorMap):
        return spec.shape, array.shape
    return (spec.rows, spec.columns), (array.shape[0], array.size // max(array.shape[0], 1))


def fill_tensor_maps(module, source: KernelSource, arrays) -> None:
    """Encode each of `source.tensor_maps` for its CuPy array and copy it into the module's symbol.
    A pageable host-to-device copy may return before its bytes land, and the kernel runs on
    another stream: the device is synchronised before anything launches."""
    if not source.tensor_maps:
        return
    import ctypes

    import cupy

    buffers = []  # alive until the copies landed
    for spec in source.tensor_maps:
        array = arrays[spec.argument]
        # A map is its array's address, shape and pitches: a view of another layout would be read wrong.
        shape, as_mapped = mapped_shapes(spec, array)
        if as_mapped != shape or not array.flags.c_contiguous or array.itemsize != spec.element_bytes:
            raise ValueError(f"{spec.symbol} wants a C-contiguous {'x'.join(map(str, shape))} array of "
                             f"{spec.element_bytes}-byte elements, not {array.shape} {array.dtype}"
                             f"{'' if array.flags.c_contiguous else ', strided'}")
        buffers.append(ctypes.create_string_buffer(encode(spec, array.data.ptr), TENSOR_MAP_BYTES))
        module.get_global(spec.symbol).copy_from_host(ctypes.c_void_p(ctypes.addressof(buffers[-1])),
                                                      TENSOR_MAP_BYTES)
    cupy.cuda.runtime.deviceSynchronize()
