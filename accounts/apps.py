from __future__ import annotations

from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"
    verbose_name = "Accounts"

    def ready(self) -> None:
        from django.contrib.auth import get_user_model
        from django.db.models.signals import post_save

        from accounts.authentication import revoke_api_tokens_of_inactive_user

        post_save.connect(revoke_api_tokens_of_inactive_user, sender=get_user_model(), dispatch_uid="rta-revoke-tokens-of-inactive-user")
