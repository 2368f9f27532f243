"""Checking that a refusal comes before the memory is spent: uploads small on disk and huge once read."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable

import pytest

MB = 1024 * 1024


def refused_within[E: BaseException](error: type[E], read: Callable[[], object], budget: int) -> E:
    """The `error` that `read()` raises; tracemalloc's peak while it ran must stay under `budget` bytes."""
    tracemalloc.start()
    try:
        with pytest.raises(error) as refused:
            read()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < budget, f"peak {peak / MB:.0f} MB, more than the {budget / MB:.0f} MB allowed"
    return refused.value
