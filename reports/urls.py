from __future__ import annotations

from django.urls import path

from reports import views, views_exchange, views_probes

app_name = "reports"

urlpatterns: list = [
    path("", views.index, name="index"),
    path("excerpts/", views.excerpts, name="excerpts"),
    path("excerpts/export/", views.excerpts_export, name="excerpts_export"),
    path("exports/<uuid:job_uuid>/", views.export_job, name="export_job"),
    path("exports/<uuid:job_uuid>/download/", views.export_download, name="export_download"),
    path("exports/<uuid:job_uuid>/send-again/", views.export_job_send_again, name="export_job_send_again"),
    path("exports/<uuid:job_uuid>/discard/", views.export_job_discard, name="export_job_discard"),
    path("frequency/", views.frequency_view, name="frequency"),
    path("frequency/export/", views.frequency_export, name="frequency_export"),
    path("trajectories/", views.trajectory_view, name="trajectories"),
    path("trajectories/export/", views.trajectory_export, name="trajectory_export"),
    path("cases/", views.cases_view, name="cases"),
    path("cases/export/", views.cases_export, name="cases_export"),
    path("statistics.<str:fmt>", views.statistics_download, name="statistics_download"),
    path("codebook.<str:fmt>", views.codebook_download, name="codebook_download"),
    path("probes/<uuid:probe_uuid>/answers.<str:fmt>", views_probes.probe_answers, name="probe_answers"),
    path("probes/<uuid:probe_uuid>/scores.<str:fmt>", views_probes.probe_summary, name="probe_summary"),
    path("probes/<uuid:probe_uuid>/table1.<str:fmt>", views_probes.probe_table1, name="probe_table1"),
    path("exchange/", views_exchange.exchange, name="exchange"),
    path("exchange/export.qdpx", views_exchange.export_qdpx, name="export_qdpx"),
    path("exchange/backup.zip", views_exchange.download_backup, name="download_backup"),
]
