"""Sentence segmenters compared on speed and quality (bench/segmenters.py)."""

from __future__ import annotations

from bench.common import Context, Section

TITLE = "Sentence segmentation"


def run(ctx: Context) -> Section:
    from bench.segmenters import compare

    return compare(quick=ctx.quick)
