from __future__ import annotations

from django.contrib import admin

from accounts.models import ApiToken


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Staff can see and delete (revoke) anyone's tokens; only their owners create them, on /accounts/tokens/."""

    list_display = ["name", "user", "prefix", "created_at", "last_used_at", "expires_at"]
    search_fields = ["user__username", "name", "prefix"]
    readonly_fields = ["user", "name", "prefix", "created_at", "last_used_at", "expires_at"]
    exclude = ["key_hash"]

    def has_add_permission(self, request) -> bool:
        return False
