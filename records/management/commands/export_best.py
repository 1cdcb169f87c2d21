"""Write the best config per (GPU model, workload) as an AutoTVM log."""
from records.exporting import best_lines

from ._export import ExportCommand


class Command(ExportCommand):
    help = "Write the best config per (GPU model, workload) as an AutoTVM log (stdout without -o)."
    lines = staticmethod(best_lines)
