from __future__ import annotations

from django.apps import AppConfig


class CodingConfig(AppConfig):
    name = "coding"
    verbose_name = "Coding"

    def ready(self) -> None:
        # Deleted codes go to the project trash (projects/trash.py).
        from projects.trash import trash_register

        trash_register("code", "coding.Code", title_field="name", unique_field="name", live_kinds=("codebook", "board"))
        from django.db.models.signals import post_delete

        from coding.models import Code
        from coding.queries import forget_purged_code

        # A code purged from the trash takes its codings along: the project's cached counts are stale.
        post_delete.connect(forget_purged_code, sender=Code, dispatch_uid="rta-codings-changed-on-code-purge")
        from coding import tasks  # noqa: F401 - connects the worker_ready handler that resumes reader runs
