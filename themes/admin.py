from __future__ import annotations

from django.contrib import admin

from themes.models import Comment, Decision, Exemplar, Memo, MemoRevision, Review, Snapshot, Theme


@admin.register(Theme)
class ThemeAdmin(admin.ModelAdmin):
    list_display = ["name", "project", "status", "parent", "deleted_at"]
    list_filter = ["status"]
    search_fields = ["name", "definition"]
    raw_id_fields = ["project", "parent", "merged_into", "created_by"]


@admin.register(Memo)
class MemoAdmin(admin.ModelAdmin):
    list_display = ["title", "project", "kind", "author", "version", "created_at", "deleted_at"]
    list_filter = ["kind"]
    search_fields = ["title", "body"]
    raw_id_fields = ["project", "interview", "code", "theme", "author", "updated_by"]


@admin.register(Review)
class ReviewAdmin(admin.ModelAdmin):
    list_display = ["title", "project", "date", "status"]
    raw_id_fields = ["project", "created_by"]


admin.site.register([MemoRevision, Comment, Exemplar, Decision, Snapshot])
