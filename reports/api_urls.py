from __future__ import annotations

from django.urls import path

from reports.api import CodebookTableView, ExcerptTableView, FrequencyTableView

PREFIX = "projects/<uuid:project_uuid>/reports/"

urlpatterns: list = [
    path(PREFIX + "excerpts/", ExcerptTableView.as_view(), name="api-report-excerpts"),
    path(PREFIX + "frequency/", FrequencyTableView.as_view(), name="api-report-frequency"),
    path(PREFIX + "codebook/", CodebookTableView.as_view(), name="api-report-codebook"),
]
