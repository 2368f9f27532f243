"""Presenter mode for the whole room: where the presenter is, so followers' screens go there too (projects/live.py)."""

from __future__ import annotations

from django.core.cache import cache

from projects import live
from themes.models import Review

LEAD_SECONDS = 12 * 3600  # a meeting's presenter position is forgotten the day after


def _key(review: Review) -> str:
    return f"rta:present:{review.uuid}"


def present_lead(*, review: Review, actor, index: int) -> None:
    """The presenter shows agenda item `index`: remember it for late joiners and move every follower's screen."""
    cache.set(_key(review), {"index": index, "by": actor.pk}, LEAD_SECONDS)
    live.publish(review.project.uuid, "present", review=review.uuid, index=index, by=actor.pk)


def present_stop(*, review: Review) -> None:
    """Nobody presents any more: followers stay where they are, late joiners start at the first theme."""
    cache.delete(_key(review))


def present_position(review: Review) -> dict | None:
    """{"index", "by"} of the current presenter, or None.

    Only while the presenter still has a page of the project open (live presence): one who closed the
    browser without pressing stop would otherwise send late joiners to their last theme all day.
    """
    lead = cache.get(_key(review))
    if lead and not any(entry.get("user") == lead["by"] for entry in live.present_now(review.project.uuid)):
        return None
    return lead
