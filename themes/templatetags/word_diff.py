"""Two versions of a text with the words that changed marked: <del> in the old, <ins> in the new."""

from __future__ import annotations

from django import template

from interviews.rendering import diff_words

register = template.Library()


@register.inclusion_tag("themes/_word_diff.html")
def word_diff(old: str, new: str, old_label: str = "Before", new_label: str = "After", inline: bool = False) -> dict:
    """Side by side under the two labels, or `inline` as “old” → “new” (for names)."""
    old_runs, new_runs = diff_words(old, new)
    changed = any(tag != "same" for tag, _ in old_runs + new_runs)
    return {"old_runs": old_runs, "new_runs": new_runs, "old_label": old_label, "new_label": new_label,
            "inline": inline, "changed": changed}
