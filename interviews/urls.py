from __future__ import annotations

from django.urls import path

from interviews import views, views_import, views_participants

app_name = "interviews"

urlpatterns: list = [
    path("interviews/import/", views_import.import_start, name="import_start"),
    path("interviews/import/<uuid:job_uuid>/", views_import.import_job, name="import_job"),
    path("interviews/import/<uuid:job_uuid>/start/", views_import.import_job_start, name="import_job_start"),
    path("interviews/import/<uuid:job_uuid>/discard/", views_import.import_job_discard, name="import_job_discard"),
    path("interviews/", views.interview_list, name="list"),
    path("interviews/statistics/", views.statistics, name="statistics"),
    path("interviews/participants/", views_participants.participant_list, name="participants"),
    path("interviews/participants/<uuid:participant_uuid>/", views_participants.participant_edit, name="participant_edit"),
    path("interviews/<uuid:interview_uuid>/", views.interview_detail, name="interview_detail"),
    path("interviews/<uuid:interview_uuid>/edit/", views.interview_edit, name="interview_edit"),
    path("interviews/<uuid:interview_uuid>/turns/<uuid:turn_uuid>/metadata/", views.turn_metadata, name="turn_metadata"),
]
