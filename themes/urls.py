from __future__ import annotations

from django.urls import path

from themes import views, views_live, views_memos, views_reviews

app_name = "themes"

urlpatterns = [
    path("", views.board, name="board"),
    path("new/", views.theme_create, name="create"),
    path("codes/place/", views.code_place, name="code_place"),
    path("map/", views.theme_map, name="map"),
    path("map/data/", views.map_data, name="map_data"),
    path("mentions/", views.mentions, name="mentions"),
    path("t/<uuid:theme_uuid>/", views.theme_detail, name="detail"),
    path("t/<uuid:theme_uuid>/excerpt-counts/", views.theme_excerpt_counts, name="excerpt_counts"),
    path("t/<uuid:theme_uuid>/edit/", views.theme_edit, name="edit"),
    path("t/<uuid:theme_uuid>/notice/", views.theme_notice, name="notice"),
    path("t/<uuid:theme_uuid>/status/", views.theme_status, name="status"),
    path("t/<uuid:theme_uuid>/reorder/", views.theme_reorder, name="reorder"),
    path("t/<uuid:theme_uuid>/delete/", views.theme_delete, name="delete"),
    path("t/<uuid:theme_uuid>/exemplars/", views.exemplar_pin, name="exemplar_pin"),
    path("t/<uuid:theme_uuid>/thread/", views.thread, name="thread"),
    path("t/<uuid:theme_uuid>/thread/read/", views.thread_read, name="thread_read"),
    path("exemplars/<uuid:exemplar_uuid>/", views.exemplar_change, name="exemplar_change"),
    path("comments/<uuid:comment_uuid>/resolve/", views.comment_resolve, name="comment_resolve"),
    path("memos/", views_memos.journal, name="journal"),
    path("memos/new/", views_memos.memo_new, name="memo_new"),
    path("memos/<uuid:memo_uuid>/", views_memos.memo_detail, name="memo"),
    path("memos/<uuid:memo_uuid>/edit/", views_memos.memo_edit, name="memo_edit"),
    path("memos/<uuid:memo_uuid>/revisions/<int:number>/", views_memos.memo_revision, name="memo_revision"),
    path("memos/<uuid:memo_uuid>/delete/", views_memos.memo_delete, name="memo_delete"),
    path("reviews/", views_reviews.review_list, name="reviews"),
    path("reviews/<uuid:review_uuid>/", views_reviews.review_detail, name="review"),
    path("reviews/<uuid:review_uuid>/edit/", views_reviews.review_edit, name="review_edit"),
    path("reviews/<uuid:review_uuid>/notes/", views_reviews.review_notes, name="review_notes"),
    path("reviews/<uuid:review_uuid>/decisions/", views_reviews.decision_create, name="decision_create"),
    path("reviews/<uuid:review_uuid>/close/", views_reviews.review_close, name="review_close"),
    path("reviews/<uuid:review_uuid>/present/<int:index>/", views_reviews.review_present, name="present"),
    path("reviews/<uuid:review_uuid>/present/<int:index>/lead/", views_live.present_lead, name="present_lead"),
    path("presence/", views_live.presence, name="presence"),
    path("decisions/<uuid:decision_uuid>/apply/", views_reviews.decision_apply, name="decision_apply"),
    path("decisions/<uuid:decision_uuid>/keep-current/", views_reviews.decision_decline, name="decision_decline"),
    path("snapshots/", views_reviews.snapshot_list, name="snapshots"),
    path("snapshots/compare/", views_reviews.snapshot_compare, name="snapshot_compare"),
]
