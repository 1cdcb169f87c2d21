"""Import tuning records: `manage.py import_records FILE... [--device MODEL] [--metadata FILE]`."""
from contextlib import nullcontext
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from records.import_formats import import_file
from records.importing import MAX_PROBLEMS, NotALogError
from records.models import ImportBatch


class Command(BaseCommand):
    help = (
        "Import AutoTVM JSON-lines logs (plain or gzip), Kernel Tuner cache files (complete or unterminated), "
        "T4 results and Kernel Tuner results files; the format is detected. Prints counts and each malformed line."
    )

    def add_arguments(self, parser):
        parser.add_argument("files", nargs="+", metavar="FILE", help="files to import")
        parser.add_argument("--device", metavar="MODEL",
                            help="the GPU model of Kernel Tuner files (needed where the file names none, e.g. mi250x)")
        parser.add_argument("--metadata", metavar="FILE",
                            help="T4 results: its metadata file (names the GPU) or the kernel's T1 input file")

    def handle(self, *args, files, device=None, metadata=None, **options):
        refused = 0
        for name in files:
            try:
                with Path(name).open("rb") as stream, _optional(metadata) as meta:
                    result = import_file(stream, Path(name).name, source=ImportBatch.Source.COMMAND,
                                         device=device, metadata=meta)
            except OSError as exc:
                refused += 1
                self.stderr.write(f"{name}: cannot read it: {exc.strerror or exc}")
                continue
            except NotALogError as exc:
                refused += 1
                self.stderr.write(f"{name}: refused: {exc}")
                continue
            self.stdout.write(f"{name}: {result.summary()} (batch {result.pk})")
            for problem in result.problems:
                where = f"line {problem['line']}" if "line" in problem else f"entry {problem['entry']}"
                self.stdout.write(f"  {where}: {problem['reason']}")
            if len(result.problems) >= MAX_PROBLEMS:
                self.stdout.write(f"  (only the first {MAX_PROBLEMS} problems are listed)")
        if refused:
            raise CommandError(f"{refused} of {len(files)} files refused")


def _optional(path):
    return Path(path).open("rb") if path else nullcontext()
