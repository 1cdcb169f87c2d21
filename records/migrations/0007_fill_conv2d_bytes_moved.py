# The direct conv2d templates count their least bytes moved now (for the roofline):
# workloads stored before get them by the engine's rule, as an import would give them.
import importlib

from django.db import migrations

fill_bytes_moved = importlib.import_module("records.migrations.0004_workload_bytes_moved").fill_bytes_moved


class Migration(migrations.Migration):

    dependencies = [
        ('records', '0006_config_and_confirmation_indexes'),
    ]

    operations = [
        migrations.RunPython(fill_bytes_moved, migrations.RunPython.noop),
    ]
