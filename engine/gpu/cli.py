"""GPU subcommands of `python -m engine`: `apply-best` and `baseline`.

Imported by engine.cli (its EXTENSION_MODULES); adds entries to its subcommand table.
"""
from __future__ import annotations

import argparse

from engine.cli import CliError, Subcommand, add_task_arguments, make_task, register
from engine.logfile import format_record
from engine.space import EntityError
from engine.ops.base import DeviceLimits

from .nvrtc import CompileError, NvrtcUnavailable


def _apply_best_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("log", metavar="LOG", help="an AutoTVM log holding records of the task")
    add_task_arguments(parser)
    parser.add_argument("--tolerance", type=float, default=1e-4, help="largest relative L2 error accepted")


def _apply_best(options: argparse.Namespace) -> int:
    from .apply_best import NoBestConfig, check_and_time, load_best_kernel
    from .runner import NotResidentAtOnce, TimingSettings

    task = make_task(options.task, options.args_json, DeviceLimits.for_h200())
    try:
        kernel = load_best_kernel(options.log, task)
        checked = check_and_time(kernel, settings=TimingSettings(tolerance=options.tolerance))
    except (NoBestConfig, NotResidentAtOnce) as exc:
        raise CliError(str(exc)) from None
    except ImportError as exc:
        raise CliError(f"apply-best needs CuPy and a CUDA GPU: {exc}") from None
    except EntityError as exc:
        raise CliError(f"the log's best config is not a config of {task.name} {task.args}: {exc}") from None
    except NvrtcUnavailable as exc:
        raise CliError(str(exc)) from None
    except CompileError as exc:
        first_lines = "\n".join(str(exc).splitlines()[:5])
        raise CliError(f"the best config's kernel does not compile: {first_lines}") from None
    ok = checked.relative_error < options.tolerance
    print(f"best config {kernel.record.config_index} from {kernel.record.target} "
          f"(logged {kernel.record.mean_cost * 1e6:.1f} us): {kernel.record.entity}")
    print(f"relative L2 error {checked.relative_error:.2e} ({'ok' if ok else 'WRONG'}); "
          f"median {checked.median * 1e6:.2f} us, {task.flops / checked.median / 1e9:.1f} GFLOPS")
    return 0 if ok else 1


def _baseline_arguments(parser: argparse.ArgumentParser) -> None:
    from .baselines import PROVIDERS

    add_task_arguments(parser)
    parser.add_argument("--provider", action="append", choices=PROVIDERS,
                        help="the template's vendor library (cudnn or cublas) and/or default-config "
                             "(default: the template's vendor baseline, if any, and default-config)")
    parser.add_argument("-o", "--output", metavar="FILE", help="append the baseline records here")


def _baseline(options: argparse.Namespace) -> int:
    from .baselines import BaselineUnavailable, default_providers, measure_baseline, vendor_baseline
    from .measurer import GpuMeasurer

    task = make_task(options.task, options.args_json)  # a user's mistake shows before the GPU starts
    providers = options.provider or default_providers(task)
    try:
        for provider in providers:
            vendor_baseline(task, provider)  # a provider the template has not, before the GPU starts
    except BaselineUnavailable as exc:
        raise CliError(str(exc)) from None
    with GpuMeasurer() as measurer:
        task = make_task(options.task, options.args_json, DeviceLimits.for_device(measurer.device))
        records = []
        for provider in providers:
            try:
                records.append(measure_baseline(task, provider, measurer))
            except BaselineUnavailable as exc:
                raise CliError(str(exc)) from None
    for record in records:
        cost = f"{record.mean_cost * 1e6:.2f} us" if record.ok else f"error {int(record.error_no)} {record.error_msg}"
        print(f"{record.tvm_version}: {cost}")
    if options.output:
        with open(options.output, "a", encoding="utf-8") as stream:
            stream.writelines(format_record(r) + "\n" for r in records)
    return 0 if all(r.ok for r in records) else 1


register(Subcommand("apply-best", "compile a log's best config, check it and time it on this GPU",
                    _apply_best_arguments, _apply_best))
register(Subcommand("baseline", "time the vendor library and the untuned default config; write baseline records",
                    _baseline_arguments, _baseline))
