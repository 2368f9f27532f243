from __future__ import annotations

from django.apps import AppConfig


class ConductConfig(AppConfig):
    name = "conduct"
    verbose_name = "Conduct"
