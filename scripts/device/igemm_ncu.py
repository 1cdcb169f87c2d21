"""The fp32 convs' logged bests (implicit GEMM or Winograd, fused or unfused) and cuDNN on the same layers, one process: a target for
Nsight Compute. Compiles, cuDNN's exhaustive search and a warm-up happen first; one launch of ours and
one cuDNN call (however many kernels its algorithm launches) sit between cudaProfilerStart and Stop.

    ncu --profile-from-start off --clock-control none --set full --export $OUT/igemm \\
        python3 scripts/device/igemm_ncu.py LOG... --layers IG-28-128-128-k3-b32,IG-56-64-64-k3-b32

Without ncu it prints each layer's config, and ours and cuDNN's event-timed µs (a probe, not a
confirmed figure).
"""
from __future__ import annotations

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(HERE, "..", "..", "benchmarks"))
os.environ.setdefault("CUPY_TF32", "0")

import numpy as np  # noqa: E402

import engine  # noqa: E402
from engine.gpu.baselines import fp32_torch  # noqa: E402
from engine.gpu.device import query_device  # noqa: E402
from engine.gpu.runner import relative_l2_error  # noqa: E402
from gemm_ncu import event_us  # noqa: E402  (this folder's GEMM profiling target)
from gemm_probe import compiled_launch  # noqa: E402
from verify_bests import bests_of  # noqa: E402  (the confirmations' pick of each workload's best)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("logs", nargs="+")
    parser.add_argument("--layers", required=True, help="comma-separated conv presets (IG-..., WG-..., WN-...)")
    options = parser.parse_args()
    import cupy as cp
    import torch.nn.functional as F

    torch = fp32_torch()
    bests = dict(bests_of(options.logs, query_device().model, 1))
    profiled = []
    for name in options.layers.split(","):
        if name not in bests:
            print(f"{name}: no record in the logs")
            continue
        record = bests[name][0]
        task = engine.create_task(record.task_name, record.args)
        config = task.config_space.get(record.config_index)
        source = task.template.kernel(task.params, config)
        inputs = task.template.make_inputs(task.params, np.random.default_rng(0))
        expected = task.template.reference(task.params, inputs)
        arrays = [cp.asarray(x) for x in inputs]
        _, launch = compiled_launch(cp, source, arrays, "sm_{}{}".format(*cp.cuda.Device().compute_capability))
        launch()
        error = relative_l2_error(cp.asnumpy(arrays[source.output_index]), expected)
        data, weight = (torch.from_numpy(x).cuda() for x in inputs[:2])
        top, left = task.params.padding[:2]

        def cudnn(data=data, weight=weight, stride=task.params.stride, padding=(top, left)):
            return F.conv2d(data, weight, stride=stride, padding=padding)

        cudnn()  # the exhaustive search
        torch.cuda.synchronize()
        print(f"{name}: config {record.config_index} {config.values()}\n  ours {event_us(cp, launch, 20):.1f} µs"
              f" (relative error {error:.1e}), cuDNN {event_us(cp, cudnn, 20):.1f} µs", flush=True)
        profiled.append((launch, cudnn))
    cp.cuda.runtime.deviceSynchronize()
    cp.cuda.profiler.start()
    for launch, cudnn in profiled:
        launch()
        cudnn()
    cp.cuda.runtime.deviceSynchronize()
    cp.cuda.profiler.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
