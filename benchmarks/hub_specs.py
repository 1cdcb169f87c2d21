"""The benchmark hub's two kernels as custom-kernel specs, built at run time from the hub folder
(its T1 files and CUDA sources; the project keeps no copy of them).

The T1 files give the tunable parameters, restrictions, problem sizes and grid divisors
(engine.kernel_tuner.t1_spec). What they leave out or get wrong is filled in from the hub's
Kernel Tuner scripts (`*_milo.py`), here:

* Kernel Tuner compiles a CUDA source as C: the convolution, which declares no `extern "C"`,
  is wrapped in one so its entry point keeps its name.
* The convolution's filter lives in constant memory (`cmem_args={"d_filter": ...}`): the T1
  argument `d_filter` is copied into the `__constant__ d_filter` before each launch.
* The dedispersion T1 file lists every array with size 1 and `shifts` as constant memory (the
  kernel reads it from global memory); its arguments follow the script: the input as bytes
  (nr_channels x (nr_samples + max_shift)), the output nr_dms x nr_samples floats, and
  nr_channels shifts. The script's shifts follow a dispersion curve from 15.8 down to 0;
  ours are uniform in [0, 15.8), the same range, so every read stays inside the input.
* The references are the hub's own naive kernels in the same sources (`convolution_naive`,
  `dedispersion_naive`), with the macros they need defined.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from engine.kernel_tuner import KernelTunerWorkload, t1_workload
from engine.kernel_tuner.t1_spec import custom_spec

KERNELS = ("convolution_milo", "dedispersion_milo")
# The dedispersion's largest shift per unit of dispersion measure that stays within max_shift.
SHIFT_RANGE = [0.0, 15.8]
_INT_DEFINE = re.compile(r"^#define (\w+) (\d+)\s*$", re.MULTILINE)


def _t1(hub: Path, kernel: str) -> dict:
    return json.loads((Path(hub) / "kernels" / f"{kernel}.json").read_text())


def convolution_spec(hub: Path) -> dict:
    source = 'extern "C" {\n' + (Path(hub) / "kernels" / "convolution_milo.cu").read_text() + "\n}\n"
    t1 = _t1(hub, "convolution_milo")
    filter_size = {name: max(values) for name, values in t1_workload(t1).tune_params
                   if name in ("filter_height", "filter_width")}
    naive_macros = "".join(f"#define {k} {v}\n" for k, v in {**filter_size, "read_only": 0}.items())
    reference = {"kernel": {"source": naive_macros + source, "kernel_name": "convolution_naive",
                            "grid": ["ceil_div(problem_size_0, 16)", "ceil_div(problem_size_1, 16)"],
                            "block": [16, 16]}}
    flops = f"2 * problem_size_0 * problem_size_1 * {filter_size['filter_height']} * {filter_size['filter_width']}"
    return custom_spec(t1, source, reference=reference, flops=flops)


def dedispersion_spec(hub: Path) -> dict:
    folder = Path(hub) / "kernels" / "dedisp_milo"
    header = (folder / "dedispersion.h").read_text()
    source = (folder / "dedispersion.cu").read_text().replace('#include "dedispersion.h"', header)
    sizes = {name: int(value) for name, value in _INT_DEFINE.findall(header)}  # nr_dms, nr_samples, ...
    arguments = [
        {"name": "input_samples", "shape": ["nr_channels * (nr_samples + max_shift)"], "dtype": "uint8"},
        {"name": "output_arr", "shape": ["nr_dms * nr_samples"], "dtype": "float32", "output": True},
        {"name": "shifts", "shape": ["nr_channels"], "dtype": "float32", "range": SHIFT_RANGE},
    ]
    naive_macros = "#define block_size_x 32\n#define block_size_y 8\n#define loop_unroll_factor_channel 0\n"
    reference = {"kernel": {"source": naive_macros + source, "kernel_name": "dedispersion_naive",
                            "grid": ["ceil_div(nr_samples, 32)", "ceil_div(nr_dms, 8)"], "block": [32, 8]}}
    return custom_spec(_t1(hub, "dedispersion_milo"), source, reference=reference, arguments=arguments,
                       constants={}, sizes=sizes)


def hub_spec(hub: Path, kernel: str) -> dict:
    return {"convolution_milo": convolution_spec, "dedispersion_milo": dedispersion_spec}[kernel](hub)


def hub_workload(hub: Path, kernel: str) -> KernelTunerWorkload:
    """The kernel's `kernel_tuner` workload, from its T1 file: the one the hub's caches import onto."""
    return t1_workload(_t1(hub, kernel))
