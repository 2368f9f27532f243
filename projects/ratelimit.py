"""Login rate limiting: after too many failed attempts for one username from one address,
that pair is locked out for a while; after many more failures from one address over all
usernames (password spraying), that address is. Counted in the cache (Redis in production),
so it holds across web processes; every lockout is logged on the `rta.security` logger.

Keying on username and address means an attacker who fails on someone's account locks out
only themselves: the account's owner, from another address, still logs in. Behind a reverse
proxy the address is the client's only when the proxy is listed in TRUSTED_PROXIES
(projects.middleware.TrustedProxyMiddleware); otherwise every user shares the proxy's.
The app's login page and the admin's share the same counters.
"""

from __future__ import annotations

import hashlib
import logging

from django.conf import settings
from django.contrib import admin
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import get_user_model
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import AuthenticationForm, PasswordChangeForm
from django.core.cache import cache
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.http import HttpRequest, HttpResponse

logger = logging.getLogger("rta.security")


def _limits() -> tuple[int, int]:
    return settings.RTA_LOGIN_MAX_FAILURES, settings.RTA_LOGIN_LOCKOUT_SECONDS


def client_address(request: HttpRequest | None) -> str:
    # REMOTE_ADDR only: TrustedProxyMiddleware has replaced it with the client's when a trusted proxy said so.
    return (request.META.get("REMOTE_ADDR") if request is not None else "") or "unknown"


def _key(username: str, address: str) -> str:
    digest = hashlib.sha256(f"{username.strip().lower()}\0{address}".encode()).hexdigest()[:32]
    return f"rta:login-failures:{digest}"


def _address_key(address: str) -> str:
    return "rta:login-failures-address:" + hashlib.sha256(address.encode()).hexdigest()[:32]


def login_failures(username: str, address: str) -> int:
    return int(cache.get(_key(username, address), 0))


def login_failures_from(address: str) -> int:
    """Failed logins from `address` over all usernames in the current window."""
    return int(cache.get(_address_key(address), 0))


def login_failure_record(username: str, address: str) -> tuple[int, int]:
    """Count one failed attempt for the pair and for the address; both counts. Windows start at the first failure."""
    _, window = _limits()
    return count_in_window(_key(username, address), window), count_in_window(_address_key(address), window)


def count_in_window(key: str, window: int) -> int:
    """Add one to the cache counter `key`, whose window of `window` seconds starts at its first count; the new count."""
    cache.add(key, 0, timeout=window)
    try:
        return cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.set(key, 1, timeout=window)
        return 1


def login_failures_clear(username: str, address: str) -> None:
    """Forget the pair's failures (a successful login); the address's count stays, so spraying cannot reset itself."""
    cache.delete(_key(username, address))


def login_failures_clear_address(address: str) -> None:
    cache.delete(_address_key(address))


LOCKED_ACCOUNT = (
    "Too many failed attempts to log in as “%(username)s” from your network. "
    "For your account's safety, logging in is paused for %(minutes)d minutes. "
    "Ask a project owner or your administrator if you have forgotten your password."
)
LOCKED_ADDRESS = "Too many failed logins from your network. Logging in from it is paused for %(minutes)d minutes."


def lockout_error(username: str, address: str) -> ValidationError | None:
    """The error to show while the address, or the username from that address, is locked out; else None."""
    limit, window = _limits()
    if login_failures_from(address) >= settings.RTA_LOGIN_MAX_FAILURES_PER_ADDRESS:
        return ValidationError(LOCKED_ADDRESS, code="locked", params={"minutes": window // 60})
    if username and login_failures(username, address) >= limit:
        return ValidationError(LOCKED_ACCOUNT, code="locked", params={"username": username, "minutes": window // 60})
    return None


def login_failure_note(username: str, address: str) -> None:
    """Count a wrong password for the pair and the address; log each lockout once, when it starts."""
    pair_count, address_count = login_failure_record(username, address)
    if pair_count == settings.RTA_LOGIN_MAX_FAILURES:
        logger.warning("Login locked out for username=%r from %s after %d failures", username, address, pair_count)
    if address_count == settings.RTA_LOGIN_MAX_FAILURES_PER_ADDRESS:
        logger.warning("Login locked out for every username from %s after %d failures", address, address_count)


class LoginLockoutMixin:
    """For an authentication form: refuse a locked username+address pair or address, count failures."""

    def clean(self):
        username = self.cleaned_data.get("username") or ""
        address = client_address(self.request)
        if error := lockout_error(username, address):
            raise error
        try:
            cleaned = super().clean()
        except ValidationError:
            if username:
                login_failure_note(username, address)
            raise
        login_failures_clear(username, address)
        return cleaned


class RateLimitedPasswordChangeForm(PasswordChangeForm):
    """A wrong current password counts as a failed login: someone holding a stolen session can
    guess the password (and so keep the account) no faster than at the login page."""

    def __init__(self, user, *args, request: HttpRequest | None = None, **kwargs) -> None:
        super().__init__(user, *args, **kwargs)
        self.request = request

    def clean_old_password(self) -> str:
        address = client_address(self.request)
        if error := lockout_error(self.user.username, address):
            raise error
        try:
            old_password = super().clean_old_password()
        except ValidationError:
            login_failure_note(self.user.username, address)
            raise
        login_failures_clear(self.user.username, address)
        return old_password


def is_locked_out(response: HttpResponse) -> bool:
    form = (getattr(response, "context_data", None) or {}).get("form")
    return form is not None and form.has_error(NON_FIELD_ERRORS, code="locked")


class RateLimitedAuthenticationForm(LoginLockoutMixin, AuthenticationForm):
    """Django's login form behind the lockout."""


class RateLimitedAdminAuthenticationForm(LoginLockoutMixin, AdminAuthenticationForm):
    """The admin's login form (staff only) behind the same lockout."""


class RateLimitedLoginView(auth_views.LoginView):
    authentication_form = RateLimitedAuthenticationForm

    def get_context_data(self, **kwargs) -> dict:
        # A new team server has nobody to send an invitation: the page says how its first account is made.
        return {**super().get_context_data(**kwargs), "no_accounts_yet": not get_user_model().objects.exists()}

    def form_invalid(self, form) -> HttpResponse:
        response = super().form_invalid(form)
        if form.has_error(NON_FIELD_ERRORS, code="locked"):
            response.status_code = 429
        return response


class RateLimitedPasswordChangeView(auth_views.PasswordChangeView):
    form_class = RateLimitedPasswordChangeForm

    def get_form_kwargs(self) -> dict:
        return {**super().get_form_kwargs(), "request": self.request}

    def form_invalid(self, form) -> HttpResponse:
        response = super().form_invalid(form)
        if form.has_error("old_password", code="locked"):
            response.status_code = 429
        return response


def admin_login(request: HttpRequest) -> HttpResponse:
    """The admin's login page (its form is the lockout's, projects/admin.py) answering 429 when locked, as the app's does."""
    response = admin.site.login(request)
    if is_locked_out(response):
        response.status_code = 429
    return response
