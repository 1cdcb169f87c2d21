"""The best rule is written twice on purpose, once for each side of the house: as SQL
(`MeasurementRecord.objects.best_per_gpu`) for pages and downloads, and in Python
(`engine.pick_best`) for the engine's own logs. They must pick the same record for every
(GPU, workload) of TVM's TopHub log."""
import pytest

from engine import pick_best, read_log_file
from records.importing import import_log
from records.models import MeasurementRecord

pytestmark = pytest.mark.django_db


def test_sql_and_pick_best_agree_on_every_tophub_workload(tophub_log):
    with tophub_log.open("rb") as stream:
        import_log(stream, tophub_log.name)
    in_python = pick_best(read_log_file(tophub_log).records)
    in_sql = {(r.device.model, r.workload.task_name, r.workload.args_json): r
              for r in MeasurementRecord.objects.best_per_gpu()}
    assert len(in_python) == len(in_sql) > 100
    assert set(in_python) == set(in_sql)
    for key, record in in_python.items():
        row = in_sql[key]
        assert (row.config_index, row.entity, row.mean_cost, row.timestamp) == (
            record.config_index, record.entity, record.mean_cost, record.timestamp), key
