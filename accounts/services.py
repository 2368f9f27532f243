"""Writes on API tokens: create (the key exists in clear only in the answer), revoke one, revoke all."""

from __future__ import annotations

import datetime as dt
import logging
import secrets
from typing import NamedTuple

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from accounts.models import ApiToken, secret_hash

User = get_user_model()

# How long a new API token may live: the page offers these; nothing lives longer than a year.
API_TOKEN_LIFETIMES = {7: "7 days", 30: "30 days", 90: "90 days", 365: "1 year"}
API_TOKENS_PER_USER = 50
security_log = logging.getLogger("rta.security")


class IssuedApiToken(NamedTuple):
    """A new API token and its key: the only moment the key exists in clear."""

    token: ApiToken
    key: str


@transaction.atomic
def api_token_create(*, user, name: str, lifetime_days: int) -> IssuedApiToken:
    """A new API token for `user`, valid for `lifetime_days` (one of API_TOKEN_LIFETIMES)."""
    if lifetime_days not in API_TOKEN_LIFETIMES:
        raise ValidationError({"lifetime_days": f"Choose how long the token lives: {', '.join(API_TOKEN_LIFETIMES.values())}."})
    # Locks the user's row, so two requests at once cannot both pass the count.
    User.objects.select_for_update().filter(pk=user.pk).first()
    if ApiToken.objects.filter(user=user).count() >= API_TOKENS_PER_USER:
        raise ValidationError({"name": f"You already have {API_TOKENS_PER_USER} API tokens: revoke some you no longer use first."})
    key = "rta_" + secrets.token_urlsafe(32)
    token = ApiToken(user=user, name=name.strip(), key_hash=secret_hash(key), prefix=key[:12],
                     expires_at=timezone.now() + dt.timedelta(days=lifetime_days))
    token.full_clean()
    token.save()
    security_log.info("API token %r (%s…) created for %s, expires %s", token.name, token.prefix, user.username, token.expires_at)
    return IssuedApiToken(token, key)


@transaction.atomic
def api_token_revoke(*, token: ApiToken) -> None:
    """Delete the token: the API refuses its key from now on."""
    security_log.info("API token %r (%s…) of %s revoked", token.name, token.prefix, token.user.username)
    token.delete()


@transaction.atomic
def api_tokens_revoke_all(*, user, reason: str) -> int:
    """Delete every API token of `user` (a password change, a deactivated account); how many there were."""
    deleted, _ = ApiToken.objects.filter(user=user).delete()
    if deleted:
        security_log.info("%d API token(s) of %s revoked: %s", deleted, user.username, reason)
    return deleted
