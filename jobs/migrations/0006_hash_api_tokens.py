"""API tokens kept hashed: each stored key becomes its hash (jobs.tokens.hash_key), so the
keys people hold keep working and the table no longer holds a usable key."""
import hashlib

from django.db import migrations


def hash_keys(apps, schema_editor):
    Token = apps.get_model("authtoken", "Token")
    for key in list(Token.objects.values_list("key", flat=True)):
        # jobs.tokens.hash_key, written out: a migration must not change with the code.
        Token.objects.filter(key=key).update(key=hashlib.sha256(key.encode()).hexdigest()[:40])


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0005_job_idempotency_key"),
        ("authtoken", "0004_alter_tokenproxy_options"),
    ]

    operations = [migrations.RunPython(hash_keys, migrations.RunPython.noop)]
