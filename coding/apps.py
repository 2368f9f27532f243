from __future__ import annotations

from django.apps import AppConfig


class CodingConfig(AppConfig):
    name = "coding"
    verbose_name = "Coding"
