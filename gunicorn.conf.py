"""gunicorn settings read by the Dockerfile's and docker-compose's `gunicorn -c gunicorn.conf.py`.

Live updates (projects/views_live.py) keep one response open per open page, each holding a thread
for at most RTA_LIVE_STREAM_SECONDS (60 s; the browser then reconnects and resumes). So the web
workers are gthread with many threads (the Dockerfile and compose pass `--threads 32`), and each
process serves at most RTA_LIVE_STREAMS_PER_PROCESS (24) streams, leaving threads for ordinary
requests; pages beyond that keep polling. Sync workers would give each open page a whole worker.
"""

from __future__ import annotations

import os

# One web process per core this server may use, at most 4; WEB_CONCURRENCY, which gunicorn reads itself, sets
# another number. A process runs Python on one core at a time, so more processes than cores only take turns: on
# 2 cores, 8 clients applying codes were served 568–595 a second by 2 processes and 510–554 by 4. Each of a
# process's threads may hold a database connection, which is why the default stops at 4. Fewer processes also
# hold fewer live streams (24 each) at once.
if not os.environ.get("WEB_CONCURRENCY"):
    workers = min(os.process_cpu_count() or 1, 4)


def post_fork(server, worker) -> None:
    # Each web worker gets the memory ceiling (config/memory.py): a hostile upload fails its own request.
    # Its threads share two malloc arenas, set before the worker starts them.
    from config.memory import apply_memory_limit, limit_malloc_arenas, malloc_arenas, memory_limit_mb

    apply_memory_limit(memory_limit_mb())
    limit_malloc_arenas(malloc_arenas())
