"""benchmarks/loop_mix.py's reading of SASS (the compile and disassembly need nvcc and cuobjdump; not here)."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import engine  # noqa: E402
from engine.workloads import PRESETS  # noqa: E402
from loop_mix import configs_along, main_loop  # noqa: E402

# An outer loop (0x0040-0x00c0) around an inner one (0x0060-0x0090), and a loop without FFMAs after them.
SASS = """
        /*0000*/                   MOV R1, c[0x0][0x28] ;
        /*0040*/                   LDS.128 R4, [R2] ;
        /*0050*/                   IMAD R3, R3, 0x4, R0 ;
        /*0060*/                   FFMA R8, R4, R5, R8 ;
        /*0070*/              @!P0 FFMA R9, R4, R6, R9 ;
        /*0080*/                   ISETP.NE.AND P1, PT, R3, RZ, PT ;
        /*0090*/               @P1 BRA 0x60 ;
        /*00a0*/                   FFMA R10, R4, R7, R10 ;
        /*00b0*/                   IADD3 R2, R2, 0x10, RZ ;
        /*00c0*/               @P2 BRA 0x40 ;
        /*00d0*/                   STG.E [R12], R8 ;
        /*00e0*/               @P3 BRA 0xd0 ;
        /*00f0*/                   EXIT ;
"""


def test_the_main_loop_is_the_outermost_of_the_loops_with_the_most_ffmas():
    body = main_loop(SASS)
    assert len(body) == 9 and body[0].startswith("LDS.128") and body[-1].startswith("@P2 BRA")
    assert sum("FFMA" in line for line in body) == 3


def test_a_kernel_without_a_multiply_add_loop_says_so():
    with pytest.raises(ValueError, match="no loop with FFMAs"):
        main_loop(SASS.replace("FFMA", "FADD"))


def test_configs_along_a_knob_set_knobs_then_walk_the_varied_one():
    task = engine.create_task(PRESETS["IG-C2"].task_name, PRESETS["IG-C2"].args)
    base = task.default_config()
    found = configs_along(task, base.index, "step_channels", {"unroll_k": 32}, {"block_k": 8})
    assert [c.values()["step_channels"] for c, _ in found] == [0, 1, 2, 4]
    assert all(c.values()["unroll_k"] == 32 for c, _ in found)
    assert all(c.values()["block_k"] == 8 for c, _ in found[1:])
    assert [why is None for _, why in found] == [task.why_invalid(c) is None for c, _ in found]
