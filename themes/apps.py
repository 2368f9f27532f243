from __future__ import annotations

from django.apps import AppConfig


class ThemesConfig(AppConfig):
    name = "themes"
    verbose_name = "Themes"

    def ready(self) -> None:
        # Deleted themes and memos go to the project trash (projects/trash.py).
        from projects.trash import trash_register

        # A merged theme keeps deleted_at but is no trash: it redirects to its target and holds meeting records.
        # Live theme names are unique (unique_live_theme_name): a theme restored onto a taken name becomes “… (restored)”.
        trash_register("theme", "themes.Theme", title_field="name", unique_field="name", not_trash={"merged_into__isnull": False},
                       live_kinds=("board",))
        trash_register("memo", "themes.Memo", title_field="title")
