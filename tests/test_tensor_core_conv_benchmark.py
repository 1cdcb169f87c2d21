"""benchmarks/tensor_core_conv.py without a GPU: its --layers."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import tensor_core_conv  # noqa: E402


def test_it_checks_and_tunes_only_the_layers_named():
    tasks = tensor_core_conv.layer_tasks(["float16", "bfloat16"], "TCC-14-1024-256-k1-f16,TCC-7-512-512-k3-bf16")
    assert [name for name, _ in tasks] == ["14² 1024→256 K1 s1 p0 batch 32 NHWC float16",
                                           "7² 512→512 K3 s1 p1 batch 32 NHWC bfloat16"]
    for _, task in tasks:  # each named layer gets its whole list, the TMA loader's tiles among it
        assert sum(c["loader"].val == "tma" for c in tensor_core_conv.tune_configs(task)) >= 30


def test_it_refuses_a_layer_it_does_not_have():
    with pytest.raises(SystemExit, match="no preset TCC-7-512-512-k3; the layers are TCC-56-64-64-k3-f16"):
        tensor_core_conv.layer_tasks(["float16"], "TCC-7-512-512-k3")
    assert len(tensor_core_conv.layer_tasks(["float16"])) == 6  # no names: every layer
