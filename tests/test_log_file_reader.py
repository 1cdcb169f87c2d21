"""engine.logfile.read_log_file: the one reader of log files (plain or gzipped) for the CLI, replay and tuning."""
import gzip

import pytest

from engine.logfile import LogFileError, format_record, log_lines, read_log_file
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


@pytest.mark.parametrize("name", ["c12.log.gz", "c12.log"])
def test_it_reads_a_gzipped_log_by_its_bytes_whatever_its_name(tmp_path, name):
    records = list(c12_recording()[:5])
    path = tmp_path / name
    with gzip.open(path, "wt", encoding="utf-8") as stream:
        stream.write(log_text(records))
    assert read_log_file(str(path)).records == records


def test_it_refuses_a_binary_file_as_not_utf8(tmp_path):
    path = tmp_path / "bin.log"
    path.write_bytes(BINARY)
    with pytest.raises(LogFileError, match=r"bin\.log is not a UTF-8 text log"):
        read_log_file(path)


def test_a_plain_file_named_gz_reads_as_the_plain_log_it_is(tmp_path):
    path = tmp_path / "plain.log.gz"
    path.write_text(log_text(c12_recording()[:1]), encoding="utf-8")
    assert read_log_file(path).records == list(c12_recording()[:1])


def test_it_refuses_a_truncated_gzip(tmp_path):
    path = tmp_path / "cut.log.gz"
    path.write_bytes(gzip.compress(log_text(c12_recording()[:50]).encode())[:200])
    with pytest.raises(LogFileError, match=r"cut\.log\.gz is not a readable gzip file"):
        read_log_file(path)


def test_a_stream_that_cannot_seek_is_read_alike():
    import io

    class OneWay(io.RawIOBase):
        def __init__(self, data):
            self.data = io.BytesIO(data)

        def readable(self):
            return True

        def seekable(self):
            return False

        def readinto(self, buffer):
            return self.data.readinto(buffer)

    text = log_text(c12_recording()[:3])
    for data in (text.encode(), gzip.compress(text.encode())):
        assert b"".join(log_lines(OneWay(data))) == text.encode()


def test_a_missing_file_is_an_os_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_log_file(tmp_path / "absent.log")


def test_a_binary_recording_is_a_recording_error_for_replay(tmp_path):
    path = tmp_path / "bin.log"
    path.write_bytes(BINARY)
    with pytest.raises(RecordingError, match="is not a UTF-8 text log"):
        load_recording(path)
