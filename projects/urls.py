from __future__ import annotations

from django.urls import path

from projects import views, views_audit, views_invitations, views_live, views_trash

app_name = "projects"

urlpatterns = [
    path("", views.project_list, name="list"),
    path("p/new/", views.project_create, name="create"),
    path("p/<uuid:project_uuid>/settings/", views.project_settings, name="settings"),
    path("p/<uuid:project_uuid>/members/", views.member_list, name="members"),
    path("p/<uuid:project_uuid>/members/add/", views.member_add, name="member_add"),
    path("p/<uuid:project_uuid>/members/<str:username>/role/", views.member_change_role, name="member_role"),
    path("p/<uuid:project_uuid>/members/<str:username>/remove/", views.member_remove, name="member_remove"),
    path("p/<uuid:project_uuid>/invitations/<uuid:invitation_uuid>/resend/", views_invitations.invitation_regenerate,
         name="invitation_regenerate"),
    path("p/<uuid:project_uuid>/invitations/<uuid:invitation_uuid>/revoke/", views_invitations.invitation_revoke,
         name="invitation_revoke"),
    path("invitations/<str:token>/", views_invitations.invitation_accept, name="invitation_accept"),
    path("p/<uuid:project_uuid>/positionality/", views.positionality, name="positionality"),
    path("p/<uuid:project_uuid>/audit/", views_audit.audit_log, name="audit"),
    path("p/<uuid:project_uuid>/trash/", views_trash.trash_list, name="trash"),
    path("p/<uuid:project_uuid>/trash/restore/", views_trash.trash_restore_view, name="trash_restore"),
    path("p/<uuid:project_uuid>/trash/empty/", views_trash.trash_empty_view, name="trash_empty"),
    path("p/<uuid:project_uuid>/live/", views_live.live_stream, name="live_stream"),
]
