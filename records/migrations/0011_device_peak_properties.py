from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("records", "0010_importbatch_private_to"),
    ]

    operations = [
        migrations.AddField(
            model_name="device",
            name="clock_mhz",
            field=models.PositiveIntegerField(blank=True, help_text="peak SM clock", null=True),
        ),
        migrations.AddField(
            model_name="device",
            name="memory_clock_mhz",
            field=models.PositiveIntegerField(blank=True, help_text="peak memory clock", null=True),
        ),
        migrations.AddField(
            model_name="device",
            name="memory_bus_bits",
            field=models.PositiveIntegerField(blank=True, help_text="global memory bus width", null=True),
        ),
    ]
