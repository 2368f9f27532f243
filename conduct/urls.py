from __future__ import annotations

from django.urls import path

from conduct import views

app_name = "conduct"

# Mounted at p/<project_uuid>/conduct/.
urlpatterns = [
    path("", views.conduct_home, name="home"),
    path("guides/", views.guide_list, name="guides"),
    path("guides/new/", views.guide_create, name="guide_create"),
    path("guides/<uuid:guide_uuid>/", views.guide_detail, name="guide"),
    path("participants/", views.participant_list, name="participants"),
    path("participants/new/", views.participant_edit, name="participant_create"),
    path("participants/<uuid:participant_uuid>/", views.participant_edit, name="participant_edit"),
    path("keys/", views.key_create, name="key_create"),
    path("keys/<uuid:key_uuid>/delete/", views.key_delete, name="key_delete"),
    path("s/<uuid:session_uuid>/", views.session_page, name="session"),
    path("s/<uuid:session_uuid>/ask/", views.session_ask, name="ask"),
    path("s/<uuid:session_uuid>/check/", views.session_check, name="check"),
    path("s/<uuid:session_uuid>/end/", views.session_end, name="end"),
    path("t/<uuid:turn_uuid>/", views.turn_fragment, name="turn"),
    path("t/<uuid:turn_uuid>/retry/", views.turn_retry, name="retry"),
    path("t/<uuid:turn_uuid>/stop/", views.turn_stop, name="stop"),
    path("i/<uuid:interview_uuid>/rerun/", views.interview_rerun, name="rerun"),
    path("i/<uuid:interview_uuid>/compare/", views.interview_compare, name="compare"),
]
