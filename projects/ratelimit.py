"""Login rate limiting: after too many failed attempts for one username from one address,
that pair is locked out for a while. Counted in the cache (Redis in production), so it
holds across web processes; every lockout is logged on the `rta.security` logger.
"""

from __future__ import annotations

import hashlib
import logging

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import AuthenticationForm
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse

logger = logging.getLogger("rta.security")


def _limits() -> tuple[int, int]:
    return getattr(settings, "RTA_LOGIN_MAX_FAILURES", 5), getattr(settings, "RTA_LOGIN_LOCKOUT_SECONDS", 15 * 60)


def client_address(request: HttpRequest | None) -> str:
    # REMOTE_ADDR only: X-Forwarded-For is client-controlled unless a trusted proxy rewrites REMOTE_ADDR.
    return (request.META.get("REMOTE_ADDR") if request is not None else "") or "unknown"


def _key(username: str, address: str) -> str:
    digest = hashlib.sha256(f"{username.strip().lower()}\0{address}".encode()).hexdigest()[:32]
    return f"rta:login-failures:{digest}"


def login_failures(username: str, address: str) -> int:
    return int(cache.get(_key(username, address), 0))


def login_failure_record(username: str, address: str) -> int:
    """Count one failed attempt; the window starts at the first failure."""
    _, window = _limits()
    return count_in_window(_key(username, address), window)


def count_in_window(key: str, window: int) -> int:
    """Add one to the cache counter `key`, whose window of `window` seconds starts at its first count; the new count."""
    cache.add(key, 0, timeout=window)
    try:
        return cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.set(key, 1, timeout=window)
        return 1


def login_failures_clear(username: str, address: str) -> None:
    cache.delete(_key(username, address))


class RateLimitedAuthenticationForm(AuthenticationForm):
    """Django's login form, refusing a username+address pair after too many failures."""

    error_messages = {
        **AuthenticationForm.error_messages,
        "locked": (
            "Too many failed attempts to log in as “%(username)s” from your network. "
            "For your account's safety, logging in is paused for %(minutes)d minutes. "
            "Ask a project owner or your administrator if you have forgotten your password."
        ),
    }

    def clean(self):
        username = self.cleaned_data.get("username") or ""
        address = client_address(self.request)
        limit, window = _limits()
        if username and login_failures(username, address) >= limit:
            raise ValidationError(self.error_messages["locked"], code="locked",
                                  params={"username": username, "minutes": window // 60})
        try:
            cleaned = super().clean()
        except ValidationError:
            if username and login_failure_record(username, address) == limit:
                logger.warning("Login locked out for username=%r from %s after %d failures", username, address, limit)
            raise
        login_failures_clear(username, address)
        return cleaned


class RateLimitedLoginView(auth_views.LoginView):
    authentication_form = RateLimitedAuthenticationForm

    def form_invalid(self, form) -> HttpResponse:
        response = super().form_invalid(form)
        if form.has_error("__all__", code="locked"):
            response.status_code = 429
        return response
