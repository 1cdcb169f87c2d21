"""Import AutoTVM logs: `manage.py import_records FILE...`."""
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from records.importing import MAX_PROBLEMS, NotALogError, import_log
from records.models import ImportBatch


class Command(BaseCommand):
    help = "Import AutoTVM JSON-lines logs into the records manager; prints counts and each malformed line."

    def add_arguments(self, parser):
        parser.add_argument("files", nargs="+", metavar="FILE", help="log files to import")

    def handle(self, *args, files, **options):
        refused = 0
        for name in files:
            try:
                with Path(name).open("rb") as stream:
                    result = import_log(stream, Path(name).name, source=ImportBatch.Source.COMMAND)
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
                self.stdout.write(f"  line {problem['line']}: {problem['reason']}")
            if len(result.problems) >= MAX_PROBLEMS:
                self.stdout.write(f"  (only the first {MAX_PROBLEMS} problems are listed)")
        if refused:
            raise CommandError(f"{refused} of {len(files)} files refused")
