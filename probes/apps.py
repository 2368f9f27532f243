from __future__ import annotations

from django.apps import AppConfig


class ProbesConfig(AppConfig):
    name = "probes"
    verbose_name = "Probe studies"

    def ready(self) -> None:
        from probes import tasks  # noqa: F401 - connects the worker_ready handler that resumes runs
        from projects.trash import trash_register

        trash_register("probe", "probes.Probe", title_field="name", unique_field="name")
