from __future__ import annotations

from django.urls import path

from reports import views_exchange

app_name = "reports"

urlpatterns: list = [
    path("exchange/", views_exchange.exchange, name="exchange"),
    path("exchange/export.qdpx", views_exchange.export_qdpx, name="export_qdpx"),
    path("exchange/backup.zip", views_exchange.download_backup, name="download_backup"),
]
