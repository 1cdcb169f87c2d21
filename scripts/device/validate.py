"""First device call: does the GPU pipeline work end to end, and how fast is it?

Default config and cuDNN on ResNet-18 C1-C12, random configs of both conv2d
templates on C12 (errors by kind, configs/s), a hanging and a faulting kernel
(each must cost one record, the runner restarting). Writes $OUT/validate.json.
"""
from __future__ import annotations

import collections
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.getcwd())

import engine  # noqa: E402
from engine.gpu.baselines import cudnn_conv2d  # noqa: E402
from engine.gpu.measurer import GpuMeasurer  # noqa: E402
from engine.ops.base import KernelSource  # noqa: E402
from engine.workloads import PRESETS  # noqa: E402

OUT = os.environ.get("OUT", "/tmp/out")
RESNET = [f"C{i}" for i in range(1, 13)]
HANG = 'extern "C" __global__ void hang(const float* d, const float* w, float* out)' \
       ' { volatile float* o = out; while (o[0] != 12345.0f) { } }'
FAULT = 'extern "C" __global__ void fault(const float* d, const float* w, float* out)' \
        ' { float* p = (float*)0x10; p[threadIdx.x] = 1.0f; }'


def errors(results):
    return dict(collections.Counter(int(r.error_no) for r in results))


def main() -> None:
    report: dict = {}
    t0 = time.time()
    with GpuMeasurer(build_workers=os.cpu_count(), run_timeout=4.0) as m:
        report["device"] = m.device.to_dict()
        print("device", m.device, f"started in {time.time() - t0:.1f}s", flush=True)
        rows = []
        for name in RESNET:
            p = PRESETS[name]
            task = engine.create_task(p.task_name, p.args)
            t = time.time()
            default = m.measure(task, [task.default_config()])[0]
            cudnn = cudnn_conv2d(task, settings=m.timing)
            rows.append({"layer": name, "default_us": default.mean_cost and default.mean_cost * 1e6,
                         "default_err": int(default.error_no), "default_msg": default.error_msg[:300],
                         "cudnn_us": cudnn.mean_cost and cudnn.mean_cost * 1e6, "cudnn_err": int(cudnn.error_no),
                         "seconds": time.time() - t})
            print(rows[-1], flush=True)
        report["layers"] = rows

        p = PRESETS["C12"]
        task = engine.create_task(p.task_name, p.args)
        rng = np.random.default_rng(7)
        for size in (128, 32):
            configs = task.config_space.sample(rng, size)
            t = time.time()
            results = m.measure(task, configs)
            wall = time.time() - t
            ok = [r for r in results if r.ok]
            best = min(ok, key=lambda r: r.mean_cost) if ok else None
            report[f"c12_random_{size}"] = {
                "wall_s": wall, "configs_per_s": size / wall, "errors": errors(results),
                "best_us": best.mean_cost * 1e6 if best else None,
                "messages": sorted({r.error_msg[:200] for r in results if not r.ok})[:10],
                "spread": float(np.median([(max(r.costs) - min(r.costs)) / np.median(r.costs) for r in ok])) if ok else None,
            }
            print(f"C12 random {size}", report[f"c12_random_{size}"], flush=True)

        nb = engine.create_task("conv2d_no_batching", [1, 7, 7, 512, 512, 3, 3, [1, 1], [1, 1]])
        configs = nb.config_space.sample(rng, 32)
        t = time.time()
        results = m.measure(nb, configs)
        ok = [r for r in results if r.ok]
        report["no_batching_32"] = {"wall_s": time.time() - t, "errors": errors(results),
                                    "best_us": min(r.mean_cost for r in ok) * 1e6 if ok else None,
                                    "messages": sorted({r.error_msg[:200] for r in results if not r.ok})[:10]}
        print("no_batching", report["no_batching_32"], flush=True)

        good = task.template.kernel(task.params, task.default_config())
        hang = KernelSource("hang", HANG, (1, 1, 1), (1, 1, 1), 0, ("data", "kernel", "output"), 2)
        fault = KernelSource("fault", FAULT, (1, 1, 1), (32, 1, 1), 0, ("data", "kernel", "output"), 2)
        t = time.time()
        results = m.measure_sources(task, [good, hang, good, fault, good])
        report["faults"] = {"errors": [int(r.error_no) for r in results], "messages": [r.error_msg[:200] for r in results],
                            "restarts": m.runner_restarts, "wall_s": time.time() - t}
        print("faults", report["faults"], flush=True)

    with open(os.path.join(OUT, "validate.json"), "w") as f:
        json.dump(report, f, indent=1, default=str)
    print("\nlayer  default_us  cudnn_us")
    for row in report["layers"]:
        print(f"{row['layer']:>5} {row['default_us'] or float('nan'):10.1f} {row['cudnn_us'] or float('nan'):9.1f}  err {row['default_err']}")
    print("C12 random 128: %.1f configs/s, errors %s, best %s us" % (
        report["c12_random_128"]["configs_per_s"], report["c12_random_128"]["errors"], report["c12_random_128"]["best_us"]))
    print("faults:", report["faults"]["errors"], "restarts", report["faults"]["restarts"])


if __name__ == "__main__":
    main()
