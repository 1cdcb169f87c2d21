from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"


@pytest.fixture
def tophub_log() -> Path:
    """TVM's TopHub CUDA log v0.08: 688 real records from five GPU models."""
    return DATA / "tophub_cuda_v0.08.log"


@pytest.fixture
def alice(django_user_model):
    return django_user_model.objects.create_user("alice", password="alice-password-1")


@pytest.fixture
def alice_client(client, alice):
    client.force_login(alice)
    return client
