"""Keyboard shortcuts: each page declares its keys once, and both its help dialog and its key handler come from there.

A page passes its list to `{% keyboard_help %}` (projects/templatetags/keyboard.py), which renders the `?` dialog
and the key → action map; the page script registers one function per action with `RTA.shortcuts`
(static/js/app.js), which handles only the keys listed and complains (console errors, failing the
browser tests) when the list and the script disagree. A new key cannot be handled without being listed.
"""

from __future__ import annotations

from dataclasses import dataclass

# How a KeyboardEvent.key value is shown; a capital letter is that letter with Shift.
KEY_NAMES = {"ArrowDown": "↓", "ArrowUp": "↑", "ArrowLeft": "←", "ArrowRight": "→", "Escape": "Esc", " ": "Space"}


def key_name(key: str) -> str:
    if key in KEY_NAMES:
        return KEY_NAMES[key]
    return f"Shift+{key.lower()}" if len(key) == 1 and key.isupper() else key


@dataclass(frozen=True)
class Shortcut:
    """Keys (KeyboardEvent.key values) that run one action of the page's script, and what the help says it does."""

    keys: tuple[str, ...]
    action: str
    does: str

    @property
    def shown(self) -> list[str]:
        """The keys as the help shows them; a run of digits reads as one range (1–9)."""
        if len(self.keys) > 2 and all(k.isdigit() and len(k) == 1 for k in self.keys) \
                and [int(k) for k in self.keys] == list(range(int(self.keys[0]), int(self.keys[-1]) + 1)):
            return [f"{self.keys[0]}–{self.keys[-1]}"]
        return [key_name(k) for k in self.keys]


HELP = Shortcut(("?",), "help", "this list of keys (Esc closes it)")


def keymap(shortcuts: list[Shortcut]) -> list[dict]:
    """What the page script needs: each action with its keys."""
    return [{"action": s.action, "keys": list(s.keys)} for s in shortcuts]
