from importlib.util import find_spec
from pathlib import Path

import pytest

from shared_data import SHARED_DATA

DATA = Path(__file__).parent / "data"

pytest_plugins = ["synthetic_fixtures"]
# The jobs fixtures start Celery workers against Redis and the test database; a GPU box that
# runs only the engine's tests (`pytest -m gpu`) may lack Django, Redis's client or pytest-django.
if find_spec("django") and find_spec("redis") and find_spec("pytest_django"):
    pytest_plugins += ["jobs_fixtures", "cache_fixtures", "fast_passwords"]


@pytest.fixture(scope="session")
def tophub_log() -> Path:
    """TVM's TopHub CUDA log v0.08: 688 real records from five GPU models."""
    path = SHARED_DATA / "tophub" / "cuda_v0.08.log"
    if not path.exists():
        pytest.fail(f"TVM's TopHub log is not at {path}: put ../shared/data beside the checkout "
                    "or set TUNERWEB_SHARED_DATA")
    return path


@pytest.fixture
def alice(django_user_model):
    return django_user_model.objects.create_user("alice", password="alice-password-1")


@pytest.fixture
def alice_client(client, alice):
    client.force_login(alice)
    return client
