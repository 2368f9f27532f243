from __future__ import annotations

from django.urls import path

from reports import views, views_exchange

app_name = "reports"

urlpatterns: list = [
    path("", views.index, name="index"),
    path("excerpts/", views.excerpts, name="excerpts"),
    path("excerpts/export/", views.excerpts_export, name="excerpts_export"),
    path("exports/<uuid:job_uuid>/", views.export_job, name="export_job"),
    path("exports/<uuid:job_uuid>/download/", views.export_download, name="export_download"),
    path("frequency/", views.frequency_view, name="frequency"),
    path("frequency/export/", views.frequency_export, name="frequency_export"),
    path("statistics.tex", views.statistics_latex, name="statistics_latex"),
    path("codebook.<str:fmt>", views.codebook_download, name="codebook_download"),
    path("exchange/", views_exchange.exchange, name="exchange"),
    path("exchange/export.qdpx", views_exchange.export_qdpx, name="export_qdpx"),
    path("exchange/backup.zip", views_exchange.download_backup, name="download_backup"),
]
