from __future__ import annotations

from rest_framework.routers import SimpleRouter

from projects.api import AuditEventViewSet, MembershipViewSet, ProjectViewSet, TrashViewSet

P = r"projects/(?P<project_uuid>[0-9a-f-]{36})"

router = SimpleRouter()
router.register("projects", ProjectViewSet, basename="api-project")
router.register(rf"{P}/members", MembershipViewSet, basename="api-member")
router.register(rf"{P}/audit-events", AuditEventViewSet, basename="api-audit-event")
router.register(rf"{P}/trash", TrashViewSet, basename="api-trash")

urlpatterns = router.urls
