from __future__ import annotations

from rest_framework.routers import SimpleRouter

from interviews.api import ImportViewSet, InterviewViewSet, ParticipantViewSet

router = SimpleRouter()
router.register(r"projects/(?P<project_uuid>[0-9a-f-]{36})/participants", ParticipantViewSet, basename="api-participant")
router.register(r"projects/(?P<project_uuid>[0-9a-f-]{36})/interviews", InterviewViewSet, basename="api-interview")
router.register(r"projects/(?P<project_uuid>[0-9a-f-]{36})/imports", ImportViewSet, basename="api-import")

urlpatterns = router.urls
