from __future__ import annotations

from django.urls import path

from projects import views

app_name = "projects"

urlpatterns = [
    path("", views.project_list, name="list"),
    path("p/new/", views.project_create, name="create"),
    path("p/<uuid:project_uuid>/settings/", views.project_settings, name="settings"),
    path("p/<uuid:project_uuid>/members/", views.member_list, name="members"),
    path("p/<uuid:project_uuid>/members/add/", views.member_add, name="member_add"),
    path("p/<uuid:project_uuid>/members/<str:username>/role/", views.member_change_role, name="member_role"),
    path("p/<uuid:project_uuid>/members/<str:username>/remove/", views.member_remove, name="member_remove"),
    path("p/<uuid:project_uuid>/positionality/", views.positionality, name="positionality"),
]
