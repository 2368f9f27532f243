from __future__ import annotations

from django.apps import AppConfig


class ThemesConfig(AppConfig):
    name = "themes"
    verbose_name = "Themes"

    def ready(self) -> None:
        # Deleted themes and memos go to the project trash (projects/trash.py).
        from projects.trash import trash_register

        trash_register("theme", "themes.Theme", title_field="name")
        trash_register("memo", "themes.Memo", title_field="title")
