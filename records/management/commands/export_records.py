"""Write every selected record as an AutoTVM log."""
from records.exporting import record_lines

from ._export import ExportCommand


class Command(ExportCommand):
    help = "Write every selected record as an AutoTVM log (stdout without -o)."
    lines = staticmethod(record_lines)
