"""Passwords hashed with few PBKDF2 iterations in the test process: Django's million cost a
fifth of a second of CPU a user, and a run creates hundreds of users. The hashes stay
`pbkdf2_sha256` with their iteration count inside, so the web servers and workers tests start
(with the real settings) verify them as they are."""
import pytest
from django.contrib.auth.hashers import PBKDF2PasswordHasher
from django.test import override_settings


class FewIterationsPBKDF2(PBKDF2PasswordHasher):
    iterations = 1000


@pytest.fixture(scope="session", autouse=True)
def _fast_password_hashing():
    with override_settings(PASSWORD_HASHERS=[f"{__name__}.FewIterationsPBKDF2"]):
        yield
