"""What the template tests share to name their configs and layers: a config of a few knobs over base values
for all of them (tests/test_gemm.py, test_conv2d_igemm.py, test_conv2d_winograd.py and
test_conv2d_winograd_nonfused.py each have their base), and a conv's args at another batch."""


def config_over(task, base: dict, **knobs):
    """The task's config of `base`'s knob values, `knobs` in place of some of them."""
    values = {**base, **knobs}
    return task.config_space.from_entity([[name, "ot", values[name]] for name in task.config_space.knob_names])


def batched(args: list, batch: int) -> list:
    """`conv2d_nchw.cuda`'s args with the data's batch (the first size of its shape) set to `batch`."""
    return [[args[0][0], [batch, *args[0][1][1:]], args[0][2]], *args[1:]]
