"""Networks as the tasks a network job tunes: each a workload and how often it occurs.

Occurrence counts weigh each task in the network's estimated latency (sum of best
time x occurrences), which the task scheduler (engine.scheduler) lowers.

- `resnet18`: the twelve conv2d layers of TVM OSDI'18 Table 2, counted in the
  ResNet-18 that table was taken from (TVM's `relay.testing.resnet`, 21 conv2d): the
  first unit of every stage has a 1x1 projection shortcut, stage 1's included (C3);
  torchvision's resnet18 has no C3 and is otherwise the same.
- `mobilenet`: the nine depthwise layers of MobileNet v1 (224², width 1.0); the five
  14² 512-channel blocks are one task (D7 x 5).
- `bert-layer`: the GEMMs of one BERT-base encoder layer (hidden 768, 12 heads, FFN
  3072) at batch 1, sequence 512, as M x N x K = tokens x out x in: Q, K, V and the
  output projection (512x768x768, x4), FFN up and down, and per head the attention
  scores Q.K^T (512x512x64) and their product with V (512x64x512), x12 each.
"""
from __future__ import annotations

from dataclasses import dataclass

from .workloads import PRESETS, gemm_args


@dataclass(frozen=True)
class NetworkTask:
    label: str
    task_name: str
    args: list
    weight: int
    description: str = ""


@dataclass(frozen=True)
class Network:
    name: str
    title: str
    tasks: tuple[NetworkTask, ...]

    @property
    def occurrences(self) -> int:
        return sum(task.weight for task in self.tasks)


def _from_presets(counts: dict[str, int]) -> tuple[NetworkTask, ...]:
    return tuple(
        NetworkTask(name, PRESETS[name].task_name, PRESETS[name].args, weight, PRESETS[name].description)
        for name, weight in counts.items()
    )


_RESNET18_COUNTS = {"C1": 1, "C2": 4, "C3": 1, "C4": 1, "C5": 1, "C6": 3,
                    "C7": 1, "C8": 1, "C9": 3, "C10": 1, "C11": 1, "C12": 3}
_MOBILENET_COUNTS = {"D1": 1, "D2": 1, "D3": 1, "D4": 1, "D5": 1, "D6": 1, "D7": 5, "D8": 1, "D9": 1}
# (label, M, N, K, occurrences)
_BERT_LAYER = [
    ("qkvo", 512, 768, 768, 4),
    ("ffn-up", 512, 3072, 768, 1),
    ("ffn-down", 512, 768, 3072, 1),
    ("scores", 512, 512, 64, 12),
    ("context", 512, 64, 512, 12),
]

NETWORKS: dict[str, Network] = {
    network.name: network
    for network in (
        Network("resnet18", "ResNet-18 conv2d C1–C12 (batch 1)", _from_presets(_RESNET18_COUNTS)),
        Network("mobilenet", "MobileNet v1 depthwise D1–D9 (batch 1)", _from_presets(_MOBILENET_COUNTS)),
        Network("bert-layer", "BERT-base encoder layer GEMMs (batch 1, sequence 512)", tuple(
            NetworkTask(label, "gemm", gemm_args(m, n, k), weight, f"{m}×{n}×{k} (M×N×K)")
            for label, m, n, k, weight in _BERT_LAYER
        )),
    )
}


class UnknownNetwork(KeyError):
    def __str__(self) -> str:
        return self.args[0]


def get_network(name: str) -> Network:
    try:
        return NETWORKS[name]
    except KeyError:
        raise UnknownNetwork(f"unknown network {name!r}; known networks: {', '.join(NETWORKS)}") from None
