"""Workloads told apart by the sha256 of their canonical args, not by an index on the args
themselves: PostgreSQL's btree caps an index row at about 2.7 KB, and a custom kernel's args
hold its whole source. Works the same on SQLite."""
import hashlib

from django.db import migrations, models


def fill_digests(apps, schema_editor):
    Workload = apps.get_model("records", "Workload")
    for pk, args_json in Workload.objects.values_list("pk", "args_json").iterator():
        digest = hashlib.sha256(args_json.encode("utf-8", "surrogatepass")).hexdigest()
        Workload.objects.filter(pk=pk).update(args_digest=digest)


class Migration(migrations.Migration):

    dependencies = [
        ("records", "0007_fill_conv2d_bytes_moved"),
    ]

    operations = [
        migrations.AddField(
            model_name="workload",
            name="args_digest",
            field=models.CharField(default="", editable=False, max_length=64,
                                   help_text="sha256 of args_json: what tells workloads apart"),
            preserve_default=False,
        ),
        migrations.RunPython(fill_digests, migrations.RunPython.noop),
        migrations.RemoveConstraint(model_name="workload", name="unique_workload"),
        migrations.AlterField(
            model_name="workload",
            name="args_digest",
            field=models.CharField(db_index=True, editable=False, max_length=64,
                                   help_text="sha256 of args_json: what tells workloads apart"),
        ),
        migrations.AlterField(
            model_name="workload",
            name="args_json",
            field=models.TextField(help_text="canonical JSON of the task's args, whole"),
        ),
        migrations.AddConstraint(
            model_name="workload",
            constraint=models.UniqueConstraint(fields=("task_name", "args_digest"), name="unique_workload_digest"),
        ),
    ]
