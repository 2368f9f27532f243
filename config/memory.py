"""A memory ceiling for the web and worker processes, so one request or task can never take the machine down.

RLIMIT_DATA caps the memory a process has written to (heap and anonymous mappings), not the address space
it merely reserves, so threads' malloc arenas do not count against it. Past the ceiling an allocation fails
with MemoryError inside the request or task that asked for it (projects.middleware turns that into a clear
503); the process lives on. Applied by gunicorn.conf.py in each web worker and by config/celery.py in each
worker process; `RTA_MEMORY_LIMIT_MB=0` turns it off.
"""

from __future__ import annotations

import ctypes
import os
import resource

from config.env import env_int

DEFAULT_MEMORY_LIMIT_MB = 2048
# glibc gives threads up to 8 malloc arenas per core and keeps what each has held: a web worker's 32 threads
# took turns rendering a 1.3 MB page and kept ~20 MB more than with two arenas, at no measurable speed cost.
DEFAULT_MALLOC_ARENAS = 2
M_ARENA_MAX = -8  # glibc's malloc.h


def memory_limit_mb() -> int:
    return env_int("RTA_MEMORY_LIMIT_MB", DEFAULT_MEMORY_LIMIT_MB)


def apply_memory_limit(limit_mb: int) -> None:
    """Lower this process's RLIMIT_DATA to limit_mb (never above the hard limit); 0 leaves it alone."""
    if limit_mb <= 0:
        return
    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    limit = limit_mb * 1024 * 1024
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))


def malloc_arenas() -> int:
    return env_int("RTA_MALLOC_ARENAS", DEFAULT_MALLOC_ARENAS)


def limit_malloc_arenas(count: int) -> bool:
    """Cap the C library's malloc arenas at `count` (before the process starts its threads); 0 leaves them alone,
    as does MALLOC_ARENA_MAX in the environment, which glibc reads itself. False where there is no glibc mallopt."""
    if count <= 0 or "MALLOC_ARENA_MAX" in os.environ:
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    return mallopt(M_ARENA_MAX, count) == 1
