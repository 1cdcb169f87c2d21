"""Third-party data the project keeps no copy of: `../shared/data` beside the checkout, or
wherever TUNERWEB_SHARED_DATA says."""
import os
from pathlib import Path

SHARED_DATA = Path(os.environ.get("TUNERWEB_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
