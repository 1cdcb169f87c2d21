"""The tuning engine (no Django), and its front door: what the web side (`records/`,
`jobs/`, `tunerweb/`) uses is named here, and it imports the engine through here alone
(and `engine.gpu` where a worker starts on a GPU).

Names load on first use, so `import engine` stays light: a log reader needs neither the
templates nor XGBoost.
"""
from __future__ import annotations

from importlib import import_module

_EXPORTS: dict[str, tuple[str, ...]] = {
    # tasks and workloads
    "engine.task": ("Task", "create_task", "args_from_json"),
    "engine.describe": ("WorkloadFacts", "describe_workload"),
    "engine.ops": ("TEMPLATES", "BadArgs", "DeviceLimits", "UnknownTemplate"),
    "engine.ops.custom.tiling": ("CUSTOM_TEMPLATE", "CustomParams", "SpecError", "parse_spec", "MAX_SOURCE_CHARS"),
    "engine.workloads": ("PRESETS",),
    "engine.networks": ("NETWORKS", "NetworkTask"),
    "engine.tuners": ("TUNERS", "UnknownTuner", "get_tuner"),
    # the loop (`tune` itself is imported below)
    "engine.callbacks": ("StopTuning", "early_stopping", "log_to_file"),
    # a network's budget among its tasks
    "engine.scheduler": ("Strategy", "TaskView", "bests_per_round", "next_task"),
    # logs
    "engine.logfile": ("ErrorNo", "Record", "LogLineError", "LegacyLineError", "LogFileError", "canonical_args",
                       "format_record", "log_lines", "scan_log", "read_log_file", "read_history", "write_records",
                       "make_target", "target_model", "pick_best", "MODEL_SLUG", "OverlongLine"),
    "engine.baselines": ("PROVIDERS", "DEFAULT_CONFIG_BASELINE", "baseline_provider_of", "baseline_version"),
    # measuring
    "engine.measure": ("DeviceInfo", "MeasureResult", "Measurer", "make_measurer"),
    "engine.replay": ("ReplayMeasurer", "PacedReplayMeasurer", "RecordingError", "load_recording", "recording_model",
                      "restrict_to_recording"),
    "engine.synthetic": ("synthetic_recording",),
    "engine.jsontext": ("parse_json", "UnreadableJSON"),
    # confirmations and the code a record measured
    "engine.confirm": ("MIN_ROUNDS", "same_vendor_library", "Confirmation", "Contender", "ReplayStopwatch", "Role", "Spread", "Stopwatch",
                       "Timing", "Unready", "confirm_contenders", "contenders_for", "entities_of", "top_k_distinct"),
    "engine.codehash": ("CODE_CURRENT", "CODE_CHANGED", "CODE_UNKNOWN", "code_status"),
    # Kernel Tuner's files (cache, T4, store_results)
    "engine.kernel_tuner": ("KERNEL_TUNER_TEMPLATE", "KernelTunerFile", "KernelTunerFileError", "checked_model",
                            "sniff_kernel_tuner", "parse_kernel_tuner_text", "kernel_tuner_cache_document",
                            "kernel_tuner_t4_document", "kernel_tuner_export_view", "KERNEL_TUNER_SNIFF_BYTES"),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = sorted([*_MODULE_OF, "TuneResult", "tune"])

# Bound at once, not on first use: `engine.tune` is also a module, and a module loaded
# later would otherwise take the name (the loop is light: no templates, no XGBoost).
from .tune import TuneResult, tune  # noqa: E402


def __getattr__(name: str):
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'engine' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return __all__
