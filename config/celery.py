from __future__ import annotations

import os

from celery import Celery
from celery.signals import worker_init

from config.memory import apply_memory_limit, memory_limit_mb

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("rta")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_init.connect
def _memory_ceiling(**kwargs) -> None:
    # Before the pool starts: prefork children inherit the limit, thread pools share it.
    apply_memory_limit(memory_limit_mb())
