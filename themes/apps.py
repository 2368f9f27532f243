from __future__ import annotations

from django.apps import AppConfig


class ThemesConfig(AppConfig):
    name = "themes"
    verbose_name = "Themes"
