"""gunicorn settings read by the Dockerfile's and docker-compose's `gunicorn -c gunicorn.conf.py`."""

from __future__ import annotations


def post_fork(server, worker) -> None:
    # Each web worker gets the memory ceiling (config/memory.py): a hostile upload fails its own request.
    from config.memory import apply_memory_limit, memory_limit_mb

    apply_memory_limit(memory_limit_mb())
