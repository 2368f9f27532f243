"""Markdown to sanitised HTML for memos, comments and meeting notes; line diffs of edited texts.

Word diffs live in interviews/rendering.py (`diff_words`), below every app that shows one.

markdown-it-py renders with raw HTML switched off (typed tags come out escaped), and nh3
then removes anything not on the allow-list, so a memo can never carry script, event
handlers or javascript: links into a colleague's browser.
"""

from __future__ import annotations

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


