"""Import confirmations: `manage.py import_confirmations FILE.json` (what `benchmarks/verify_bests.py --json` writes)."""
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from records.confirmations import ConfirmationFileError, import_confirmations


class Command(BaseCommand):
    help = "Import re-measured bests (benchmarks/verify_bests.py --json) as confirmation records and baselines."

    def add_arguments(self, parser):
        parser.add_argument("file", metavar="FILE")

    def handle(self, *args, file, **options):
        path = Path(file)
        try:
            batch = import_confirmations(path.read_text(encoding="utf-8"), path.name)
        except OSError as exc:
            raise CommandError(f"{file}: cannot read it: {exc.strerror or exc}") from None
        except (ConfirmationFileError, UnicodeDecodeError) as exc:
            raise CommandError(f"{file}: refused: {exc}") from None
        self.stdout.write(f"{file}: {batch.imported} confirmation records (batch {batch.pk})")
