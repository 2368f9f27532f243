"""The unread-mentions badge in the project navigation."""

from __future__ import annotations

from django import template

from themes.queries import unread_mentions_count

register = template.Library()


@register.simple_tag(takes_context=True)
def unread_mentions(context) -> int:
    """How many of the project's comments mention the request user unread (one COUNT; 0 without a project or a user)."""
    project, user = context.get("project"), context.get("user")
    if project is None or getattr(project, "pk", None) is None or user is None or not user.is_authenticated:
        return 0
    return unread_mentions_count(project, user)
