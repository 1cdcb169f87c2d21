"""API tokens (DRF's TokenAuthentication: `Authorization: Token <key>`)."""
from __future__ import annotations

from django.db import transaction
from rest_framework.authtoken.models import Token


def token_for(user, renew: bool = False) -> Token:
    """The user's token, made if missing; `renew` replaces it, so the old key stops working."""
    with transaction.atomic():
        if renew:
            Token.objects.filter(user=user).delete()
        return Token.objects.get_or_create(user=user)[0]
