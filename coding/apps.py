from __future__ import annotations

from django.apps import AppConfig


class CodingConfig(AppConfig):
    name = "coding"
    verbose_name = "Coding"

    def ready(self) -> None:
        # Deleted codes go to the project trash (projects/trash.py).
        from projects.trash import trash_register

        trash_register("code", "coding.Code", title_field="name", unique_field="name")
        from coding import tasks  # noqa: F401 - connects the worker_ready handler that resumes reader runs
