"""The keys of the coding pages, one list per page (see projects/shortcuts.py): the help and the handler come from here."""

from __future__ import annotations

from projects.shortcuts import HELP, Shortcut

WORKSPACE = [
    Shortcut(("j", "ArrowDown"), "down", "next segment"),
    Shortcut(("k", "ArrowUp"), "up", "previous segment"),
    Shortcut(("J", "K"), "extend", "extend the selection down / up (also Shift+↓ / Shift+↑, or Shift-click)"),
    Shortcut(("c", "/"), "picker", "code picker, also the Code… button (fuzzy search on names, then definitions; type a new name "
                            "to create a code, or an archived one's to bring it back)"),
    Shortcut(tuple("123456789"), "recent", "apply a recent code"),
    Shortcut(("x", "Backspace", "Delete"), "remove", "remove one of your codes from the selection (or the × on your chip)"),
    Shortcut(("u",), "undo", "undo your last apply or remove here, also after a reload (up to your last 50; undoing a "
                             "code you just created archives it, if nobody has used it)"),
    Shortcut(("n",), "next_uncoded", "next participant segment uncoded by the coders shown (wraps to the top)"),
    Shortcut(("s",), "next_suggestion", "next AI suggestion (dashed chips; the model's and the critic's reasons show on focus)"),
    Shortcut(("y",), "accept", "accept the focused suggestion as your coding"),
    Shortcut(("r", "R"), "reject", "reject the focused suggestion (Shift+r: with a reason)"),
    HELP,
    Shortcut(("Escape",), "clear", "clear the selection"),
]

SECOND_READER = [
    Shortcut(("j",), "down", "next suggestion"),
    Shortcut(("k",), "up", "previous suggestion"),
    Shortcut(("y",), "accept", "accept the suggestion as your coding (the coding page's key too)"),
    Shortcut(("r",), "reject", "reject it: type an optional reason, then Enter"),
    HELP,
]
