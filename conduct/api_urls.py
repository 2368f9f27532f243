from __future__ import annotations

from rest_framework.routers import SimpleRouter

from conduct.api import ConductSessionViewSet, EndpointKeyViewSet, GuideViewSet, LiveEndpointViewSet

PROJECT = r"projects/(?P<project_uuid>[0-9a-f-]{36})"

router = SimpleRouter()
router.register(rf"{PROJECT}/guides", GuideViewSet, basename="api-guide")
router.register(rf"{PROJECT}/live-endpoints", LiveEndpointViewSet, basename="api-live-endpoint")
router.register(rf"{PROJECT}/endpoint-keys", EndpointKeyViewSet, basename="api-endpoint-key")
router.register(rf"{PROJECT}/conduct-sessions", ConductSessionViewSet, basename="api-conduct-session")

urlpatterns = router.urls
