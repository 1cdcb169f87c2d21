"""`python -m engine`: print spaces, tune, replay recordings and pick best configs, without Django.

Subcommands live in a small table (`SUBCOMMANDS`): each is a name, a help
line, a function that adds its arguments and one that runs it and returns an
exit status. Modules named in `EXTENSION_MODULES` (the GPU half's
`apply-best` and `baseline`) add their entries with `register` when imported.

A user's mistake (unknown template or tuner, malformed JSON, bad shapes, a
missing or unreadable log) ends with one `error: ...` line on stderr and exit
status 2, never a traceback; those errors are caught here and only here.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from importlib import import_module
from typing import Callable, Sequence

from .callbacks import early_stopping, log_to_file, progress_printer
from .measure import MeasurerUnavailable, UnknownMeasurer, make_measurer
from .logfile import LogFileError, Record, format_record, pick_best, read_history, read_log_file
from .replay import RecordingError, ReplayMeasurer, load_recording, recording_task, restrict_to_recording
from .space import SamplingError
from .ops import BadArgs, DeviceLimits, UnknownTemplate

USAGE_ERROR = 2
EXTENSION_MODULES = ("engine.gpu.cli",)


class CliError(Exception):
    """A user's mistake found by the CLI itself; printed as one line."""


USER_ERRORS = (CliError, BadArgs, UnknownTemplate, UnknownMeasurer, MeasurerUnavailable, RecordingError,
               LogFileError, SamplingError, OSError)


@dataclass(frozen=True)
class Subcommand:
    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


SUBCOMMANDS: dict[str, Subcommand] = {}


def register(subcommand: Subcommand) -> Subcommand:
    SUBCOMMANDS[subcommand.name] = subcommand
    return subcommand


# -- argument helpers ------------------------------------------------------------------
def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not a positive integer")
    return value


def make_task(name: str, args_json: str, limits: DeviceLimits | None = None):
    from .task import args_from_json, create_task

    try:
        args = args_from_json(args_json)
    except BadArgs as exc:
        raise CliError(f"ARGS_JSON: {exc}") from None
    return create_task(name, args, limits=limits)


def add_tuning_arguments(parser: argparse.ArgumentParser) -> None:
    from .tuners import TUNERS

    parser.add_argument("--tuner", default="xgb", help=f"one of {', '.join(sorted(TUNERS))} (default xgb)")
    parser.add_argument("--trials", type=positive_int, default=200, help="configs to measure in all (default 200)")
    parser.add_argument("--early-stopping", type=positive_int, metavar="N",
                        help="stop after N trials without a faster config")
    parser.add_argument("--batch-size", type=positive_int, default=16, help="configs measured per batch")
    parser.add_argument("--seed", type=int, help="seed of the tuner's random choices")
    parser.add_argument("--log", metavar="FILE", help="append every measurement here; resume from it")


def check_tuner(options: argparse.Namespace) -> None:
    """Reject an unknown --tuner before a measurer (a GPU runner child) is started."""
    from .tuners import UnknownTuner, tuner_class

    try:
        tuner_class(options.tuner)
    except UnknownTuner as exc:
        raise CliError(str(exc)) from None


def run_tuning(task, measurer, options: argparse.Namespace) -> int:
    from .tune import tune
    from .tuners import get_tuner

    tuner = get_tuner(options.tuner, task, seed=options.seed)
    history = read_history(options.log) if options.log else []
    callbacks = [log_to_file(options.log)] if options.log else []
    callbacks.append(progress_printer())
    if options.early_stopping:
        callbacks.append(early_stopping(options.early_stopping))
    with measurer:
        result = tune(task, tuner, measurer, options.trials, history=history, callbacks=callbacks,
                      batch_size=options.batch_size)
    print(summary(task, result))
    return 0 if result.best is not None else 1


def summary(task, result) -> str:
    done = f"{result.trials} trials measured" + (f", {result.resumed} resumed from the log" if result.resumed else "")
    if result.best is None:
        return f"no config ran without error ({done})"
    milliseconds = f"{result.best.mean_cost * 1e3:.4f} ms"
    speed = f"{task.flops / result.best.mean_cost / 1e9:.2f} GFLOPS ({milliseconds})" if task.flops else milliseconds
    return f"best {speed}, config {result.best.config_index} ({done})"


# -- subcommands ---------------------------------------------------------------------
def add_task_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("task", help="template name, e.g. conv2d_nchw.cuda")
    parser.add_argument("args_json", metavar="ARGS_JSON", help="the task's args as JSON, as in a log's input")


def _space(options: argparse.Namespace) -> int:
    print(make_task(options.task, options.args_json).config_space)
    return 0


def _tune_arguments(parser: argparse.ArgumentParser) -> None:
    add_task_arguments(parser)
    add_tuning_arguments(parser)
    parser.add_argument("--measurer", default="gpu", help="gpu (default) or replay")
    parser.add_argument("--recording", metavar="FILE",
                        help="the AutoTVM log or Kernel Tuner cache a replay measurer answers from")
    add_device_argument(parser)


def add_device_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--device", metavar="MODEL",
                        help="the GPU model of a Kernel Tuner cache whose device name is empty (e.g. mi250x)")


def _tune(options: argparse.Namespace) -> int:
    check_tuner(options)
    if options.measurer == "replay":
        if not options.recording:
            raise CliError("--measurer replay needs --recording FILE")
        measurer = ReplayMeasurer(load_recording(options.recording, options.device))
        task = make_task(options.task, options.args_json, DeviceLimits.for_device(measurer.device))
        task = restrict_to_recording(task, measurer.records)
    else:
        if options.recording or options.device:
            raise CliError("--recording and --device go with --measurer replay")
        task = make_task(options.task, options.args_json)  # checks the task before a GPU is touched
        measurer = make_measurer(options.measurer)
        task = make_task(options.task, options.args_json, DeviceLimits.for_device(measurer.device))
    return run_tuning(task, measurer, options)


def _replay_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("recording", metavar="RECORDING",
                        help="an AutoTVM log or a Kernel Tuner cache of one task on one GPU model")
    add_tuning_arguments(parser)
    add_device_argument(parser)


def _replay(options: argparse.Namespace) -> int:
    check_tuner(options)
    measurer = ReplayMeasurer(load_recording(options.recording, options.device))
    task = recording_task(measurer.records, limits=DeviceLimits.for_device(measurer.device))
    return run_tuning(task, measurer, options)


def _best_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("logs", nargs="+", metavar="LOG", help="AutoTVM logs to pick from")
    parser.add_argument("-o", "--output", metavar="FILE", help="write the best records here (default stdout)")


def _best(options: argparse.Namespace) -> int:
    records: list[Record] = []
    for path in options.logs:
        records += _read_log(path)
    best = pick_best(records)
    lines = [format_record(record) for record in best.values()]
    if options.output:
        with open(options.output, "w", encoding="utf-8") as stream:
            stream.writelines(line + "\n" for line in lines)
    else:
        sys.stdout.writelines(line + "\n" for line in lines)
    print(f"{len(best)} best records (of {len(records)} read) for {len(best)} (GPU model, workload) pairs",
          file=sys.stderr)
    return 0


def _read_log(path: str) -> list[Record]:
    """A log's records; warns about malformed lines; CliError when it holds none."""
    log = read_log_file(path)
    records, bad = log.records, log.bad_lines
    if not records:
        first = f" (line {bad[0][0]}: {bad[0][1]})" if bad else ""
        raise CliError(f"{path} holds no version 0.2 tuning records{first}")
    if bad:
        print(f"warning: {path}: skipped {len(bad)} unreadable lines (first, line {bad[0][0]}: {bad[0][1]})",
              file=sys.stderr)
    return records


register(Subcommand("space", "print a task's config space", add_task_arguments, _space))
register(Subcommand("tune", "tune a task on a GPU or against a recording", _tune_arguments, _tune))
register(Subcommand("replay", "tune the task of a recording against that recording", _replay_arguments, _replay))
register(Subcommand("best", "pick the best record per (GPU model, workload) from logs", _best_arguments, _best))


def _load_extensions() -> None:
    for name in EXTENSION_MODULES:
        try:
            import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name is not None and name.startswith(exc.name):
                continue  # the extension is not installed here
            # It is there but a library it needs is not (CuPy on a machine without a GPU).
            print(f"warning: the subcommands of {name} are unavailable: {exc}", file=sys.stderr)


def build_parser() -> argparse.ArgumentParser:
    _load_extensions()
    parser = argparse.ArgumentParser(prog="python -m engine", description="GPU kernel tuning engine")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for subcommand in SUBCOMMANDS.values():
        sub = commands.add_parser(subcommand.name, help=subcommand.help, description=subcommand.help)
        subcommand.add_arguments(sub)
        sub.set_defaults(run=subcommand.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    options = build_parser().parse_args(argv)
    try:
        return options.run(options)
    except USER_ERRORS as exc:
        print(f"error: {describe(exc)}", file=sys.stderr)
        return USAGE_ERROR


def describe(exc: Exception) -> str:
    if isinstance(exc, OSError) and exc.filename:
        return f"{exc.filename}: {exc.strerror or exc}"
    return str(exc)
