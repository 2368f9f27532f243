from __future__ import annotations

from django.urls import include, path

from coding import views, views_cases, views_gallery, views_reader

app_name = "coding"

# The coding workspace and what it posts (apply, remove, the chips' polling): the most requested URLs,
# matched first and under one prefix.
workspace = [
    path("", views.workspace, name="workspace"),
    path("apply/", views.apply, name="apply"),
    path("remove/", views.remove, name="remove"),
    path("create-code/", views.create_inline, name="create_inline"),
    path("undo/", views.undo, name="undo"),
    path("notes/", views.notes, name="notes"),
    path("state/", views.chips_state, name="state"),
    path("speakers/", views.speaker_toggle, name="speaker_toggle"),
]

urlpatterns: list = [
    path("interviews/<uuid:interview_uuid>/code/", include(workspace)),
    path("codebook/", views.codebook, name="codebook"),
    path("codebook/new/", views.code_new, name="code_new"),
    path("codebook/import/", views.codebook_import_view, name="import"),
    path("codebook/templates/", views_gallery.gallery, name="gallery"),
    path("codebook/templates/<slug:template_slug>/", views_gallery.gallery_apply, name="gallery_apply"),
    path("codebook/history/", views.codebook_history, name="history"),
    path("codebook/<uuid:code_uuid>/", views.code_detail, name="code_detail"),
    path("codebook/<uuid:code_uuid>/edit/", views.code_edit, name="code_edit"),
    path("codebook/<uuid:code_uuid>/move/", views.code_move_view, name="code_move"),
    path("codebook/<uuid:code_uuid>/merge/", views.code_merge_view, name="code_merge"),
    path("codebook/<uuid:code_uuid>/split/", views.code_split_view, name="code_split"),
    path("codebook/<uuid:code_uuid>/split/excerpts/", views.code_split_excerpts, name="code_split_excerpts"),
    path("codebook/<uuid:code_uuid>/archive/", views.code_archive_view, name="code_archive"),
    path("codebook/<uuid:code_uuid>/excerpts/", views.code_excerpts, name="excerpts"),
    path("search/", views.search, name="search"),
    path("interviews/<uuid:interview_uuid>/context/", views.excerpt_context, name="excerpt_context"),
    path("interviews/<uuid:interview_uuid>/compare/", views.compare, name="compare"),
    path("second-reader/", views_reader.reader_home, name="reader"),
    path("second-reader/settings/", views_reader.reader_settings_view, name="reader_settings"),
    path("second-reader/runs/", views_reader.reader_start, name="reader_start"),
    path("second-reader/runs/<uuid:run_uuid>/", views_reader.reader_run, name="reader_run"),
    path("second-reader/runs/<uuid:run_uuid>/cancel/", views_reader.reader_cancel, name="reader_cancel"),
    path("second-reader/runs/<uuid:run_uuid>/retry/", views_reader.reader_retry_failed, name="reader_retry_failed"),
    path("second-reader/runs/<uuid:run_uuid>/differ/", views_reader.reader_differ, name="reader_differ"),
    path("second-reader/runs/<uuid:run_uuid>/codes/<uuid:code_uuid>/accept-rest/", views_reader.reader_accept_rest,
         name="reader_accept_rest"),
    path("second-reader/suggestions/<uuid:suggestion_uuid>/<str:decision>/", views_reader.suggestion_decide,
         name="suggestion_decide"),
    path("interviews/<uuid:interview_uuid>/case-codes/", views_cases.case_code, name="case_code"),
]
