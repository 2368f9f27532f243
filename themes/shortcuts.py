"""The keys of the themes pages, one list per page (see projects/shortcuts.py): the help and the handler come from here."""

from __future__ import annotations

from projects.shortcuts import HELP, Shortcut

PRESENTER = [
    Shortcut(("ArrowRight", "j"), "next", "next theme on the agenda"),
    Shortcut(("ArrowLeft", "k"), "previous", "previous theme on the agenda"),
    HELP,
]
