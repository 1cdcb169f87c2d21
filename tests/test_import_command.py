import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from records.models import ImportBatch, MeasurementRecord

pytestmark = pytest.mark.django_db


def run(*args) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("import_records", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_it_imports_files_and_prints_their_counts(tophub_log, tmp_path):
    second = tmp_path / "mixed.log"
    second.write_text(tophub_log.read_text().splitlines()[0] + "\n{broken\n\n")
    out, err = run(str(tophub_log), str(second))
    assert f"{tophub_log}: 688 lines: 688 imported, 0 duplicates, 0 version 0.1 skipped, 0 malformed" in out
    assert f"{second}: 3 lines: 0 imported, 1 duplicates, 0 version 0.1 skipped, 1 malformed" in out
    assert "  line 2: not JSON (Expecting property name enclosed in double quotes at column 2)" in out
    assert err == "" and ImportBatch.objects.count() == 2


def test_a_missing_file_is_an_error_exit_not_a_traceback(tophub_log, tmp_path):
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(CommandError, match="1 of 2 files refused"):
        call_command("import_records", str(tmp_path / "missing.log"), str(tophub_log), stdout=out, stderr=err)
    assert f"{tmp_path / 'missing.log'}: cannot read it: No such file or directory" in err.getvalue()
    assert MeasurementRecord.objects.count() == 688


def test_a_file_that_is_not_a_log_is_refused_with_an_error_exit(tmp_path):
    photo = tmp_path / "photo.jpg"
    photo.write_bytes(b"\xff\xd8\xff\xe0\x00\x10JFIF\x00")
    err = io.StringIO()
    with pytest.raises(CommandError, match="1 of 1 files refused"):
        call_command("import_records", str(photo), stdout=io.StringIO(), stderr=err)
    assert "photo.jpg: refused: photo.jpg is not a text log" in err.getvalue()
    assert ImportBatch.objects.count() == 0


def test_a_directory_is_refused_cleanly(tmp_path):
    err = io.StringIO()
    with pytest.raises(CommandError):
        call_command("import_records", str(tmp_path), stdout=io.StringIO(), stderr=err)
    assert "cannot read it: Is a directory" in err.getvalue()


def test_the_committed_gzip_recording_imports(tmp_path):
    from pathlib import Path

    recording = Path(__file__).parent / "data" / "c12_h200_recording.log.gz"
    out, err = run(str(recording))
    assert f"{recording}: 2616 lines: " in out and err == ""
    batch = ImportBatch.objects.get()
    assert batch.lines == 2616 and batch.imported == MeasurementRecord.objects.count() > 2000
    assert set(MeasurementRecord.objects.values_list("device__model", flat=True)) == {"h200"}
    assert MeasurementRecord.objects.filter(error_no=0).exists()


def test_a_truncated_gzip_is_refused_and_nothing_is_kept(tmp_path):
    from pathlib import Path

    cut = tmp_path / "cut.log.gz"
    log = (Path(__file__).parent / "data" / "c12_h200_recording.log.gz").read_bytes()
    cut.write_bytes(log[:len(log) // 2])
    err = io.StringIO()
    with pytest.raises(CommandError, match="1 of 1 files refused"):
        call_command("import_records", str(cut), stdout=io.StringIO(), stderr=err)
    assert "cut.log.gz is not" in err.getvalue()
    assert ImportBatch.objects.count() == 0 and MeasurementRecord.objects.count() == 0
