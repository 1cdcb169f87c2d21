"""API tokens (`Authorization: Token <key>`), kept hashed: DRF's Token row holds the
sha256 of the key, not the key, so a copy of the database authenticates nobody. The key
itself is shown once, when it is made."""
from __future__ import annotations

import hashlib
import secrets

from django.db import transaction
from rest_framework.authentication import TokenAuthentication
from rest_framework.authtoken.models import Token

# Token.key holds 40 characters: the first 160 bits of the sha256 of a 160-bit random key.
_STORED_CHARS = 40


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:_STORED_CHARS]


def issue_token(user) -> str:
    """A new key for `user`, replacing any earlier one (which stops working); only its hash is kept."""
    key = secrets.token_hex(20)
    with transaction.atomic():
        Token.objects.filter(user=user).delete()
        Token.objects.create(user=user, key=hash_key(key))
    return key


class HashedTokenAuthentication(TokenAuthentication):
    """DRF's token authentication, looking the key up by its hash."""

    def authenticate_credentials(self, key):
        return super().authenticate_credentials(hash_key(key))
