"""Transcript turns as safe HTML: Markdown rendered, then sanitised, then cached.

Transcripts are hostile input: a chatbot (or whoever edited an export) can put
``<script>``, ``onerror=`` or ``javascript:`` links into a turn. Two layers stop
them: markdown-it-py runs with raw HTML off, so typed tags come out as escaped
text and its link validator drops javascript:/vbscript:/data: URLs; nh3 then
keeps only an allow-list of tags and attributes and http(s)/mailto links.
Images are dropped (a transcript must not make the reader's browser fetch
third-party URLs).

Rendering dominates the cost of a long transcript, so each turn's HTML is
cached under a key that includes a hash of its text: an edited turn gets a
new key, no invalidation needed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import nh3
from django.core.cache import cache
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

_md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable(["table", "strikethrough"])

ALLOWED_TAGS = {
    "p", "br", "em", "strong", "del", "s", "code", "pre", "blockquote", "ul", "ol", "li", "a",
    "h1", "h2", "h3", "h4", "h5", "h6", "hr", "table", "thead", "tbody", "tr", "th", "td",
}
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}}
URL_SCHEMES = {"http", "https", "mailto"}
CACHE_VERSION = "1"  # bump when the allow-list or renderer options change


def markdown_to_safe_html(text: str) -> str:
    """Render Markdown and sanitise the result; the output is safe to insert as HTML."""
    html = _md.render(text or "")
    return nh3.clean(
        html, tags=ALLOWED_TAGS, attributes=ALLOWED_ATTRIBUTES, url_schemes=URL_SCHEMES,
        link_rel="noopener noreferrer nofollow", strip_comments=True,
    )


def _key(text: str) -> str:
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()
    return f"turnhtml:{CACHE_VERSION}:{digest}"


def render_turns(texts: Iterable[str]) -> list[SafeString]:
    """Safe HTML for each text, in order; one cache round trip for all, misses rendered and stored."""
    texts = list(texts)
    keys = [_key(t) for t in texts]
    found = cache.get_many(keys)
    missing = {}
    out = []
    for key, text in zip(keys, texts, strict=True):
        html = found.get(key)
        if html is None:
            html = missing.get(key) or markdown_to_safe_html(text)
            missing[key] = html
        out.append(mark_safe(html))  # noqa: S308 - sanitised by nh3 above (or cached from it)
    if missing:
        cache.set_many(missing, timeout=7 * 24 * 3600)
    return out
