"""API tokens at work: the REST API's authentication, and their revocation when the password
changes or the account is deactivated (the page to make and revoke them is projects/views_tokens.py)."""

from __future__ import annotations

import datetime as dt

from django.utils import timezone
from rest_framework.authentication import TokenAuthentication
from rest_framework.exceptions import AuthenticationFailed

from accounts import services
from accounts.models import ApiToken

# last_used_at is a write; once a minute per token is exact enough for "last used".
LAST_USED_RESOLUTION = dt.timedelta(minutes=1)


class ApiTokenAuthentication(TokenAuthentication):
    """`Authorization: Token <key>`, checked against the stored hashes; expired keys are refused."""

    def authenticate_credentials(self, key: str):
        token = ApiToken.objects.by_key(key)
        if token is None:
            raise AuthenticationFailed("Invalid token: it does not exist or was revoked.")
        if token.is_expired:
            raise AuthenticationFailed(f"This API token expired on {token.expires_at:%d %B %Y}. "
                                       "Create a new one on your API tokens page (/accounts/tokens/).")
        if not token.user.is_active:
            raise AuthenticationFailed("User inactive or deleted.")
        now = timezone.now()
        if token.last_used_at is None or now - token.last_used_at >= LAST_USED_RESOLUTION:
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        return token.user, token


class RevokeApiTokensOnPasswordChange:
    """Listed in AUTH_PASSWORD_VALIDATORS for Django's password_changed() hook, which every way of
    setting a password reaches (the password page, the admin, `manage.py changepassword`):
    a new password ends every token made under the old one. It validates nothing."""

    on_change_only = True  # a sign-up form leaves its help text out: a new account has no tokens

    def validate(self, password: str, user=None) -> None:
        return None

    def password_changed(self, password: str, user=None) -> None:
        if user is not None and user.pk is not None:
            services.api_tokens_revoke_all(user=user, reason="password changed")

    def get_help_text(self) -> str:
        return "A new password revokes every API token made with the old one."


def revoke_api_tokens_of_inactive_user(sender, instance, **kwargs) -> None:
    """post_save of the user model: a deactivated account keeps no working token."""
    if not instance.is_active:
        services.api_tokens_revoke_all(user=instance, reason="account deactivated")
