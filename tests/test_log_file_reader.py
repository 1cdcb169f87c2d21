"""engine.records.read_log_file: the one reader of log files (plain or gzipped) for the CLI, replay and tuning."""
import gzip

import pytest

from engine.records import LogFileError, format_record, read_log_file
from engine.replay import RecordingError, load_recording

from synthetic_fixtures import c12_recording

BINARY = b"\x89PNG\r\n\x1a\n\xff\xfe\x00 not text"


def log_text(records, extra=""):
    return "".join(format_record(r) + "\n" for r in records) + extra


def test_it_reads_a_plain_log_and_reports_each_bad_line_with_its_number(tmp_path):
    records = list(c12_recording()[:3])
    path = tmp_path / "c12.log"
    path.write_text(log_text(records, "not json\n# a comment\n"), encoding="utf-8")
    log = read_log_file(path)
    assert log.records == records
    assert [lineno for lineno, _ in log.bad_lines] == [4]
    assert "not JSON" in str(log.bad_lines[0][1])


def test_it_reads_a_gzipped_log_by_its_name(tmp_path):
    records = list(c12_recording()[:5])
    path = tmp_path / "c12.log.gz"
    with gzip.open(path, "wt", encoding="utf-8") as stream:
        stream.write(log_text(records))
    assert read_log_file(str(path)).records == records


def test_it_refuses_a_binary_file_as_not_utf8(tmp_path):
    path = tmp_path / "bin.log"
    path.write_bytes(BINARY)
    with pytest.raises(LogFileError, match=r"bin\.log is not a UTF-8 text log"):
        read_log_file(path)


def test_it_refuses_a_plain_file_named_gz(tmp_path):
    path = tmp_path / "plain.log.gz"
    path.write_text(log_text(c12_recording()[:1]), encoding="utf-8")
    with pytest.raises(LogFileError, match=r"plain\.log\.gz is not a readable gzip file"):
        read_log_file(path)


def test_a_missing_file_is_an_os_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_log_file(tmp_path / "absent.log")


def test_a_binary_recording_is_a_recording_error_for_replay(tmp_path):
    path = tmp_path / "bin.log"
    path.write_bytes(BINARY)
    with pytest.raises(RecordingError, match="is not a UTF-8 text log"):
        load_recording(path)
