"""What export_best and export_records share: the filters and where the lines go."""
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from records.exporting import ExportFilter, ExportFilterError
from records.visibility import ALL_RECORDS


class ExportCommand(BaseCommand):
    lines = None  # a function from ExportFilter to an iterator of log lines

    def add_arguments(self, parser):
        parser.add_argument("--workload", metavar="ID", help="only this workload id")
        parser.add_argument("--task", metavar="T", help="only this task name, e.g. conv2d_nchw.cuda")
        parser.add_argument("--device", metavar="MODEL", help="only this GPU model, e.g. v100")
        parser.add_argument("--batch", metavar="ID", help="only records of this import batch")
        parser.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")

    def handle(self, *args, output=None, **options):
        try:
            selection = ExportFilter.from_params(options, viewer=ALL_RECORDS)
        except ExportFilterError as exc:
            raise CommandError(str(exc)) from None
        if output is None:
            self._write(self.stdout, selection)
            return
        try:
            with Path(output).open("w", encoding="utf-8") as stream:
                count = self._write(stream, selection)
        except OSError as exc:
            raise CommandError(f"cannot write {output}: {exc.strerror or exc}") from None
        self.stderr.write(f"{count} records written to {output} ({selection.describe()})")

    def _write(self, stream, selection) -> int:
        count = -1  # the first line is a header comment
        for line in self.lines(selection):
            stream.write(line)
            count += 1
        return count
