import sys
from pathlib import Path

# The jobs fixtures live one folder up (tests/jobs_fixtures.py).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
