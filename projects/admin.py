from __future__ import annotations

from django.contrib import admin

from projects.models import AuditEvent, Invitation, Membership, Project
from projects.ratelimit import RateLimitedAdminAuthenticationForm

# The admin's login counts failures and locks out like the app's (projects/ratelimit.py).
admin.site.login_form = RateLimitedAdminAuthenticationForm


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["name", "uuid", "created_at"]
    inlines = [MembershipInline]


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ["project", "actor", "action", "target_type", "summary", "created_at"]
    list_filter = ["action", "target_type"]


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin):
    list_display = ["email", "project", "role", "created_at", "expires_at", "accepted_at", "revoked_at"]
    exclude = ["token_hash"]

    def has_add_permission(self, request) -> bool:
        # Invitations are issued from the project's members page, which shows the link once.
        return False

