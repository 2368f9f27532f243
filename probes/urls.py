from __future__ import annotations

from django.urls import path

from probes import views

app_name = "probes"

# Mounted at p/<project_uuid>/probes/.
urlpatterns = [
    path("", views.probe_list, name="list"),
    path("<uuid:probe_uuid>/", views.probe_detail, name="detail"),
    path("<uuid:probe_uuid>/edit/", views.probe_edit, name="edit"),
    path("<uuid:probe_uuid>/delete/", views.probe_delete, name="delete"),
    path("<uuid:probe_uuid>/items/", views.items_import, name="items_import"),
    path("<uuid:probe_uuid>/setup/", views.probe_setup, name="setup"),
    path("<uuid:probe_uuid>/conditions/new/", views.condition_edit, name="condition_create"),
    path("<uuid:probe_uuid>/conditions/<uuid:condition_uuid>/", views.condition_edit, name="condition_edit"),
    path("<uuid:probe_uuid>/conditions/<uuid:condition_uuid>/delete/", views.condition_delete, name="condition_delete"),
    path("<uuid:probe_uuid>/conditions/<uuid:condition_uuid>/reparse/", views.condition_reparse, name="reparse"),
    path("<uuid:probe_uuid>/conditions/<uuid:condition_uuid>/interviews/", views.condition_to_interviews, name="to_interviews"),
    path("<uuid:probe_uuid>/dry-run/", views.dry_run, name="dry_run"),
    path("<uuid:probe_uuid>/run/", views.run_start, name="run"),
    path("<uuid:probe_uuid>/cancel/", views.run_cancel, name="cancel"),
    path("<uuid:probe_uuid>/results/", views.results, name="results"),
    path("<uuid:probe_uuid>/answers/<uuid:answer_uuid>/", views.answer_detail, name="answer"),
]
