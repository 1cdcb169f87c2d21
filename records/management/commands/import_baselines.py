"""Import baseline times: `manage.py import_baselines FILE [--format csv|json|log]`."""
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from records.baselines import FORMATS, BaselineFileError, detect_format, import_baselines
from records.models import ImportBatch


class Command(BaseCommand):
    help = "Import baseline times (cuDNN, cuBLAS, default config) from CSV, JSON or an engine log; see records/baselines.py."

    def add_arguments(self, parser):
        parser.add_argument("file", metavar="FILE")
        parser.add_argument("--format", choices=FORMATS, help="default: from the file extension")

    def handle(self, *args, file, format=None, **options):
        path = Path(file)
        try:
            fmt = format or detect_format(path.name)
            with path.open("rb") as stream:
                result = import_baselines(stream, fmt, file_name=path.name, source=ImportBatch.Source.COMMAND)
        except OSError as exc:
            raise CommandError(f"{file}: cannot read it: {exc.strerror or exc}") from None
        except BaselineFileError as exc:
            raise CommandError(f"{file}: refused: {exc}") from None
        self.stdout.write(f"{file}: {result.summary()} (batch {result.pk})")
        for problem in result.problems:
            self.stdout.write(f"  row {problem['line']}: {problem['reason']}")
