"""Write every selected record as an AutoTVM log, a Kernel Tuner cache file or T4 results."""
from pathlib import Path

from django.core.management.base import CommandError

from records.exporting import ExportFilter, ExportFilterError, record_lines
from records.kernel_tuner_export import FORMATS, kernel_tuner_text
from records.visibility import ALL_RECORDS

from ._export import ExportCommand


class Command(ExportCommand):
    help = ("Write every selected record as an AutoTVM log (the default), or, for one workload on one GPU, "
            "as a Kernel Tuner cache file (--format kernel-tuner) or T4 results (--format t4); stdout without -o.")
    lines = staticmethod(record_lines)

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("--format", default="autotvm", choices=["autotvm", *FORMATS],
                            help="autotvm (default), kernel-tuner or t4")

    def handle(self, *args, output=None, format="autotvm", **options):
        if format == "autotvm":
            return super().handle(*args, output=output, **options)
        try:
            text, count = kernel_tuner_text(ExportFilter.from_params(options, viewer=ALL_RECORDS), format)
        except ExportFilterError as exc:
            raise CommandError(str(exc)) from None
        if output is None:
            self.stdout.write(text)
            return
        try:
            Path(output).write_text(text + "\n", encoding="utf-8")
        except OSError as exc:
            raise CommandError(f"cannot write {output}: {exc.strerror or exc}") from None
        self.stderr.write(f"{count} records written to {output} as {format}")
