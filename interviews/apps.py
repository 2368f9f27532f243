from __future__ import annotations

from django.apps import AppConfig


class InterviewsConfig(AppConfig):
    name = "interviews"
    verbose_name = "Interviews"

    def ready(self) -> None:
        # Deleted interviews go to the project trash (projects/trash.py).
        from projects.trash import trash_register

        trash_register("interview", "interviews.Interview", title_field="title")
