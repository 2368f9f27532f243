from __future__ import annotations

from rest_framework.routers import SimpleRouter

from projects.api import ProjectViewSet

router = SimpleRouter()
router.register("projects", ProjectViewSet, basename="api-project")

urlpatterns = router.urls
