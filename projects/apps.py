from __future__ import annotations

from django.apps import AppConfig


class ProjectsConfig(AppConfig):
    name = "projects"
    verbose_name = "Projects"

    def ready(self) -> None:
        from django.contrib.auth import get_user_model
        from django.core.signals import request_finished, request_started
        from django.db import models
        from django.db.models.signals import post_delete, post_save
        from rest_framework.serializers import ModelSerializer

        from projects.api_parsers import SafeJSONField
        from projects.auth_cache import forget_user
        from projects.live import hold_events_until_response_sent, send_held_events

        # Every ModelSerializer's field for a model JSONField: form-encoded JSON gets the same limits as bodies.
        ModelSerializer.serializer_field_mapping[models.JSONField] = SafeJSONField

        user_model = get_user_model()
        post_save.connect(forget_user, sender=user_model, dispatch_uid="rta-forget-cached-user-on-save")
        post_delete.connect(forget_user, sender=user_model, dispatch_uid="rta-forget-cached-user-on-delete")
        request_started.connect(hold_events_until_response_sent, dispatch_uid="rta-live-hold-events")
        request_finished.connect(send_held_events, dispatch_uid="rta-live-send-held-events")
