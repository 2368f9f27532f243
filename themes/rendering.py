"""Markdown to sanitised HTML for memos, comments and meeting notes; line diffs of edited texts.

markdown-it-py renders with raw HTML switched off (typed tags come out escaped), and nh3
then removes anything not on the allow-list, so a memo can never carry script, event
handlers or javascript: links into a colleague's browser.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from functools import lru_cache

import nh3
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

_md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable("table").enable("strikethrough")

ALLOWED_TAGS = {
    "p", "br", "em", "strong", "del", "s", "code", "pre", "blockquote", "ul", "ol", "li", "a", "h1", "h2", "h3",
    "h4", "h5", "h6", "hr", "table", "thead", "tbody", "tr", "th", "td", "span",
}
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "th": {"align"}, "td": {"align"}, "ol": {"start"}}
ALLOWED_CLASSES = {"span": {"mention"}}

# A mention starts after whitespace/punctuation, never inside a word or an address (a@b).
MENTION_RE = re.compile(r"(?<![\w@/.:])@([\w.+-]+)")


def render_markdown(text: str, *, mentionable: Iterable[str] = ()) -> SafeString:
    """Render Markdown to sanitised HTML; @username of a mentionable member is highlighted."""
    text, names = text or "", frozenset(mentionable)
    # Pure function of its arguments: short texts (nearly all memos and comments) render once per process;
    # long ones are not kept, so the cache stays a few MB at most.
    html = _render_cached(text, names) if len(text) <= CACHE_TEXT_LIMIT else _render(text, names)
    return mark_safe(html)  # noqa: S308 - nh3 output


CACHE_TEXT_LIMIT = 8_000


@lru_cache(maxsize=2048)
def _render_cached(text: str, names: frozenset[str]) -> str:
    return _render(text, names)


def _render(text: str, names: frozenset[str]) -> str:
    html = _md.render(text)
    if names:
        html = MENTION_RE.sub(lambda m: _mention(m, names), html)
    return nh3.clean(
        html, tags=ALLOWED_TAGS, attributes=ALLOWED_ATTRIBUTES, allowed_classes=ALLOWED_CLASSES,
        url_schemes={"http", "https", "mailto"}, link_rel="noopener noreferrer nofollow",
    )


def _mention(match: re.Match, names: set[str]) -> str:
    name = match.group(1).rstrip(".")
    if name not in names:
        return match.group(0)
    rest = match.group(1)[len(name):]
    return f'<span class="mention">@{name}</span>{rest}'


def mentioned_usernames(text: str) -> set[str]:
    """The @usernames written in a text (members or not; the caller filters)."""
    return {m.group(1).rstrip(".") for m in MENTION_RE.finditer(text or "")}


def diff_lines(old: str, new: str, old_name: str, new_name: str) -> list[tuple[str, str]]:
    """Unified diff lines tagged add/del/hunk/same for themes/_diff.html."""
    lines = []
    for line in difflib.unified_diff(old.splitlines(), new.splitlines(), old_name, new_name, lineterm="", n=3):
        tag = "hunk" if line.startswith(("@@", "---", "+++")) else "add" if line.startswith("+") else "del" if line.startswith("-") else "same"
        lines.append((tag, line))
    return lines


# A word with the spacing before it, or spacing at the very end: the runs put back together give the text exactly.
_WORD_RE = re.compile(r"\s*\S+|\s+$")


def diff_words(old: str, new: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """Old and new text as runs tagged same/del (old) and same/ins (new), compared word by word.

    Words are compared without their spacing, so a re-wrapped line does not mark every word; the runs keep the
    spacing of their own text. Rendered by themes/_word_diff.html, which escapes every run.
    """
    old_tokens, new_tokens = _WORD_RE.findall(old or ""), _WORD_RE.findall(new or "")
    matcher = difflib.SequenceMatcher(None, [t.strip() for t in old_tokens], [t.strip() for t in new_tokens], autojunk=False)
    old_runs: list[tuple[str, str]] = []
    new_runs: list[tuple[str, str]] = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        _append_run(old_runs, "same" if op == "equal" else "del", old_tokens[i1:i2])
        _append_run(new_runs, "same" if op == "equal" else "ins", new_tokens[j1:j2])
    return old_runs, new_runs


def _append_run(runs: list[tuple[str, str]], tag: str, tokens: list[str]) -> None:
    """Add tokens as one run; the spacing before a changed word stays outside the mark, so only words are marked."""
    text = "".join(tokens)
    if not text:
        return
    if tag != "same":
        word_start = len(text) - len(text.lstrip())
        _append_run(runs, "same", [text[:word_start]])
        text = text[word_start:]
        if not text:
            return
    if runs and runs[-1][0] == tag:
        runs[-1] = (tag, runs[-1][1] + text)
    else:
        runs.append((tag, text))
