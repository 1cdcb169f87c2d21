from django.conf import settings
from rest_framework.permissions import SAFE_METHODS, BasePermission


class ReadPublicWriteAuthenticated(BasePermission):
    """Reads are public when TUNERWEB_PUBLIC_READ is on; every write needs a user."""

    def has_permission(self, request, view) -> bool:
        authenticated = bool(request.user and request.user.is_authenticated)
        if request.method in SAFE_METHODS:
            return settings.TUNERWEB_PUBLIC_READ or authenticated
        return authenticated
