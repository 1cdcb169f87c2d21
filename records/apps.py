from django.apps import AppConfig


class RecordsConfig(AppConfig):
    name = "records"
    verbose_name = "Tuning records"

    def ready(self) -> None:
        from . import versions  # noqa: F401 - connects the signals that name an edit in place
