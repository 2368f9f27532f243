"""`{% keyboard_help shortcuts %}`: a page's `?` dialog and its key map, from one list (projects/shortcuts.py)."""

from __future__ import annotations

from django import template

from projects.shortcuts import Shortcut, keymap

register = template.Library()


@register.inclusion_tag("includes/keyboard_help.html")
def keyboard_help(shortcuts: list[Shortcut]) -> dict:
    return {"shortcuts": shortcuts, "keymap": keymap(shortcuts)}
