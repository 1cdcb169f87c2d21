import os
from importlib.util import find_spec
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).parent / "data"
# Third-party data the project keeps no copy of: `../shared/data` beside the checkout, or
# wherever TUNERWEB_SHARED_DATA says.
SHARED_DATA = Path(os.environ.get("TUNERWEB_SHARED_DATA", ROOT.parent / "shared" / "data"))

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
