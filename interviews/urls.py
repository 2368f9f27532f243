from __future__ import annotations

from django.urls import path

from interviews import views, views_import, views_participants

app_name = "interviews"

urlpatterns: list = [
    path("interviews/import/", views_import.import_start, name="import_start"),
    path("interviews/import/<uuid:job_uuid>/", views_import.import_job, name="import_job"),
    path("interviews/import/<uuid:job_uuid>/start/", views_import.import_job_start, name="import_job_start"),
    path("interviews/import/<uuid:job_uuid>/discard/", views_import.import_job_discard, name="import_job_discard"),
    path("interviews/import/<uuid:job_uuid>/send-again/", views_import.import_job_send_again,
         name="import_job_send_again"),
    path("interviews/", views.interview_list, name="list"),
    path("interviews/statistics/", views.statistics, name="statistics"),
    path("interviews/participants/", views_participants.participant_list, name="participants"),
    path("interviews/participants/variables/", views_participants.participant_variables, name="participant_variables"),
    path("interviews/participants/<uuid:participant_uuid>/", views_participants.participant_edit, name="participant_edit"),
    path("interviews/<uuid:interview_uuid>/", views.interview_detail, name="interview_detail"),
    path("interviews/<uuid:interview_uuid>/edit/", views.interview_edit, name="interview_edit"),
    path("interviews/<uuid:interview_uuid>/branches/<int:number>/", views.interview_branch, name="interview_branch"),
    path("interviews/<uuid:interview_uuid>/branches/<int:number>/import/", views.interview_branch_import,
         name="interview_branch_import"),
    path("interviews/<uuid:interview_uuid>/turns/<uuid:turn_uuid>/metadata/", views.turn_metadata, name="turn_metadata"),
]
