from __future__ import annotations

from rest_framework.routers import SimpleRouter

from coding.api import CodeViewSet, CodingViewSet

router = SimpleRouter()
router.register(r"projects/(?P<project_uuid>[0-9a-f-]{36})/codes", CodeViewSet, basename="api-code")
router.register(r"projects/(?P<project_uuid>[0-9a-f-]{36})/codings", CodingViewSet, basename="api-coding")

urlpatterns = router.urls
