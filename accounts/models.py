"""Account-level data: API tokens. Below every other app (accounts → projects → …), and not part of any
project, so never in a project's backup."""

from __future__ import annotations

import hashlib
import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone


def secret_hash(token: str) -> str:
    """The stored form of a random token (API tokens, invitation links)."""
    # A 256-bit random token needs no salt or slow hash; lookup by hash keeps comparison out of Python.
    return hashlib.sha256(token.encode()).hexdigest()


class ApiTokenQuerySet(models.QuerySet):
    def for_user(self, user) -> ApiTokenQuerySet:
        """The user's tokens, newest first (expired ones included, marked on the page)."""
        return self.filter(user=user).order_by("-created_at", "-id")

    def by_key(self, key: str) -> ApiToken | None:
        """The token whose secret is `key`, with its user, in any state, or None."""
        return self.select_related("user").filter(key_hash=secret_hash(key)).first()


class ApiToken(models.Model):
    """A secret for the REST API (`Authorization: Token <key>`) that acts as its user in every project they belong to.

    Only a hash is stored: the key is shown once, when it is created. Every token expires;
    changing the password or deactivating the account deletes them all (accounts/authentication.py).
    """

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    key_hash = models.CharField(max_length=64, unique=True)
    # The key's first characters, so its holder can tell which token a script uses.
    prefix = models.CharField(max_length=12)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    last_used_at = models.DateTimeField(null=True, blank=True)

    objects = ApiTokenQuerySet.as_manager()

    def __str__(self) -> str:
        return f"{self.name} ({self.user})"

    @property
    def is_expired(self) -> bool:
        return self.expires_at <= timezone.now()
