"""Where a kernel's instructions go, without a GPU: the static SASS instruction mix of its main loop.

Compiles each config's source with nvcc (`--arch`, sm_90 by default) and disassembles it with cuobjdump
(the CUDA toolkit's, or the `nvidia-cuda-cuobjdump` wheel's), then counts the instructions of the loop
whose body holds the most FFMAs, the outermost such loop (the K loop, where a step's compute is
unrolled). A SIMT GEMM or conv issues about one instruction a cycle per scheduler; every instruction
of the loop that is not an FFMA takes an issue slot from the multiply-adds, so "instructions per FFMA"
bounds how close the loop can come to the FMA pipe's peak. These are static counts: where a loop runs
an inner loop several times per step (unroll_k below the step's k rows), they understate its share.

    python benchmarks/loop_mix.py --config IG-56-64-64-k3-b16=240568292 --vary step_channels \\
        --set-varied block_k=8 --markdown docs/benchmarks/conv2d-igemm-loop-mix.md

`--config PRESET=INDEX` (a config of the preset's template, repeatable); `--vary KNOB` adds a variant of
each config for every option of KNOB, `--set-varied KNOB=VALUE` sets another knob in those variants
whose KNOB is not the config's own (a knob the varied one makes moot), `--set KNOB=VALUE` in every config.
"""
from __future__ import annotations

import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import engine  # noqa: E402
from engine.workloads import PRESETS  # noqa: E402
from provenance import git_describe  # noqa: E402
from variants import knob_value  # noqa: E402

_INSTRUCTION = re.compile(r"^\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
_BRANCH_TARGET = re.compile(r"\bBRA\b.*?0x([0-9a-f]+)")
_PREDICATE = re.compile(r"^@!?U?P[T\d]+\s+")


@dataclass(frozen=True)
class LoopMix:
    instructions: int
    ffma: int
    opcodes: dict[str, int]
    registers: int
    spill_bytes: int

    @property
    def per_ffma(self) -> float:
        return self.instructions / self.ffma if self.ffma else float("inf")


def main_loop(sass: str) -> list[str]:
    """The body of the backward branch that spans the most FFMAs (the later, outer one on a tie)."""
    lines = [(int(m.group(1), 16), m.group(2)) for m in map(_INSTRUCTION.match, sass.splitlines()) if m]
    best: tuple[int, list[str]] = (-1, [])
    for address, text in lines:
        target = _BRANCH_TARGET.search(text)
        if target and int(target.group(1), 16) < address:
            body = [t for a, t in lines if int(target.group(1), 16) <= a <= address]
            ffma = sum(1 for t in body if _opcode(t) == "FFMA")
            if ffma >= best[0]:
                best = (ffma, body)
    if best[0] <= 0:
        raise ValueError("no loop with FFMAs in this kernel")
    return best[1]


def _opcode(instruction: str) -> str:
    return _PREDICATE.sub("", instruction).split()[0].split(".")[0]


def loop_mix(code: str, arch: str, workdir: str) -> LoopMix:
    source, cubin = os.path.join(workdir, "kernel.cu"), os.path.join(workdir, "kernel.cubin")
    with open(source, "w") as handle:
        handle.write(code)
    built = subprocess.run(["nvcc", "-cubin", f"-arch={arch}", "-O3", "-Xptxas", "-v", "-w", "-o", cubin, source],
                           capture_output=True, text=True, check=True)
    sass = subprocess.run(["cuobjdump", "-sass", cubin], capture_output=True, text=True, check=True).stdout
    body = main_loop(sass)
    opcodes = collections.Counter(_opcode(t) for t in body)
    registers = re.search(r"Used (\d+) registers", built.stderr)
    spills = re.search(r"(\d+) bytes spill stores", built.stderr)
    return LoopMix(len(body), opcodes["FFMA"], dict(opcodes), int(registers.group(1)) if registers else 0,
                   int(spills.group(1)) if spills else 0)


def configs_along(task, index: int, vary: str | None, always: dict, varied: dict) -> list:
    """The config at `index` with `always` set, then (`vary`) at every other option of that knob, with
    `varied` set too; each with the template's reason it is invalid, or None."""
    space = task.config_space
    config = space.from_entity([[name, kind, always.get(name, value)]
                                for name, kind, value in space.get(index).to_entity()])
    configs = [config, *(space.along(config, vary, varied) if vary else [])]
    return [(c, task.why_invalid(c)) for c in configs]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", action="append", required=True, metavar="PRESET=INDEX")
    parser.add_argument("--vary")
    parser.add_argument("--set", action="append", default=[], type=knob_value, metavar="KNOB=VALUE")
    parser.add_argument("--set-varied", action="append", default=[], type=knob_value, metavar="KNOB=VALUE")
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--markdown")
    options = parser.parse_args(argv)
    header = (f"Static SASS of each config's main loop, nvcc {options.arch} -O3, at {git_describe()}: "
              f"`python benchmarks/loop_mix.py {' '.join(argv if argv is not None else sys.argv[1:])}`\n\n"
              "| preset | config | " + (f"{options.vary} | " if options.vary else "") +
              "loop instructions | FFMA | instructions per FFMA | registers | spilled bytes | most frequent others |\n"
              "|---|---|" + ("---:|" if options.vary else "") + "---:|---:|---:|---:|---:|---|")
    lines = [header]
    with tempfile.TemporaryDirectory() as workdir:
        for spec in options.config:
            preset, _, index = spec.partition("=")
            task = engine.create_task(PRESETS[preset].task_name, PRESETS[preset].args)
            for config, why in configs_along(task, int(index), options.vary, dict(options.set), dict(options.set_varied)):
                knob = f"{config[options.vary].val} | " if options.vary else ""
                if why:
                    lines.append(f"| {preset} | {config.index} | {knob}invalid: {why} ||||||")
                    continue
                mix = loop_mix(task.template.kernel(task.params, config).code, options.arch, workdir)
                others = ", ".join(f"{op} {n}" for op, n in sorted(mix.opcodes.items(), key=lambda o: -o[1])
                                   if op != "FFMA")[:120]
                lines.append(f"| {preset} | {config.index} | {knob}{mix.instructions} | {mix.ffma} | "
                             f"{mix.per_ffma:.2f} | {mix.registers} | {mix.spill_bytes} | {others} |")
                print(lines[-1], flush=True)
    if options.markdown:
        with open(options.markdown, "w") as handle:
            handle.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
