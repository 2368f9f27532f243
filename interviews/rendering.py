"""One renderer for an answer's text: the same Markdown reading for the page, the coding view and the paper.

LLM answers are Markdown. A researcher must read, code and quote the same text, so everything
here goes through one markdown-it configuration that never changes a character of the content:
backslash escapes and entities are shown as written (ChatGPT's ``\\( x \\)`` stays ``\\( x \\)``,
``&amp;`` stays ``&amp;``); only Markdown's own markers (``**``, ``- ``, ``#``, table pipes, link
targets) disappear.

- :func:`render_turns` / :func:`markdown_to_safe_html`: a whole turn as sanitised HTML (Read view,
  live interviews, re-run comparison).
- :func:`quote_runs`: what a piece of source shows, as runs of text with their style (bold, italic,
  code, struck) and the offset of each run in the source, so every character of a quote maps back
  to the stored text (provenance). :func:`quote_text` and :func:`quote_html` are its plain and HTML
  forms: excerpt tables, theme pages, search results, the coding view's segments.

Transcripts are hostile input: a chatbot (or whoever edited an export) can put ``<script>``,
``onerror=`` or ``javascript:`` links into a turn. markdown-it-py runs with raw HTML off, so typed
tags come out as escaped text and its link validator drops javascript:/vbscript:/data: URLs; nh3
then keeps only an allow-list of tags and attributes and http(s)/mailto links. Images are dropped
(a transcript must not make the reader's browser fetch third-party URLs).

Rendering a long transcript costs, so each turn's HTML is cached under a key that includes a hash
of its text: an edited turn gets a new key, no invalidation needed.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections.abc import Iterable
from functools import lru_cache
from html import escape
from typing import NamedTuple

import nh3
from django.core.cache import cache
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt
from markdown_it.rules_inline.autolink import autolink as autolink_rule
from markdown_it.rules_inline.image import image as image_rule
from markdown_it.rules_inline.link import link as link_rule

# "escape" and "entity" off: a backslash or an entity is content, shown as written.
_md = (MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
       .enable(["table", "strikethrough"]).disable(["escape", "entity"]))


def _keeping_markup(rule):
    """The inline rule, keeping the source a link or image was read from: a quote's map skips its target and alt."""
    def rule_keeping_markup(state, silent):
        start, count = state.pos, len(state.tokens)
        if not rule(state, silent):
            return False
        if not silent:
            for token in state.tokens[count:]:
                if token.type in ("link_open", "image"):
                    token.meta["markup"] = state.src[start:state.pos]
                    break
        return True
    return rule_keeping_markup


for _name, _rule in (("link", link_rule), ("image", image_rule), ("autolink", autolink_rule)):
    _md.inline.ruler.at(_name, _keeping_markup(_rule))

ALLOWED_TAGS = {
    "p", "br", "em", "strong", "del", "s", "code", "pre", "blockquote", "ul", "ol", "li", "a",
    "h1", "h2", "h3", "h4", "h5", "h6", "hr", "table", "thead", "tbody", "tr", "th", "td",
}
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}}
URL_SCHEMES = {"http", "https", "mailto"}
CACHE_VERSION = "2"  # bump when the allow-list or renderer options change


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


# --- quotes: what a piece of source shows, character by character -----------------------------

BOLD, ITALIC, CODE, STRUCK = "bold", "italic", "code", "struck"
# Not from Markdown: context set around a quote in a table (the question, neighbouring sentences), shown lighter.
MUTED = "muted"
_STYLE_OF = {"strong": BOLD, "em": ITALIC, "s": STRUCK}
# Separators the reader sees between blocks and table cells; they are not characters of the source.
BLOCK_BREAK, CELL_BREAK = "\n", " | "


class Run(NamedTuple):
    """Text shown in one style; `start` is its offset in the source (None for a separator).

    A tuple rather than a frozen dataclass: every quote of a table is made of runs, and a frozen dataclass took
    about three times as long to build.
    """

    text: str
    styles: frozenset[str] = frozenset()
    start: int | None = None


class RichText(str):
    """A quote: its plain text, with the styled runs it was made of for writers that keep bold and italics."""

    runs: tuple[Run, ...]

    def __new__(cls, runs: Iterable[Run]) -> RichText:
        runs = tuple(runs)
        value = super().__new__(cls, runs[0].text if len(runs) == 1 else "".join([run.text for run in runs]))
        value.runs = runs
        return value


# The line breaks markdown-it counts its lines by (token.map): a lone carriage return ends a line too.
_LINE_BREAK = re.compile(r"\r\n?|\n")


def _line_starts(source: str) -> list[int]:
    starts = [0]
    for match in _LINE_BREAK.finditer(source):
        starts.append(match.end())
    return starts


def _inline_runs(token, source: str, start: int, styles: set[str], out: list[Run]) -> int:
    """The runs of one inline token; each text piece is found in the source from `start` on. Returns where it ended."""
    cursor = start
    markup_end = start  # where the link being read ends in the source: its target is not shown
    for child in token.children or ():
        kind = child.type
        if kind in ("link_open", "image") and child.meta.get("markup"):
            markup_end = _markup_end(child.meta["markup"], source, cursor)
        if kind in ("link_close", "image"):
            # Without this, "[a](b)b" mapped its last "b" to the link's target, "![a](b)a" its "a" to the alt text.
            cursor = max(cursor, markup_end)
        if kind in ("text", "code_inline"):
            if not child.content:
                continue
            shown = styles | {CODE} if kind == "code_inline" else set(styles)
            cursor = _text_runs(child.content, frozenset(shown), source, cursor, out)
        elif kind in ("softbreak", "hardbreak"):
            # A lone "\r" breaks a line too: looking for "\n" alone jumped to a later line and lost the text between.
            found = _LINE_BREAK.search(source, cursor)
            out.append(Run(" " if kind == "softbreak" else "\n", frozenset(), None))
            cursor = found.end() if found else cursor
        elif kind.endswith("_open") and kind[:-5] in _STYLE_OF:
            styles.add(_STYLE_OF[kind[:-5]])
        elif kind.endswith("_close") and kind[:-6] in _STYLE_OF:
            styles.discard(_STYLE_OF[kind[:-6]])
        elif kind == "image":
            # Images are never shown (see the module's docstring); skip the alt text's source.
            continue
    return cursor


def _markup_end(markup: str, source: str, cursor: int) -> int:
    """Where a link's or image's markup, read from `cursor` on, ends in the source (line by line: a link can wrap)."""
    for line in markup.split("\n"):
        at = source.find(line.lstrip(), cursor)
        if at < 0:
            return cursor
        cursor = at + len(line.lstrip())
    return cursor


# How markdown-it shows some source other than verbatim: a table cell's escaped pipe "\|" as "|", a line break
# inside a code span as a space (with the next line's indent or quote markers, which are markup), a tab only partly
# taken by a list's indent as spaces.
_SHOWN_AS = {"|": r"\\?\|", " ": r"(?:[ \t]|(?:\r\n?|\n)[ \t>]*)"}
_SHOWN_FROM = re.compile(r"[\r\n]|\\\|")


def _text_runs(text: str, styles: frozenset[str], source: str, cursor: int, out: list[Run]) -> int:
    """A text piece as runs that each map to the source exactly, found from `cursor` on. Returns where it ended."""
    at = source.find(text, cursor)
    # Found verbatim, and not past a place it could have been shown from: "`  \n`" shows "   ", found verbatim in a
    # later line.
    if at >= 0 and not ((" " in text or "|" in text) and _SHOWN_FROM.search(source, cursor, at)):
        out.append(Run(text, styles, at))
        return at + len(text)
    pattern = "".join(f"({_SHOWN_AS[c]})" if c in _SHOWN_AS else re.escape(c) for c in text)
    match = re.compile(pattern).search(source, cursor)
    if match is None:  # not found at all: shown, but not mapped
        out.append(Run(text, styles, None))
        return cursor
    # Cut the text where the source differs: the pieces between map exactly, an escaped pipe maps to its pipe
    # (the backslash is markup), a line break shown as a space is a separator.
    piece, piece_start, group = "", match.start(), 0
    for char in text:
        if char in _SHOWN_AS:
            group += 1
            written_start, written_end = match.span(group)
            if source[written_start:written_end] != char:
                if piece:
                    out.append(Run(piece, styles, piece_start))
                if char == "|":
                    piece, piece_start = "|", written_end - 1
                else:
                    out.append(Run(" ", styles, None))
                    piece, piece_start = "", written_end
                continue
        piece += char
    if piece:
        out.append(Run(piece, styles, piece_start))
    return match.end()


_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")
# A cell border: a pipe not escaped by a backslash right before it (markdown-it's table rule, escapedSplit).
_CELL_PIPE = re.compile(r"(?<!\\)\|")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")


@lru_cache(maxsize=4096)
def visible_runs(source: str) -> tuple[Run, ...]:
    """Everything `source` shows when rendered, in reading order, with block and cell separators."""
    out: list[Run] = []
    lines = _line_starts(source)
    styles: set[str] = set()
    pending_break = False
    in_cell = False
    row_cursor = 0  # where the previous cell of a table row ended
    after_marker = 0
    for token in _md.parse(source):
        kind = token.type
        if kind in ("td_open", "th_open"):
            if in_cell:
                out.append(Run(CELL_BREAK))
            in_cell = True
            continue
        if kind == "tr_open":
            in_cell = False
            row_cursor = 0
        if kind == "list_item_open" and token.info and token.map is not None:
            # An ordered list's number is content ("2. Cook together" ranks or orders it); a bullet is only a mark.
            if pending_break and out:
                out.append(Run(BLOCK_BREAK))
            pending_break = False
            marker = token.info + token.markup
            at = source.find(marker, max(lines[token.map[0]], after_marker))  # "1. 1." nests two items on a line
            out.append(Run(marker, frozenset(), at if at >= 0 else None))
            out.append(Run(" "))
            after_marker = at + len(marker) if at >= 0 else 0  # the item's text is looked for after its number
            continue
        if kind in ("fence", "code_block", "inline") and token.map is not None:
            if pending_break and out:
                out.append(Run(BLOCK_BREAK))
            pending_break = False
            start, after_marker = max(lines[token.map[0]], after_marker), 0
            if kind == "inline" and in_cell:
                # Every cell of a row is mapped to the row's line: from the line's start, "| a | a |" found both
                # cells' text in the first.
                row_cursor = _inline_runs(token, source, max(start, row_cursor), styles, out)
            elif kind == "inline":
                if _TABLE_ROW.match(token.content.split("\n", 1)[0]):
                    _table_lines_runs(token, source, start, out)
                else:
                    _inline_runs(token, source, start, styles, out)
            else:
                _code_runs(token.content, source, start, out)
                pending_break = True
        if kind.endswith("_close") and kind in ("paragraph_close", "heading_close", "tr_close", "blockquote_close",
                                                "list_item_close"):
            pending_break = True
    return tuple(out)


def _code_runs(content: str, source: str, start: int, out: list[Run]) -> None:
    """A code block line by line: an indented block's lines lose their indentation, so each is found on its own."""
    cursor = start
    for number, line in enumerate(content.rstrip("\n").split("\n")):
        if number:
            out.append(Run("\n"))
        if not line:
            continue
        at = source.find(line, cursor)
        if at < 0 and line.startswith(" "):
            # A tab only partly taken by a list's indent shows as spaces: they stand for no character of the source.
            code = line.lstrip(" ")
            out.append(Run(line[:len(line) - len(code)], frozenset({CODE}), None))
            if not code:
                continue
            line, at = code, source.find(code, cursor)
        out.append(Run(line, frozenset({CODE}), at if at >= 0 else None))
        cursor = at + len(line) if at >= 0 else cursor


def _table_lines_runs(token, source: str, start: int, out: list[Run]) -> None:
    """Table rows quoted without their header (an excerpt from the middle of a table): cells, no pipes."""
    cursor = start
    for line in token.content.split("\n"):
        at = source.find(line, cursor)
        line_start = at if at >= 0 else cursor
        cursor = at + len(line) if at >= 0 else cursor
        if _TABLE_RULE.match(line):
            continue
        if out and out[-1].text != BLOCK_BREAK:
            out.append(Run(BLOCK_BREAK))
        # A row's outer pipes are optional (a lazy line of the paragraph has none): a cell's offset counts only the
        # pipes that are there.
        row = line.strip()
        offset = line_start + line.index(row)
        if row.startswith("|"):
            row, offset = row[1:], offset + 1
        if row.endswith("|"):
            row = row[:-1]
        for number, cell in enumerate(_CELL_PIPE.split(row)):
            if number:
                out.append(Run(CELL_BREAK))
            if cell.strip():
                lead = len(cell) - len(cell.lstrip())
                # As the table shows it (markdown-it's escapedSplit): "\|" is a pipe inside the cell, not a border.
                for inline in _md.parseInline(cell.strip().replace("\\|", "|")):
                    _inline_runs(inline, source, offset + lead, set(), out)
            offset += len(cell) + 1


# Emphasis, strikethrough or code markers a quote cut out of a longer styled passage is left with (their partner lies
# outside the quote): markers, not content, so they never reach a paper. Only what Markdown could read as a marker
# (a single "~" never strikes through) and only where a cut leaves one: a closing marker anywhere (its opening lies
# before the quote), an opening one where the quote, a cell or a line starts. An opening marker further on ("use
# *args", "~5 %", "_x") is as likely to be content, and content is never dropped.
_DELIMITER = r"(?:[*_]{1,3}|(?<!~)~~(?!~)|`+)"
_STRAY_OPENING = re.compile(rf"(?<!\S){_DELIMITER}(?=\S)")
_STRAY_CLOSING = re.compile(rf"(?<=\S){_DELIMITER}(?!\S)")
# A source with none of these characters, and no start that can open a Markdown block, shows exactly as written: no
# Markdown to read. Only the first line's start is looked at: any other line follows a line break, which is one of the
# characters. The start is matched loosely (an indent, "1.5 litres", "-3 °C" go to the parser too, which shows them
# as they are) because "#", ">text", "---" and a tab-indented line are blocks.
# (One regex with a ^ alternative tried at every position took 3-4 times as long, for every quote and segment shown.)
# An ordered list item's number, which a quote shows before the item's text.
_ORDINAL = re.compile(r"\d{1,9}[.)]")
_MARKDOWN_CHARS = re.compile(r"[*_`\[\]~<|!\n\r\0]")
_MARKDOWN_OPENING = re.compile(r"\s|[#>+-]|\d+[.)]")


def _is_plain(source: str) -> bool:
    """Whether `source` has no Markdown: it shows as written, spaces at its ends aside."""
    return not _MARKDOWN_CHARS.search(source) and not _MARKDOWN_OPENING.match(source)


def quote_runs(source: str) -> tuple[Run, ...]:
    """What `source` (a segment, an excerpt or a turn) shows, trimmed, without stray markers at its ends."""
    if _is_plain(source):
        text = source.strip()
        return (Run(text, frozenset(), source.find(text)),) if text else ()
    return _markdown_quote_runs(source)


def _markdown_quote_runs(source: str) -> tuple[Run, ...]:
    runs, starting = [], True  # at the quote's start, or a cell's or line's: an opening marker there is a stray
    for run in visible_runs(source):
        if run.text:
            runs.extend(_without_strays(run, starting=starting))
            starting = run.start is None or (starting and (not run.text.strip() or bool(_ORDINAL.fullmatch(run.text))))
    # Separators at the ends, and blanks, are trimmed after the strays go: a row "|**  |* |" was quoted as "| *".
    while runs and (runs[0].start is None or not runs[0].text.strip()):
        runs.pop(0)
    while runs and (runs[-1].start is None or not runs[-1].text.strip()):
        runs.pop()
    if runs:
        runs[0] = _stripped(runs[0], lead=True)
        runs[-1] = _stripped(runs[-1], lead=False)
    return tuple(run for run in runs if run.text)


def _without_strays(run: Run, *, starting: bool) -> list[Run]:
    """The run without the markers Markdown left unpaired because the quote was cut inside a styled passage."""
    if run.styles or run.start is None:
        return [run]
    strays = list(_STRAY_CLOSING.finditer(run.text))
    if starting and (opening := _STRAY_OPENING.match(run.text, len(run.text) - len(run.text.lstrip()))):
        strays.insert(0, opening)
    if not strays:
        return [run]
    pieces, last = [], 0
    for match in strays:
        if match.start() < last:
            continue
        if match.start() > last:
            pieces.append(Run(run.text[last:match.start()], run.styles, run.start + last))
        last = match.end()
    if last < len(run.text):
        pieces.append(Run(run.text[last:], run.styles, run.start + last))
    return pieces


def _stripped(run: Run, *, lead: bool) -> Run:
    text = run.text.lstrip() if lead else run.text.rstrip()
    moved = len(run.text) - len(text) if lead else 0
    return Run(text, run.styles, None if run.start is None else run.start + moved)


def quote_text(source: str) -> RichText:
    """The quote as plain text (a str), keeping its styled runs for DOCX and LaTeX writers."""
    return RichText(quote_runs(source))


_TAGS = {BOLD: ("<strong>", "</strong>"), ITALIC: ("<em>", "</em>"), CODE: ("<code>", "</code>"),
         STRUCK: ("<del>", "</del>"), MUTED: ('<span class="quote-context">', "</span>")}


@lru_cache(maxsize=8192)
def quote_html(source: str) -> SafeString:
    """The quote as inline HTML: bold, italics, code and struck text kept, every character escaped."""
    if _is_plain(source):
        return mark_safe(escape(source.strip()))  # noqa: S308 - escaped
    return runs_html(quote_runs(source))


def runs_html(runs: Iterable[Run]) -> SafeString:
    """Styled runs as inline HTML (line breaks as <br>)."""
    parts = []
    for run in runs:
        html = escape(run.text).replace("\n", "<br>")
        for style in sorted(run.styles):
            html = _TAGS[style][0] + html + _TAGS[style][1]
        parts.append(html)
    return mark_safe("".join(parts))  # noqa: S308 - every piece of text escaped above


# --- word diffs: what changed between two versions of a text ----------------------------------

# A word with the spacing before it, or spacing at the very end: the runs put back together give the text exactly.
_WORD_RE = re.compile(r"\s*\S+|\s+$")
# Rendered HTML split into tags and the text between them (nh3's output: no "<" inside text).
_HTML_PIECE = re.compile(r"(<[^>]*>)")
_SPACED_WORD = re.compile(r"\s+|\S+")


def _word_changes(old_words: list[str], new_words: list[str]) -> Iterable[tuple[str, int, int, int, int]]:
    """difflib's opcodes over two lists of words (compared without their spacing): the one word matcher."""
    return difflib.SequenceMatcher(None, old_words, new_words, autojunk=False).get_opcodes()


def diff_words(old: str, new: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """Old and new text as runs tagged same/del (old) and same/ins (new), compared word by word.

    Words are compared without their spacing, so a re-wrapped line does not mark every word; the runs keep the
    spacing of their own text. Rendered by themes/_word_diff.html, which escapes every run.
    """
    old_tokens, new_tokens = _WORD_RE.findall(old or ""), _WORD_RE.findall(new or "")
    old_runs: list[tuple[str, str]] = []
    new_runs: list[tuple[str, str]] = []
    for op, i1, i2, j1, j2 in _word_changes([t.strip() for t in old_tokens], [t.strip() for t in new_tokens]):
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


def diff_rendered(old: str, new: str) -> tuple[SafeString, SafeString]:
    """Two Markdown texts rendered by the one renderer, the words that changed marked: <del> in old, <ins> in new.

    Only the text between tags is compared and marked, one word at a time, so a mark never straddles an element
    and both sides stay well-formed; the marks carry a class, apart from the answers' own ~~struck~~ text.
    """
    old_html, new_html = render_turns([old or "", new or ""])
    old_pieces, new_pieces = _html_pieces(old_html), _html_pieces(new_html)
    old_changed: set[int] = set()
    new_changed: set[int] = set()
    for op, i1, i2, j1, j2 in _word_changes(_words(old_pieces), _words(new_pieces)):
        if op != "equal":
            old_changed.update(range(i1, i2))
            new_changed.update(range(j1, j2))
    return _marked(old_pieces, old_changed, "del"), _marked(new_pieces, new_changed, "ins")


def _html_pieces(html: str) -> list[str]:
    """Tags, runs of spacing and words, in order; joined they give the HTML back."""
    pieces: list[str] = []
    for i, part in enumerate(_HTML_PIECE.split(html)):
        pieces += [part] if i % 2 else _SPACED_WORD.findall(part)
    return pieces


def _is_word(piece: str) -> bool:
    return not piece.startswith("<") and not piece.isspace()


def _words(pieces: list[str]) -> list[str]:
    return [p for p in pieces if _is_word(p)]


def _marked(pieces: list[str], changed: set[int], tag: str) -> SafeString:
    out, n = [], 0
    for piece in pieces:
        if _is_word(piece):
            out.append(f'<{tag} class="word-changed">{piece}</{tag}>' if n in changed else piece)
            n += 1
        else:
            out.append(piece)
    # Neighbouring changed words of one text read as one mark.
    html = re.sub(rf'</{tag}>(\s+)<{tag} class="word-changed">', r"\1", "".join(out))
    return mark_safe(html)  # noqa: S308 - pieces of sanitised HTML; only the marks are added
