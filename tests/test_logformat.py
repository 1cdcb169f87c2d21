import copy
import io
import json

import pytest

from engine.logfile import (
    ErrorNo,
    LegacyLineError,
    LogLineError,
    Record,
    canonical_args,
    format_record,
    parse_line,
    pick_best,
    read_records,
    scan_log,
    target_model,
    write_records,
)

GOOD = {
    "input": ["cuda -model=v100", "conv2d_nchw.cuda", [["TENSOR", [1, 64, 56, 56], "float32"], [1, 1]], {}],
    "config": {"index": 12, "code_hash": None, "entity": [["tile_f", "sp", [-1, 2, 8, 1]], ["unroll_explicit", "ot", 1]]},
    "result": [[1e-4, 3e-4], 0, 2.5, 1535423916.7],
    "version": 0.2,
    "tvm_version": "0.7.dev0",
}


def line_with(path: str, value) -> str:
    """GOOD with one field replaced; `path` is like "result.1" or "config.index"."""
    row = copy.deepcopy(GOOD)
    *parents, last = path.split(".")
    node = row
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    if isinstance(node, list):
        node[int(last)] = value
    elif value is _DELETE:
        del node[last]
    else:
        node[last] = value
    return json.dumps(row)


_DELETE = object()


def test_a_good_line_parses_into_a_record():
    record = parse_line(json.dumps(GOOD))
    assert (record.model, record.task_name, record.config_index) == ("v100", "conv2d_nchw.cuda", 12)
    assert record.costs == (1e-4, 3e-4) and record.mean_cost == pytest.approx(2e-4) and record.ok
    assert record.tvm_version == "0.7.dev0" and record.code_hash is None


def test_a_record_survives_format_and_parse():
    record = parse_line(json.dumps(GOOD))
    assert parse_line(format_record(record)) == record


def test_every_tophub_line_round_trips(tophub_log):
    for line in tophub_log.open():
        record = parse_line(line)
        again = parse_line(format_record(record))
        assert again == record
        assert json.loads(format_record(again)) == json.loads(line)


def test_a_failed_measurement_is_written_with_autotvms_1e9_and_read_back_without_costs():
    record = Record(
        target="cuda -model=h200", task_name="dense", args=[], config_index=0, entity=[], costs=(),
        error_no=ErrorNo.COMPILE_DEVICE, all_cost=0.3, timestamp=1.0, error_msg="ptxas: too many registers",
    )
    row = json.loads(format_record(record))
    assert row["result"][:2] == [[1e9], 3] and row["error_msg"] == "ptxas: too many registers"
    back = parse_line(format_record(record))
    assert back.costs == () and back.mean_cost is None and not back.ok and back.error_msg == record.error_msg


def test_write_and_read_records_round_trip_through_a_file():
    records = [parse_line(json.dumps(GOOD)), parse_line(line_with("result.1", 7))]
    stream = io.StringIO()
    assert write_records(stream, records) == 2
    stream.seek(0)
    assert read_records(stream) == records


def test_blank_and_comment_lines_are_nothing():
    assert parse_line("") is None and parse_line("   \n") is None and parse_line("# a comment") is None


def test_scan_log_yields_errors_with_line_numbers_and_keeps_going():
    lines = [json.dumps(GOOD), "", "# note", "{bad", json.dumps(GOOD)]
    items = list(scan_log(lines))
    assert [n for n, _ in items] == [1, 4, 5]
    assert isinstance(items[1][1], LogLineError) and isinstance(items[2][1], Record)


def test_a_version_0_1_line_is_a_legacy_error():
    with pytest.raises(LegacyLineError, match="version 0.1 record"):
        parse_line(json.dumps({"i": ["cuda", "conv2d", [], {}, [], {}], "r": [[1e-4], 0, 1, 1], "v": 0.1}))


@pytest.mark.parametrize(
    "line, reason",
    [
        ("{nope", "not JSON (Expecting property name enclosed in double quotes at column 2)"),
        ("[1, 2]", "not a JSON object"),
        (line_with("input", _DELETE), "missing 'input'"),
        (line_with("config", _DELETE), "missing 'config'"),
        (line_with("result", _DELETE), "missing 'result'"),
        (line_with("version", 0.3), "unsupported version 0.3 (expected 0.2)"),
        (line_with("input", ["cuda", "x", []]), "input is not [target, task_name, args, kwargs]"),
        (line_with("input.0", " "), "input target is not a string"),
        (line_with("input.1", 5), "input task name is not a string"),
        (line_with("input.2", {"a": 1}), "input args is not a list"),
        (line_with("input.3", []), "input kwargs is not an object"),
        (line_with("config", [1]), "config is not an object"),
        (line_with("config.index", -1), "config.index is not a non-negative integer"),
        (line_with("config.index", True), "config.index is not a non-negative integer"),
        (line_with("config.entity", "tile"), "config.entity is not a list"),
        (line_with("config.entity", [["tile_f", "sp"]]), 'config.entity item ["tile_f", "sp"] is not [name, kind, value]'),
        (line_with("result", [[1e-4], 0, 1.0]), "result is not [costs, error_no, all_cost, timestamp]"),
        (line_with("result.0", []), "result costs is not a non-empty list"),
        (line_with("result.1", "0"), "result error_no is not an integer"),
        (line_with("result.1", 9), "result error_no 9 is not one of 0..8"),
        (line_with("result.2", -1), "result all_cost is not a non-negative number"),
        (line_with("result.3", "now"), "result timestamp is not a number"),
        (line_with("result.0", [1e-4, 0]), "result costs are not positive numbers"),
        (line_with("result.0", ["fast"]), "result costs are not positive numbers"),
    ],
)
def test_each_malformed_line_says_why(line, reason):
    with pytest.raises(LogLineError) as raised:
        parse_line(line)
    assert str(raised.value) == reason and not isinstance(raised.value, LegacyLineError)


def test_an_error_record_may_carry_any_costs():
    record = parse_line(line_with("result.0", [1e9]).replace('"result": [[1000000000.0], 0', '"result": [[1000000000.0], 4'))
    assert record.error_no == ErrorNo.RUNTIME_DEVICE and record.costs == ()


def test_target_model_reads_the_model_option():
    assert target_model("cuda -model=v100") == "v100"
    assert target_model("cuda -libs=cudnn -model=jetson-nano -arch=sm_53") == "jetson-nano"
    assert target_model("cuda") == "unknown"


def test_canonical_args_spell_equal_workloads_alike():
    assert canonical_args([["TENSOR", (1, 3), "float32"], (1, 1)]) == canonical_args([["TENSOR", [1, 3], "float32"], [1, 1]])
    assert canonical_args([{"b": 1, "a": 2}]) == '[{"a":2,"b":1}]'


def test_pick_best_keeps_the_first_of_equal_times_and_ignores_errors():
    first = parse_line(line_with("result.0", [2e-4]))
    tie = parse_line(line_with("config.index", 13).replace("[[0.0001, 0.0003]", "[[0.0002]"))
    failed = parse_line(line_with("result.1", 4).replace("[[0.0001, 0.0003]", "[[1e-09]"))
    other_gpu = parse_line(line_with("input.0", "cuda -model=h200"))
    best = pick_best([first, tie, failed, other_gpu])
    assert best[("v100", *first.workload_key)] is first
    assert best[("h200", *first.workload_key)] is other_gpu and len(best) == 2
