"""A workload's leaderboard on PostgreSQL with a million records.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/tunerweb_bench \\
        .venv/bin/python -m benchmarks.leaderboard_pg [--records 1000000] [--keep]

Drops and re-creates the database DATABASE_URL names (its name must contain
"bench", so a real database is never dropped), migrates it, and fills it with
synthetic records (benchmarks/synthetic_log.py: ResNet-18 and MobileNet layers on
eight GPU models, one trial in eight failed):

- the first 100,000 through `records.importing.import_log`, as an upload would go,
  to time the importer on PostgreSQL;
- the rest with COPY, straight into the records table (fingerprints are hashes of
  the row number: these rows never meet a re-import).

Then (after VACUUM ANALYZE, as autovacuum would run) for the workload with the
most records it times the
best-per-GPU query (`MeasurementRecord.objects.best_per_gpu`) and the page `/leaderboard/<pk>/`
rendered through django.test.Client (plain and sorted by other columns; the records
page and the dashboard sorted too), each the median of several warm runs, and
prints the query plan of the best-per-GPU query. Without --keep the database is
dropped at the end.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import dj_database_url
import psycopg

IMPORTED = 100_000
GPUS = {
    "h200": 9000.0, "h100": 8500.0, "a100": 7000.0, "l40s": 6000.0,
    "rtx4090": 8000.0, "v100": 4500.0, "t4": 2000.0, "jetson-orin": 900.0,
}
RUNS = 7


def recreate_database(url: str) -> None:
    config = dj_database_url.parse(url)
    name = config["NAME"]
    if "bench" not in name:
        raise SystemExit(f"refusing to drop database {name!r}: its name must contain 'bench'")
    admin = dict(dbname="postgres", user=config["USER"], password=config["PASSWORD"] or None, host=config["HOST"], port=config["PORT"] or None)
    with psycopg.connect(**{k: v for k, v in admin.items() if v}, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')


def drop_database(url: str) -> None:
    from django.db import connections

    connections.close_all()
    config = dj_database_url.parse(url)
    admin = dict(dbname="postgres", user=config["USER"], password=config["PASSWORD"] or None, host=config["HOST"], port=config["PORT"] or None)
    with psycopg.connect(**{k: v for k, v in admin.items() if v}, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{config["NAME"]}"')


def timed(label: str, action, runs: int = RUNS) -> float:
    action()  # warm: caches, the plan, Django's template loader
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    median = statistics.median(times)
    print(f"{label}: median {median * 1e3:.1f} ms over {runs} runs (min {min(times) * 1e3:.1f}, max {max(times) * 1e3:.1f})")
    return median


def import_through_importer(count: int) -> None:
    from engine.logfile import write_records
    from records.importing import import_log

    from benchmarks.synthetic_log import synthetic_records

    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "bench.log"
        with log.open("w") as stream:
            write_records(stream, synthetic_records(count, seed=1, gpus=GPUS))
        started = time.perf_counter()
        with log.open("rb") as stream:
            result = import_log(stream, "bench.log")
        seconds = time.perf_counter() - started
    print(f"import_log on PostgreSQL: {result.summary()}; {seconds:.1f} s, {count / seconds:,.0f} records/s")


COLUMNS = (
    "device_id", "workload_id", "target", "config_index", "entity", "costs", "mean_cost", "gflops", "error_no",
    "error_msg", "all_cost", "timestamp", "tvm_version", "code_hash", "kwargs", "batch_id", "fingerprint",
    "kind", "cache", "environment",
)


def copy_records(count: int) -> None:
    from django.db import connection

    from records.importing import Catalog
    from records.models import ImportBatch, MeasurementRecord

    from benchmarks.synthetic_log import synthetic_records, workloads

    catalog = Catalog()
    # Look every device and workload up now: no other query may run on the connection during COPY.
    for model in GPUS:
        catalog.device_id(model)
    for task, args in workloads():
        catalog.workload(task, args)
    batch = ImportBatch.objects.create(file_name="copy-fill (benchmark)", lines=count, imported=count)
    table = MeasurementRecord._meta.db_table
    started = time.perf_counter()
    with connection.cursor() as cursor, cursor.connection.cursor() as raw:
        with raw.copy(f"COPY {table} ({', '.join(COLUMNS)}) FROM STDIN") as copy:
            for number, record in enumerate(synthetic_records(count, seed=2, gpus=GPUS)):
                workload, _ = catalog.workload(record.task_name, record.args)
                copy.write_row((
                    catalog.device_id(record.model), workload.pk, record.target, record.config_index,
                    json.dumps(record.entity), json.dumps(list(record.costs)), record.mean_cost,
                    workload.gflops(record.mean_cost), int(record.error_no), record.error_msg, record.all_cost,
                    record.timestamp, record.tvm_version, None, "{}", batch.pk,
                    hashlib.sha256(f"copy-fill-{number}".encode()).hexdigest(), "tuning", "warm", "{}",
                ))
        # What autovacuum would soon do: statistics, and the visibility map that lets
        # index-only scans skip the table.
        raw.execute(f"VACUUM ANALYZE {table}")
    seconds = time.perf_counter() - started
    print(f"COPY fill: {count:,} records in {seconds:.1f} s, {count / seconds:,.0f} records/s (generation included)")


def measure() -> None:
    from django.db import connection
    from django.db.models import Count
    from django.test import Client
    from django.urls import NoReverseMatch, reverse

    from records.models import MeasurementRecord, Workload

    total = MeasurementRecord.objects.count()
    workload = Workload.objects.annotate(n=Count("records")).order_by("-n").first()
    print(f"{total:,} records, {Workload.objects.count()} workloads; leaderboard of workload {workload.pk} "
          f"({workload}) with {workload.n:,} records")

    def best_per_gpu():
        return list(MeasurementRecord.objects.filter(workload=workload).best_per_gpu())

    timed(f"best per GPU query ({len(best_per_gpu())} GPUs)", best_per_gpu)
    with connection.cursor() as cursor:
        sql, params = MeasurementRecord.objects.filter(workload=workload).best_per_gpu().query.sql_with_params()
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params)
        print("plan of the best-per-GPU query:")
        for (line,) in cursor.fetchall():
            print("    " + line)
    try:
        url = reverse("records:leaderboard", args=[workload.pk])
    except NoReverseMatch:
        print("the leaderboard page does not exist yet: only the query was timed")
        return
    client = Client()
    # The plain page, then sorted by other columns (server side, before paginating), the
    # records page sorted by % of peak across every workload, and the dashboard sorted.
    urls = [url] + [f"{url}?sort={column}" for column in ("-median", "-gflops", "-peak", "-n", "gpu")]
    urls += [f"{url}?best_sort=-peak", reverse("records:record_list") + "?sort=-peak", reverse("records:home")]
    urls += [reverse("records:home") + f"?sort={column}" for column in ("-gflops", "-gpus", "on")]
    for each in urls:
        response = client.get(each)
        assert response.status_code == 200, (each, response.status_code)
        timed(f"GET {each} ({len(response.content):,} bytes)", lambda: client.get(each))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--keep", action="store_true", help="leave the database in place afterwards")
    options = parser.parse_args()
    url = os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/tunerweb_bench")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tunerweb.settings")
    recreate_database(url)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    imported = min(IMPORTED, options.records)
    import_through_importer(imported)
    copy_records(options.records - imported)
    measure()
    if not options.keep:
        drop_database(url)


if __name__ == "__main__":
    main()
