"""How fast `records.importing.import_log` takes a large log.

    .venv/bin/python -m benchmarks.import_rate [--records 100000] [--database-url URL]

Writes a synthetic log (benchmarks/synthetic_log.py: ResNet-18 and MobileNet layers
on five GPU models, one trial in eight failed) to a temporary file, migrates a fresh
database (a temporary SQLite file unless --database-url names another), imports the
file once from disk as `import_records` would, and prints records per second (wall
clock) with the CPU time of this process beside it (the database is in-process for
SQLite; the gap is time waiting for the disk or for other processes on the machine).
It then imports the same file again, which must add nothing, and prints that rate too.
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--database-url", help="default: a new SQLite file in a temporary folder")
    options = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="tunerweb-bench-") as folder:
        os.environ["DATABASE_URL"] = options.database_url or f"sqlite:///{Path(folder) / 'bench.sqlite3'}"
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tunerweb.settings")
        import django

        django.setup()
        from django.core.management import call_command

        from benchmarks.synthetic_log import synthetic_records
        from engine.logfile import write_records
        from records.importing import import_log

        call_command("migrate", verbosity=0)
        log = Path(folder) / "synthetic.log"
        started = time.perf_counter()
        with log.open("w") as stream:
            write_records(stream, synthetic_records(options.records))
        print(f"wrote {options.records:,} records ({log.stat().st_size / 1e6:.1f} MB) in {time.perf_counter() - started:.1f} s")

        for label in ("first import", "re-import (all duplicates)"):
            started, cpu_started = time.perf_counter(), time.process_time()
            with log.open("rb") as stream:
                result = import_log(stream, log.name)
            seconds, cpu = time.perf_counter() - started, time.process_time() - cpu_started
            print(f"{label}: {result.summary()}")
            print(f"{label}: {seconds:.2f} s wall, {result.lines / seconds:,.0f} records/s ({cpu:.2f} s CPU in this process)")


if __name__ == "__main__":
    main()
