from functools import wraps

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from rest_framework.permissions import SAFE_METHODS, BasePermission


class ReadPublicWriteAuthenticated(BasePermission):
    """Reads are public when TUNERWEB_PUBLIC_READ is on; every write needs a user."""

    def has_permission(self, request, view) -> bool:
        authenticated = bool(request.user and request.user.is_authenticated)
        if request.method in SAFE_METHODS:
            return settings.TUNERWEB_PUBLIC_READ or authenticated
        return authenticated


def public_read(view):
    """A read-only page: open to all when TUNERWEB_PUBLIC_READ is on, else to logged-in users."""

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        if not (settings.TUNERWEB_PUBLIC_READ or request.user.is_authenticated):
            return redirect_to_login(request.get_full_path())
        return view(request, *args, **kwargs)

    return wrapped
