from __future__ import annotations

from rest_framework.routers import SimpleRouter

from themes.api import CommentViewSet, ExemplarViewSet, MemoViewSet, ReviewViewSet, SnapshotViewSet, ThemeViewSet

P = r"projects/(?P<project_uuid>[0-9a-f-]{36})"

router = SimpleRouter()
router.register(rf"{P}/themes", ThemeViewSet, basename="api-theme")
router.register(rf"{P}/themes/(?P<theme_uuid>[0-9a-f]{{8}}-[0-9a-f]{{4}}-[0-9a-f]{{4}}-[0-9a-f]{{4}}-[0-9a-f]{{12}})/exemplars",
                ExemplarViewSet, basename="api-exemplar")
router.register(rf"{P}/memos", MemoViewSet, basename="api-memo")
router.register(rf"{P}/comments", CommentViewSet, basename="api-comment")
router.register(rf"{P}/reviews", ReviewViewSet, basename="api-review")
router.register(rf"{P}/theme-snapshots", SnapshotViewSet, basename="api-theme-snapshot")

urlpatterns = router.urls
