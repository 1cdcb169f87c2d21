"""The GPU subcommands' user mistakes end in one error line and exit status 2, on machines without a GPU too."""
import json
import sys

import pytest

from engine.cli import main
from engine.workloads import get_preset

from synthetic_fixtures import write_recording

C12_ARGS = json.dumps(get_preset("C12").args)
G3_ARGS = json.dumps(get_preset("G3").args)


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    return err


def test_apply_best_without_cupy_says_what_it_needs(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "cupy", None)  # as on a machine where CuPy is not installed
    log = write_recording(tmp_path / "c12.log")
    assert main(["apply-best", log, "conv2d_nchw.cuda", C12_ARGS]) == 2
    assert "apply-best needs CuPy and a CUDA GPU" in one_error_line(capsys)


def test_apply_best_refuses_a_binary_log_before_looking_for_a_gpu(tmp_path, capsys):
    log = tmp_path / "bin.log"
    log.write_bytes(b"\xff\xfe\x00\x01")
    assert main(["apply-best", str(log), "conv2d_nchw.cuda", C12_ARGS]) == 2
    assert "bin.log is not a UTF-8 text log" in one_error_line(capsys)


def test_baseline_refuses_a_vendor_library_the_template_is_not_held_against(capsys):
    assert main(["baseline", "gemm", G3_ARGS, "--provider", "cudnn"]) == 2
    assert "gemm has no cudnn baseline (its vendor baseline: cublas)" in one_error_line(capsys)


def test_baseline_offers_cublas_among_its_providers(capsys):
    with pytest.raises(SystemExit):
        main(["baseline", "--help"])
    assert "cublas" in capsys.readouterr().out
