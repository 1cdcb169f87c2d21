"""`python -m engine`: each subcommand, and each user mistake as one line with exit status 2."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from engine.cli import main
from engine.logfile import read_records
from engine.workloads import get_preset

from synthetic_fixtures import c12_recording, write_recording

ROOT = Path(__file__).resolve().parent.parent
C12 = get_preset("C12")
C12_ARGS = json.dumps(C12.args)


@pytest.fixture
def recording(tmp_path):
    return write_recording(tmp_path / "c12.log")


def test_space_prints_the_config_space(capsys):
    assert main(["space", "conv2d_nchw.cuda", C12_ARGS]) == 0
    out = capsys.readouterr().out
    assert out.startswith("ConfigSpace (len=844800, space_map=")
    assert "tile_f: Split(policy=factors, product=512, num_outputs=4) len=220" in out


def test_tune_against_a_recording_logs_each_trial_and_prints_the_best(tmp_path, recording, capsys):
    log = tmp_path / "out.log"
    status = main(["tune", "conv2d_nchw.cuda", C12_ARGS, "--measurer", "replay", "--recording", recording,
                   "--tuner", "random", "--trials", "40", "--seed", "1", "--log", str(log)])
    captured = capsys.readouterr()
    assert status == 0
    assert captured.out.startswith("best ") and "GFLOPS" in captured.out and "(40 trials measured)" in captured.out
    assert "[conv2d_nchw.cuda] trials 40/40" in captured.err
    with open(log, encoding="utf-8") as stream:
        assert len(read_records(stream)) == 40


def test_replay_tunes_the_task_of_a_recording(recording, capsys):
    assert main(["replay", recording, "--tuner", "xgb", "--trials", "80", "--seed", "0"]) == 0
    assert "(80 trials measured)" in capsys.readouterr().out


def test_best_writes_one_line_per_gpu_and_workload(tmp_path, tophub_log, recording, capsys):
    out = tmp_path / "best.log"
    assert main(["best", str(tophub_log), recording, "-o", str(out)]) == 0
    with open(out, encoding="utf-8") as stream:
        best = read_records(stream)
    keys = [(r.model, *r.workload_key) for r in best]
    assert len(keys) == len(set(keys))
    c12_best = next(r for r in best if r.model == "synthetic-h200")
    assert c12_best.mean_cost == min(r.mean_cost for r in c12_recording() if r.ok)
    assert f"{len(best)} best records (of {688 + len(c12_recording())} read)" in capsys.readouterr().err


def test_python_dash_m_engine_runs_the_cli():
    done = subprocess.run([sys.executable, "-m", "engine", "space", "conv2d_nchw.cuda", C12_ARGS],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("ConfigSpace (len=844800")


def conv_args(data=(1, 512, 7, 7), kernel=(512, 512, 3, 3)):
    return json.dumps([["TENSOR", list(data), "float32"], ["TENSOR", list(kernel), "float32"],
                       [1, 1], [1, 1, 1, 1], [1, 1], "float32"])


@pytest.mark.parametrize("argv, message", [
    (["space", "conv3d.cuda", C12_ARGS], "unknown template 'conv3d.cuda'; known templates: broadcast_nchw, conv2d_nchw.cuda"),
    (["space", "conv2d_nchw.cuda", "[1, 2"], "ARGS_JSON: args are not valid JSON"),
    (["space", "conv2d_nchw.cuda", '{"n": 1}'], "ARGS_JSON: args must be a JSON list"),
    (["space", "conv2d_nchw.cuda", conv_args(data=(1, 512, 0, 7))], "non-positive"),
    (["space", "conv2d_nchw.cuda", json.dumps(C12.args[:2])], "args are"),
    (["tune", "conv2d_nchw.cuda", C12_ARGS, "--tuner", "anneal", "--measurer", "replay", "--recording", "{rec}"],
     "unknown tuner 'anneal'; valid tuners: ga, grid, random, xgb"),
    (["tune", "conv2d_nchw.cuda", C12_ARGS, "--measurer", "replay"], "--measurer replay needs --recording FILE"),
    (["tune", "conv2d_nchw.cuda", C12_ARGS, "--measurer", "tpu"], "unknown measurer 'tpu'; valid measurers: gpu, replay"),
    (["replay", "{missing}"], "absent.log: No such file or directory"),
    (["best", "{missing}"], "absent.log: No such file or directory"),
    (["best", "{junk}"], "junk.log holds no version 0.2 tuning records (line 1: not JSON"),
    (["best", "{binary}"], "bin.log is not a UTF-8 text log"),
    (["replay", "{binary}"], "bin.log is not a UTF-8 text log"),
    (["tune", "conv2d_nchw.cuda", C12_ARGS, "--measurer", "replay", "--recording", "{binary}"],
     "bin.log is not a UTF-8 text log"),
    (["tune", "conv2d_nchw.cuda", C12_ARGS, "--measurer", "replay", "--recording", "{rec}", "--log", "{binary}"],
     "bin.log is not a UTF-8 text log"),
    # The tuner is checked before the GPU measurer starts (none starts on this machine).
    (["tune", "conv2d_nchw.cuda", C12_ARGS, "--tuner", "anneal"], "unknown tuner 'anneal'"),
])
def test_a_user_mistake_is_one_error_line_and_exit_status_2(argv, message, tmp_path, recording, capsys):
    (tmp_path / "junk.log").write_text("this is not a log\n")
    (tmp_path / "bin.log").write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe binary \x00\x81")
    paths = {"{rec}": recording, "{missing}": str(tmp_path / "absent.log"), "{junk}": str(tmp_path / "junk.log"),
             "{binary}": str(tmp_path / "bin.log")}
    assert main([paths.get(arg, arg) for arg in argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize("flag", ["--trials", "--early-stopping"])
def test_a_non_positive_count_is_refused_by_the_argument_parser(flag, recording, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["replay", recording, flag, "0"])
    assert exit_info.value.code == 2
    assert "0 is not a positive integer" in capsys.readouterr().err
