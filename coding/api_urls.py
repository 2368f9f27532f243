from __future__ import annotations

from rest_framework.routers import SimpleRouter

from coding.api import CodeViewSet, CodingViewSet, NoteViewSet

UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"

router = SimpleRouter()
router.register(r"projects/(?P<project_uuid>[0-9a-f-]{36})/codes", CodeViewSet, basename="api-code")
router.register(r"projects/(?P<project_uuid>[0-9a-f-]{36})/codings", CodingViewSet, basename="api-coding")
router.register(rf"projects/(?P<project_uuid>[0-9a-f-]{{36}})/interviews/(?P<interview_uuid>{UUID})/notes", NoteViewSet,
                basename="api-note")

urlpatterns = router.urls
