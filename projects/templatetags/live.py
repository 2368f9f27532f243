from __future__ import annotations

from django import template

from projects import live

register = template.Library()


@register.simple_tag
def live_cursor(project) -> str:
    """Where the project's live stream stands as the page renders: the page listens from here and misses nothing."""
    return live.cursor(project.uuid)
