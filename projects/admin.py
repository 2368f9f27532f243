from __future__ import annotations

from django.contrib import admin

from projects.models import AuditEvent, Membership, Project


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
