"""The custom template: a user's CUDA kernel with tunable macros, its spec, space and log form."""
import copy

import numpy as np
import pytest

import cuda_on_cpu
import engine
from engine.gpu.builder import Builder
from engine.measure import MeasureResult, to_record
from engine.logfile import ErrorNo, format_record, parse_line
from engine.ops.custom.tiling import SpecError
from engine.workloads import transpose_spec

SOURCE = r"""
extern "C" __global__ void scale_add(const float* a, const float* b, float* c) {
    const int first = blockIdx.x * block_size_x * tile + threadIdx.x;
    for (int t = 0; t < tile; ++t) {
        const int i = first + t * block_size_x;
        if (i < N) c[i] = SCALE * a[i] + b[i];
    }
}
"""
SPEC = {
    "kernel_name": "scale_add",
    "source": SOURCE,
    "sizes": {"N": 1000, "SCALE": 3},
    "tune_params": [["block_size_x", [32, 64, 128, 2048]], ["tile", [1, 2, 4]]],
    "restrictions": ["block_size_x * tile >= 64"],
    "block": ["block_size_x"],
    "grid": ["ceil_div(N, block_size_x * tile)"],
    "arguments": [{"name": "a", "shape": ["N"], "dtype": "float32"},
                  {"name": "b", "shape": ["N"], "dtype": "float32"},
                  {"name": "c", "shape": ["N"], "dtype": "float32", "output": True}],
    "reference": {"numpy": "SCALE * a + b"},
    "flops": "2 * N",
}


def spec_with(**changes):
    spec = copy.deepcopy(SPEC)
    spec.update(changes)
    return spec


def task_of(spec=SPEC):
    return engine.create_task("custom", [spec])


def at(task, block_size_x, tile):
    return task.config_space.from_entity([["block_size_x", "ot", block_size_x], ["tile", "ot", tile]])


def test_each_tunable_parameter_is_a_knob_in_the_given_order():
    task = task_of()
    assert task.config_space.knob_names == ["block_size_x", "tile"]
    assert len(task.config_space) == 12 and task.flops == 2000


def test_restrictions_and_launch_limits_give_the_reason():
    task = task_of()
    assert task.why_invalid(at(task, 32, 1)) == "restriction 'block_size_x * tile >= 64' is false"
    assert task.why_invalid(at(task, 2048, 1)) == "2048 threads per block exceed the limit of 1024"
    assert task.why_invalid(at(task, 128, 2)) is None


def test_the_default_is_the_spec_default_or_the_first_valid_config():
    assert task_of().default_config().values() == {"block_size_x": 64, "tile": 1}
    chosen = task_of(spec_with(default={"block_size_x": 128, "tile": 4})).default_config()
    assert chosen.values() == {"block_size_x": 128, "tile": 4}


def test_a_config_becomes_macros_before_the_source_and_a_launch(tmp_path):
    task = task_of()
    source = task.template.kernel(task.params, at(task, 128, 2))
    assert "#define block_size_x 128\n#define tile 2\n" in source.code and "#define N 1000\n" in source.code
    assert source.grid == (4, 1, 1) and source.block == (128, 1, 1)
    assert source.arg_order == ("a", "b", "c") and source.output_index == 2
    with Builder("sm_90", workers=1, cache_dir=tmp_path, timeout=120) as builder:
        assert builder.build([source])[0].ok


@pytest.mark.skipif(not cuda_on_cpu.available(), reason="needs g++ to run kernels on the CPU")
def test_valid_configs_compute_the_numpy_reference():
    task = task_of()
    inputs = task.template.make_inputs(task.params, np.random.default_rng(0))
    expected = task.template.reference(task.params, inputs)
    np.testing.assert_allclose(expected, 3 * inputs[0].astype(np.float64) + inputs[1], rtol=1e-12)
    for cfg in task.config_space.sample(np.random.default_rng(0), 3):
        assert cuda_on_cpu.error_against_reference(task, cfg) < 1e-6


def test_the_spec_logs_in_autotvm_format_and_reads_back_as_the_same_workload():
    task = task_of()
    cfg = at(task, 128, 2)
    record = to_record(task, cfg, MeasureResult(ErrorNo.NO_ERROR, (1e-5,)), "cuda -model=h200")
    line = format_record(record)
    back = parse_line(line)
    assert back.task_name == "custom" and back.workload_key == task.workload_key
    assert engine.create_task(back.task_name, back.args).config_space.index_of(back.entity) == cfg.index


@pytest.mark.parametrize("changes, message", [
    ({"kernel_name": "__import__"}, "kernel_name: '__import__' is not a plain C identifier"),
    ({"source": "int x;"}, "source: does not mention the kernel_name 'scale_add'"),
    ({"restrictions": ["__import__('os').system('x')"]}, "restrictions[0]: only plain function names can be called"),
    ({"restrictions": ["block_size_x.real > 1"]}, "restrictions[0]: attribute access is not allowed"),
    ({"restrictions": ["threads > 1"]}, "restrictions[0]: unknown name 'threads'"),
    ({"grid": ["N ** 1000"]}, None),  # parses; evaluates to an invalid config below
    ({"tune_params": [["tile", [1, 1]]]}, "tune_params[0]: values repeat"),
    ({"tune_params": [["N", [1]]]}, "'N' is already a size"),
    ({"arguments": [{"name": "c", "shape": ["N"], "dtype": "float32"}]}, "exactly one argument must be the output"),
    ({"arguments": [{"name": "c", "shape": ["N"], "dtype": "int32", "output": True}]}, "the output must be float32"),
    ({"arguments": [{"name": "c", "shape": ["M"], "dtype": "float32", "output": True}]}, "unknown name 'M'"),
    ({"reference": {"numpy": "load(a)"}}, "reference.numpy: function 'load' is not allowed"),
    ({"reference": {"numpy": "c * 2"}}, "reference.numpy: unknown name 'c'"),
    ({"reference": {"shell": "ls"}}, 'reference: must be {"numpy": expression}'),
    ({"colour": "blue"}, "unknown field(s) colour"),
    ({"constants": {"d_a": "c"}}, "constants.d_a: 'c' is not an input argument (a, b)"),
    ({"constants": {"__x": "a"}}, "constants: '__x' is not a plain C identifier"),
    ({"arguments": [{"name": "a", "shape": ["N"], "dtype": "float32", "range": [1, 0]},
                    {"name": "c", "shape": ["N"], "dtype": "float32", "output": True}]},
     "arguments[0].range: must be [low, high] with low < high"),
    ({"arguments": [{"name": "c", "shape": ["N"], "dtype": "uint8", "output": True}]}, "the output must be float32"),
])
def test_a_bad_spec_is_refused_naming_the_field(changes, message):
    spec = spec_with(**changes)
    if message is None:
        task = task_of(spec)
        assert "exponent 1000 is larger than 64" in task.why_invalid(at(task, 128, 2))
        return
    with pytest.raises(SpecError) as caught:
        task_of(spec)
    assert message in str(caught.value)


def test_bytes_and_ranged_inputs_are_drawn_as_the_spec_says_and_constants_name_their_argument():
    spec = spec_with(arguments=[{"name": "a", "shape": ["N"], "dtype": "uint8"},
                                {"name": "b", "shape": ["N"], "dtype": "float32", "range": [2, 3]},
                                {"name": "c", "shape": ["N"], "dtype": "float32", "output": True}],
                     constants={"d_b": "b"})
    task = task_of(spec)
    a, b, _ = task.template.make_inputs(task.params, np.random.default_rng(0))
    assert a.dtype == np.uint8 and a.max() > 200 and b.min() >= 2 and b.max() < 3
    assert task.template.kernel(task.params, task.default_config()).constants == (("d_b", 1),)
    assert np.allclose(task.template.reference(task.params, [a, b, None]), 3 * a.astype(np.int64) + b)


def test_args_that_are_not_one_spec_are_refused():
    with pytest.raises(SpecError, match=r"args are \[SPEC\]"):
        engine.create_task("custom", [SPEC, SPEC])


def test_the_bytes_moved_are_every_argument_once():
    task = task_of(spec_with(arguments=SPEC["arguments"][:2] + [{"name": "c", "shape": ["N", 2], "dtype": "float64",
                                                                  "output": True}]))
    assert task.template.bytes_moved(task.params) == 1000 * 4 + 1000 * 4 + 1000 * 2 * 8


@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
def test_every_valid_config_of_a_two_dimensional_kernel_compiles(tmp_path, arch):
    task = engine.create_task("custom", [transpose_spec(8192, 8192)])
    configs = [c for c in map(task.config_space.get, range(len(task.config_space))) if task.why_invalid(c) is None]
    assert len(configs) == 32  # 36 less the TILE 16 with BLOCK_ROWS 32 pair, in both paddings
    with Builder(arch, workers=2, cache_dir=tmp_path, timeout=120) as builder:
        results = builder.build([task.template.kernel(task.params, c) for c in configs])
    assert [r.message[:300] for r in results if not r.ok] == []


@pytest.mark.skipif(not cuda_on_cpu.available(), reason="needs g++ to run kernels on the CPU")
def test_shared_memory_and_two_dimensional_launches_compute_the_reference():
    task = engine.create_task("custom", [transpose_spec(70, 45)])  # no tile divides either side
    inputs = task.template.make_inputs(task.params, np.random.default_rng(0))
    expected = task.template.reference(task.params, inputs)
    np.testing.assert_array_equal(expected, inputs[0].T)
    for values in ({"TILE": 16, "BLOCK_ROWS": 4, "PAD": 1}, {"TILE": 64, "BLOCK_ROWS": 8, "PAD": 0}):
        cfg = task.config_space.from_entity([[name, "ot", values[name]] for name in task.config_space.knob_names])
        assert task.why_invalid(cfg) is None
        inputs[1].fill(np.nan)
        source = task.template.kernel(task.params, cfg)
        assert source.shared_bytes == values["TILE"] * (values["TILE"] + values["PAD"]) * 4
        cuda_on_cpu.run(source, inputs)
        np.testing.assert_array_equal(inputs[1], expected)
