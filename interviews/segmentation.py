"""Split a turn's text into coding units (segments).

A segment is one sentence of a paragraph, or one whole Markdown block: a
heading, a list item, a table row, a fenced code block or a block quote.
Offsets are Unicode code points into the turn text, end exclusive, so
``text[span.start:span.end]`` is the segment, trimmed of surrounding
whitespace. Markers stay inside the segment (``"- item"``, ``"## Title"``,
the fences of a code block): the segment is the source as written; use
:func:`strip_markup` for a plain-text rendering.

Why not one library for everything? On the peer corpus pysbd is careful but
slow (~2,400 sentences/s) and blingfire fast but wrong on abbreviations and
Markdown (see bench/RESULTS.md). Most sentence ends in LLM answers are easy
("word. Next"), so a rule pass decides those at regex speed and only the
doubtful ones (initials, "U.S.", "etc.", small numbers, ellipses) go to
pysbd, on a short window around the candidate.

Several items run together on one line ("1) first 2) second", "a. … b. …",
"• 9. … • 10. …") are split before each next label in sequence when they open a
block or follow a sentence end; after a colon they stay one sentence, as LLM
prose writes them. A spaced ellipsis (". . .", ". . . .") is one terminator,
and no segment is punctuation only. Measured against the published English
"Golden Rules" shipped with pysbd and syntok's test text (bench/RESULTS.md).

Invariants (property-tested in interviews/tests/test_segmentation.py):
segments are ordered and non-overlapping, never start or end with
whitespace, cover every non-blank character except thematic-break lines
(``---``, ``***``), which carry no words; and re-segmenting a segment's own
text yields that one segment again.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_left, bisect_right, insort
from functools import lru_cache
from typing import Literal, NamedTuple

Kind = Literal["sentence", "heading", "list_item", "table_row", "code_block", "block_quote"]
KINDS: tuple[Kind, ...] = (
    "sentence",
    "heading",
    "list_item",
    "table_row",
    "code_block",
    "block_quote",
)


class Span(NamedTuple):
    start: int
    end: int
    kind: Kind


# --- Markdown blocks -------------------------------------------------------

_FENCE = re.compile(r"[^\S\n]*(`{3,}|~{3,})")
_ATX = re.compile(r"[^\S\n]*#{1,6}(?:\s|$)")
_HR = re.compile(r"[^\S\n]*([-*_])(?:[ \t]*\1){2,}\s*$")
_SETEXT = re.compile(r"[^\S\n]*(?:=+|-+)\s*$")
_QUOTE = re.compile(r"[^\S\n]*>")
_PIPE_ROW = re.compile(r"[^\S\n]*\|")
_TABLE_DELIM = re.compile(r"[^\S\n]*\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?\s*$")
# Bullets an LLM or a plain-text export writes; ordered markers up to three
# digits so a wrapped line starting "2023. " stays prose.
_LIST = re.compile(r"[^\S\n]*(?:[-*+•◦▪‣]|\d{1,3}[.)])(?:\s|$)")


def _is_delim(line: str) -> bool:
    return "|" in line and "-" in line and _TABLE_DELIM.match(line) is not None


def _block_start(line: str, next_line: str | None) -> bool:
    """Does this line open a block, so that it interrupts a paragraph?"""
    return bool(
        _FENCE.match(line)
        or _ATX.match(line)
        or _HR.match(line)
        or _QUOTE.match(line)
        or _PIPE_ROW.match(line)
        or _LIST.match(line)
        or ("|" in line and next_line is not None and _is_delim(next_line))
    )


def _trimmed(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


# A lone carriage return (old Mac line ends, some chat exports) ends a line, as Markdown and the transcript's renderer
# read it: "# Title\rText" is a heading and a sentence, not one heading.
_LONE_CR = re.compile(r"\r(?!\n)")


def _with_line_feeds(text: str) -> str:
    """`text` with each lone carriage return read as a line feed: the same length, so every offset stays the text's own."""
    return _LONE_CR.sub("\n", text) if "\r" in text else text


def segment_text(text: str) -> list[Span]:
    """Split ``text`` into ordered, non-overlapping, trimmed segments."""
    text = _with_line_feeds(text)
    lines = text.split("\n")
    starts = [0] * len(lines)
    pos = 0
    for i, line in enumerate(lines):
        starts[i] = pos
        pos += len(line) + 1
    spans: list[Span] = []
    i, n = 0, len(lines)

    def emit(first: int, last: int, kind: Kind) -> None:
        s, e = _trimmed(text, starts[first], starts[last] + len(lines[last]))
        if s < e:
            spans.append(Span(s, e, kind))

    while i < n:
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        nxt = lines[i + 1] if i + 1 < n else None
        fence = _FENCE.match(line)
        if fence:
            last = _end_of_fence(lines, i, fence.group(1))
            emit(i, last, "code_block")
            i = last + 1
            continue
        if _ATX.match(line):
            emit(i, i, "heading")
            i += 1
            continue
        if _HR.match(line):
            i += 1  # a rule carries no words: not a coding unit
            continue
        if _QUOTE.match(line):
            last = _end_of_lazy_block(lines, i, quote=True)
            emit(i, last, "block_quote")
            i = last + 1
            continue
        if _PIPE_ROW.match(line) or ("|" in line and nxt is not None and _is_delim(nxt)):
            # The delimiter row belongs to the header row it underlines.
            last = i + 1 if nxt is not None and _is_delim(nxt) else i
            emit(i, last, "table_row")
            i = last + 1
            # Later rows need their leading pipe: alone, "a | b" is prose.
            while i < n and _PIPE_ROW.match(lines[i]):
                emit(i, i, "table_row")
                i += 1
            continue
        if _LIST.match(line):
            last = _end_of_lazy_block(lines, i, quote=False)
            _items_and_sentences(text, *_trimmed(text, starts[i], starts[last] + len(lines[last])), spans)
            i = last + 1
            continue
        i = _paragraph(text, lines, starts, i, spans)
    return spans


def _end_of_fence(lines: list[str], i: int, fence: str) -> int:
    char, size = fence[0], len(fence)
    closing = re.compile(r"[^\S\n]*" + re.escape(char) + "{" + str(size) + r",}\s*$")
    for j in range(i + 1, len(lines)):
        if closing.match(lines[j]):
            return j
    # An unclosed fence runs to the end, as CommonMark renders it.
    last = len(lines) - 1
    while last > i and not lines[last].strip():
        last -= 1
    return last


def _end_of_lazy_block(lines: list[str], i: int, *, quote: bool) -> int:
    """Last line of a list item or quote: its own line plus lazy continuations."""
    last = i
    for j in range(i + 1, len(lines)):
        line = lines[j]
        if not line.strip():
            break
        nxt = lines[j + 1] if j + 1 < len(lines) else None
        if quote and _QUOTE.match(line):
            last = j
            continue
        if _block_start(line, nxt) or _SETEXT.match(line):
            break
        last = j
    return last


def _paragraph(text: str, lines: list[str], starts: list[int], i: int, spans: list[Span]) -> int:
    """Consume a paragraph from line ``i``; append its sentences; return the next line."""
    first, last, n = i, i, len(lines)
    j = i + 1
    while j < n:
        line = lines[j]
        if not line.strip():
            break
        if _SETEXT.match(line):
            # Setext heading: the paragraph plus its underline is one heading.
            s, e = _trimmed(text, starts[first], starts[j] + len(line))
            spans.append(Span(s, e, "heading"))
            return j + 1
        if _block_start(line, lines[j + 1] if j + 1 < n else None):
            break
        last = j
        j += 1
    _items_and_sentences(text, *_trimmed(text, starts[first], starts[last] + len(lines[last])), spans)
    return last + 1


def _items_and_sentences(text: str, start: int, end: int, spans: list[Span]) -> None:
    """A list item or paragraph: its inline enumeration items, then the sentences of the rest.

    An item that opens with a list marker ("2) …") is one list item, as it would be on a line
    of its own; any other text ("a. …", prose) is split into sentences.
    """
    chunks = _enumerated_items(text, start, end)
    for k, (chunk_start, chunk_end) in enumerate(chunks):
        is_item = _LIST.match(text, chunk_start, chunk_end) is not None
        if is_item and (len(chunks) == 1 or k < len(chunks) - 1):
            spans.append(Span(chunk_start, chunk_end, "list_item"))
            continue
        # Prose, or the last item of an inline run, whose end only a sentence end can tell.
        for n, (a, b) in enumerate(split_sentences(text, chunk_start, chunk_end)):
            if is_item and n == 0:
                spans.append(Span(a, b, "list_item"))
            elif _ENUM_MARK.match(text, a, b):  # "。a) one b) two": a run that opens a sentence
                spans.extend(Span(x, y, "sentence") for x, y in _enumerated_items(text, a, b))
            else:
                spans.append(Span(a, b, "sentence"))


# "1) first 2) second", "a. one b. two", "• 9. x • 10. y": several items run together on one line.
_ENUM_MARK = re.compile(r"(?P<bullet>[-*+•◦▪‣⁃][^\S\n]*)?(?P<label>\d{1,3}|[a-z])(?P<punct>\.\)|[.)])(?=\s)")
_ENUM_CANDIDATE = re.compile(r"(?<!\S)" + _ENUM_MARK.pattern)
# Every label _ENUM_CANDIDATE finds after the start has a space or bullet before it: a cheaper first look.
_ENUM_HINT = re.compile(r"[\s\-*+•◦▪‣⁃](?:\d{1,3}|[a-z])(?:\.\)|[.)])\s")
ITEM_REACH = 1000  # characters from one item's label to the next


def _enumerated_items(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Split a block before each item of an inline enumeration; the text before the first item stays whole.

    An enumeration opens the block or follows a sentence end ("… stand out. 1) Talk 2) Write"),
    never a colon ("two reasons: 1. cost and 2. access" is one sentence), and it needs the next
    label in sequence ("2)" after "1)", "b." after "a.", same bullet and punctuation).
    """
    if not _ENUM_MARK.match(text, start, end) and not _ENUM_HINT.search(text, start, end):
        return [(start, end)]  # most paragraphs: no label anywhere, decided by one quick scan
    cuts = [start]
    followed: set[int] = set()  # items already reached from an earlier label: their run is walked
    pos = start
    # At the start no space need precede the marker ("the。a) …" starts a sentence at "a)").
    while (mark := (pos == start and _ENUM_MARK.match(text, pos, end)) or _ENUM_CANDIDATE.search(text, pos, end)):
        pos = mark.end()
        if mark.start() in followed:
            continue
        before = cuts[bisect_right(cuts, mark.start()) - 1]
        if mark.start() > before and not _ends_sentence(text, before, mark.start()):
            continue
        items = _successors(text, mark, end)
        followed.update(items)
        for cut in ([mark.start(), *items] if items else []):
            if cut not in cuts:
                insort(cuts, cut)
    bounds = [*cuts, end]
    return [_trimmed(text, a, b) for a, b in zip(bounds, bounds[1:], strict=False) if a < b]


def _ends_sentence(text: str, start: int, end: int) -> bool:
    """Does ``text[start:end]`` end with a sentence end ("." "!" "?" "…", then closers), not a colon?"""
    i = end
    while i > start and text[i - 1].isspace():
        i -= 1
    while i > start and text[i - 1] in _CLOSERS:
        i -= 1
    return i > start and text[i - 1] in ".!?…"


def _successors(text: str, mark: re.Match[str], end: int) -> list[int]:
    """Where the items after ``mark`` start: "2)", "3)", … in sequence, with the same bullet."""
    bullet = (mark.group("bullet") or "").strip()
    label, punct = mark.group("label"), mark.group("punct")
    lead = re.escape(bullet) + r"[^\S\n]*" if bullet else ""
    found, pos = [], mark.end()
    while True:
        label = str(int(label) + 1) if label.isdigit() else chr(ord(label) + 1)
        # An item is looked for within ITEM_REACH of the previous one: bounded work on hostile runs.
        nxt = re.compile(r"(?<=\s)" + lead + re.escape(label + punct) + r"(?=\s)").search(
            text, pos, min(end, pos + ITEM_REACH))
        if nxt is None:
            return found
        found.append(nxt.start())
        pos = nxt.end()


# --- Sentences -------------------------------------------------------------

_EMOJI = "\U0001f000-\U0001faff\u2600-\u27bf\u2b00-\u2bff\ufe0f\u200d"
_CLOSERS = "\"'”’»›)\\]*_~"
# A candidate end: terminator, closing quotes/brackets/emphasis, emoji that
# belong to the sentence, then whitespace. Full-width CJK terminators need
# no whitespace after them. A spaced ellipsis (". . ." or ". . . .") is one
# terminator, so its dots are never candidates of their own.
# Matches start only at the first terminator of a run, and every repeat is
# possessive with one way to split it, so a hostile run of "....." or emoji
# costs linear time, never catastrophic backtracking.
_CANDIDATE = re.compile(
    r"(?<![.!?…‼⁇⁈⁉])(?P<term>[.!?…‼⁇⁈⁉]++(?:[ \u00a0]\.(?=[\s" + _CLOSERS + r"]|$))*+)"
    r"(?P<close>(?:[" + _CLOSERS + r"]|[ \u00a0\u202f]+[»›])*+)"
    r"(?P<emo>(?:[ \t]*+[" + _EMOJI + r"])*+)(?P<ws>\s+|$)"
    r"|(?<![。！？｡])(?P<cjk>[。！？｡]++)(?P<cjkclose>[」』）》〉】\"”’)]*+)(?P<cjkws>\s*+)"
)
# Every candidate starts at one of these: trying _CANDIDATE only there finds the same matches as
# _CANDIDATE.finditer, five times faster (its leading lookbehind keeps re from skipping ahead itself).
_TERMINATOR = re.compile(r"[.!?…‼⁇⁈⁉。！？｡]")


def _candidates(para: str) -> list[re.Match[str]]:
    """_CANDIDATE's matches in ``para``, left to right, none overlapping."""
    found: list[re.Match[str]] = []
    pos = 0
    for t in _TERMINATOR.finditer(para):
        at = t.start()
        if at >= pos and (m := _CANDIDATE.match(para, at)):
            found.append(m)
            pos = m.end()
    return found


_OPENERS = "*_\"'“‘«‹([¿¡`~"
_BLOCK_CHARS = frozenset("#-*+•◦▪‣0123456789>|`~=_ \t")


_LINE_STARTS = (_FENCE, _ATX, _HR, _QUOTE, _PIPE_ROW, _LIST, _SETEXT)
_NEWLINE = re.compile("\n")
_SPACE = re.compile(r"\s")


class _Lines:
    """Where the lines of a paragraph end, found once and only if a check needs them."""

    __slots__ = ("_delim", "_ends", "multiline", "para")

    def __init__(self, para: str) -> None:
        self.para = para
        self.multiline = "\n" in para
        self._ends: list[int] | None = None
        self._delim: dict[int, bool] = {}

    def end(self, pos: int) -> int:
        if self._ends is None:
            self._ends = [m.start() for m in _NEWLINE.finditer(self.para)] if "\n" in self.para else []
        k = bisect_left(self._ends, pos)
        return self._ends[k] if k < len(self._ends) else len(self.para)

    def is_delim(self, start: int) -> bool:
        if start not in self._delim:
            self._delim[start] = _is_delim(self.para[start : self.end(start)])
        return self._delim[start]


def _starts_block(para: str, pos: int, lines: _Lines) -> bool:
    """Would the text at ``pos`` open a Markdown block if it began a line?

    A sentence never starts with such text, or the sentence segmented on its
    own would parse as that block. Matching with an end position, not on a
    slice, keeps a long single-line paragraph linear.
    """
    blockish = para[pos] in _BLOCK_CHARS
    if not blockish and not lines.multiline:
        return False  # the common case: a letter, on a paragraph's only line
    end = lines.end(pos)
    if blockish and any(p.match(para, pos, end) for p in _LINE_STARTS):
        return True
    # A table header: a pipe on the rest of this line and a delimiter row below.
    return end < len(para) and lines.is_delim(end + 1) and para.find("|", pos, end) >= 0


_BACKTICKS = re.compile(r"`+")

# Never ends a sentence when followed by a word: titles and Latin/German
# abbreviations that introduce what follows.
_NEVER_END = frozenset(
    """vs cf e.g i.e eg ie viz approx ca z.b d.h bzw vgl ggf evtl sog s.o u.u dt""".split()
)
# Titles and month abbreviations count only when capitalised: "Dr. Smith", "Rep. Lee",
# "Jan. 5" — but "reminds me." and "our union rep." end their sentences.
# Place-name prefixes belong here too: "Mt. Fuji", "Ft. Worth", "Pt. Reyes".
_TITLES = frozenset(
    """Mr Mrs Ms Mx Messrs Mmes Dr Drs Prof Profs Sr St Ste Mme Mlle Me Fr Hr Msgr Gen Adm Brig Maj
    Col Lt Cmdr Sgt Cpl Pvt Capt Supt Insp Det Rev Revd Hon Rt Sen Rep Gov Pres Amb Atty Mt Mts Ft Pt
    Jan Feb Mar Apr Jun Jul Aug Sep Sept Oct Nov Dec""".split()
)
# Abbreviations only before a number ("No. 5", "N°. 12"); ordinary words otherwise.
_NUMBERED = frozenset("no nr n° nº vol pp p op sec ch art fig figs".split())
# "At 5 a.m. Mr. Smith left": a bare time phrase opening a sentence is not a sentence of its own.
_CLOCK = frozenset("a.m p.m".split())
_TIME_PREPOSITIONS = frozenset("at by before after around about until till from since".split())
# Often end a sentence too: pysbd decides from the words around them.
_MAYBE_END = frozenset(
    """etc inc ltd co corp jr llc plc u.s u.k u.s.a u.n e.u a.m p.m al usw
    ph.d m.d b.a m.a b.sc m.sc dept univ est""".split()
)
# Words that almost always begin a new sentence after "U.S." or "etc."
_STARTERS = frozenset(
    """The This That These Those It Its They Their We Our I He She His Her You
    Your Other Others Many Most Some Such In On At For But However And So As If
    When While Although Yet A An There Here What Why How""".split()
)
_MONTHS = frozenset(
    """january february march april may june july august september october
    november december januar februar märz mai juni juli oktober dezember
    janvier février mars avril juin juillet août septembre octobre novembre
    décembre""".split()
)

BREAK, NO_BREAK, DOUBT = 1, 0, 2

WINDOW = 200  # characters of context pysbd sees on each side of a doubtful end
MAX_DOUBTS = 20  # pysbd calls per sentence; counted from the sentence start, so re-segmenting agrees


# Words some rule of _decide looks up; any other lowercase word before ". Capital" ends its sentence.
_LISTED = frozenset(w.lower() for w in _NEVER_END | _TITLES | _NUMBERED | _CLOCK | _MAYBE_END)


def _plain_end(para: str, m: re.Match[str], sent_start: int) -> bool:
    """Is the candidate the commonest sentence end in prose, "… the rota. The …", one _decide breaks at?

    A lone period right after a lowercase ASCII word of two letters or more that no list names, then
    whitespace and an ASCII capital. Only for a paragraph of one line or without a "|" (in others _decide
    also looks for a table header below). interviews/tests/test_segmentation.py checks _decide agrees.
    """
    at = m.start()
    if m.end("emo") != at + 1 or para[at] != "." or not "A" <= para[m.end()] <= "Z":
        return False
    word = para[max(para.rfind(" ", sent_start, at) + 1, sent_start) : at]
    return len(word) > 1 and word.isascii() and word.isalpha() and word.islower() and word not in _LISTED


def split_sentences(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """Sentence spans of ``text[start:end]`` (one paragraph), as absolute offsets."""
    if end is None:
        end = len(text)
    para = text[start:end]
    masked = _code_spans(para) if "`" in para else []
    lines = _Lines(para)
    cuts: list[tuple[int, int]] = []  # (end of sentence, start of next), relative
    sent_start = doubts = 0
    # The last match may sit at the very end: not a cut, but it still bounds
    # the window pysbd sees, the same whether or not more text follows.
    matches = _candidates(para)
    size, last = len(para), len(matches) - 1
    shortcut = not lines.multiline or "|" not in para
    for k, m in enumerate(matches):
        if m.end() >= size or (masked and _inside(m.start(), masked)):
            continue
        if shortcut and _plain_end(para, m, sent_start):
            if _has_words(para, sent_start, m.start()):
                cuts.append((m.end("emo"), m.end()))
                sent_start, doubts = m.end(), 0
            continue
        following = _term_end(matches[k + 1]) if k < last else size
        if m.start("cjk") >= 0:
            seg_end, nxt = m.end("cjkclose"), m.end()
            # 「ありがとう。」と言った: a quoted sentence inside a longer one.
            embedded = m.group("cjkclose") and not m.group("cjkws")
            verdict = NO_BREAK if embedded or _starts_block(para, nxt, lines) else BREAK
        else:
            seg_end, nxt = m.end("emo"), m.end()
            verdict = _decide(para, m, sent_start, nxt, following, lines)
        if verdict == DOUBT and doubts >= MAX_DOUBTS:
            verdict = NO_BREAK  # "J. K. L. …" by the thousand: stop asking, keep the sentence whole
        if verdict == DOUBT:
            doubts += 1
            # A bounded window: pysbd only needs the words around the candidate, and a
            # long run of doubtful ends must not cost quadratic time. Both bounds are
            # relative to the sentence and the candidate, so a sentence segmented on
            # its own sees the same window.
            lo, hi = max(sent_start, m.start("term") - WINDOW), min(following, nxt + WINDOW)
            new_start = _pysbd_sentence_start(para[lo:hi], m.start("term") - lo, nxt - lo)
            verdict = BREAK if new_start >= 0 else NO_BREAK
            term_at = m.start("term")
            spaced = para[term_at + 1 : term_at + 2] in (" ", "\u00a0")
            if spaced and term_at < new_start + lo < m.end("term") and term_at > 0 and para[term_at - 1].isalpha():
                # "compounds. . . . The": the period ends the sentence, the ellipsis opens the next.
                nxt = new_start + lo
                seg_end = len(para[:nxt].rstrip())
        term_start = m.start("term") if m.start("term") >= 0 else m.start("cjk")
        if verdict == BREAK and _has_words(para, sent_start, term_start):
            cuts.append((seg_end, nxt))
            sent_start, doubts = nxt, 0
    if cuts and not _has_words(para, cuts[-1][1], size):
        cuts.pop()  # a trailing ". . ." or "!!" stays with the sentence it follows
    out: list[tuple[int, int]] = []
    prev = 0
    for seg_end, nxt in cuts:
        out.append((start + prev, start + seg_end))
        prev = nxt
    out.append((start + prev, start + len(para)))
    return out


def _code_spans(para: str) -> list[tuple[int, int]]:
    """Inline code spans: a backtick run closed by the next run of the same length (CommonMark)."""
    runs = [m.span() for m in _BACKTICKS.finditer(para)]
    spans, i = [], 0
    while i < len(runs):
        a, b = runs[i]
        for j in range(i + 1, len(runs)):
            if runs[j][1] - runs[j][0] == b - a:
                spans.append((a, runs[j][1]))
                i = j
                break
        i += 1
    return spans


_ALNUM = re.compile(r"[^\W_]")


def _has_words(para: str, start: int, end: int) -> bool:
    """Is there more than punctuation in ``para[start:end]``? A segment never is punctuation only."""
    if _ALNUM.search(para, start, end):
        return True  # the usual case, found in C; symbols and emoji need the walk below
    return any(not (ch.isspace() or unicodedata.category(ch).startswith("P")) for ch in para[start:end])


def _inside(pos: int, ranges: list[tuple[int, int]]) -> bool:
    k = bisect_right(ranges, (pos, float("inf"))) - 1
    return k >= 0 and ranges[k][0] <= pos < ranges[k][1]


def _first_letter(para: str, pos: int) -> str:
    while pos < len(para) and para[pos] in _OPENERS:
        pos += 1
    return para[pos] if pos < len(para) else ""


def _term_end(m: re.Match[str]) -> int:
    end = m.end("term")
    return end if end >= 0 else m.end("cjk")


def _decide(para: str, m: re.Match[str], sent_start: int, nxt: int, following: int, lines: _Lines) -> int:
    """Rule verdict for one candidate: BREAK, NO_BREAK or DOUBT."""
    if _starts_block(para, nxt, lines):
        return NO_BREAK
    first = _first_letter(para, nxt)
    if not first or first.islower():
        return NO_BREAK  # sentences start with a capital, a digit or a symbol
    term = m.group("term")
    if "." not in term:
        return BREAK  # "!" / "?" / "…" followed by a capitalised word
    if term != ".":
        return DOUBT  # "..." could end a sentence or trail off
    term_at = m.start("term")
    if sent_start == 0 and (mark := _ENUM_MARK.match(para)) and mark.end() in (m.end("term"), m.end("close")):
        return NO_BREAK  # the "a." or "⁃9." that opens an enumerated item
    word, word_at = _word_before(para, term_at, sent_start)
    if len(word) == 1 and word.isalpha():
        # Spaced abbreviations: "z. B.", "d. h.", "e. g.", "u. a."
        before, _ = _word_before(para, word_at - 1, sent_start) if word_at > sent_start else ("", 0)
        if (before[:-1] + "." + word).lower() in _NEVER_END and before.endswith("."):
            return NO_BREAK
        if (word + "." + _next_word(para, nxt)).lower() in _NEVER_END:
            return NO_BREAK
    if word.isdigit() and len(word) <= 2 and _is_enumeration(para, word, word_at, sent_start, following):
        return NO_BREAK
    if word.lower() in _CLOCK and _is_time_phrase(para[sent_start:word_at].split()):
        return NO_BREAK
    return _decide_word(word, para, nxt, first)


def _word_before(para: str, pos: int, floor: int) -> tuple[str, int]:
    """The word ending at ``pos`` (not before ``floor``) and where it starts."""
    while pos > floor and para[pos - 1].isspace():
        pos -= 1
    # Fast path: the nearest ASCII space, tab or newline, scanned from the right in C.
    i = max(para.rfind(" ", floor, pos), para.rfind("\n", floor, pos), para.rfind("\t", floor, pos)) + 1
    i = max(i, floor)
    if _SPACE.search(para, i, pos):
        i = pos  # other whitespace (NBSP, U+2028…) or controls: walk back one character at a time
        while i > floor and not para[i - 1].isspace():
            i -= 1
    return para[i:pos].lstrip(_OPENERS).rstrip(_CLOSERS), i


def _is_enumeration(para: str, number: str, at: int, floor: int, limit: int) -> bool:
    """An inline "1. ... 2. ..." marker: after a colon or a sentence end, or followed by the next number.

    The search stops at ``limit``, the next candidate, so the verdict is the same when the
    sentence is segmented on its own.
    """
    i = at
    while i > floor and para[i - 1].isspace():
        i -= 1
    if i == floor or para[i - 1] in ":;.!?":
        return True
    return para.find(f" {int(number) + 1}.", at, limit) >= 0


def _is_time_phrase(words: list[str]) -> bool:
    """Only "At 5" (or "By 10:30") before "a.m.": a fronted time, not a sentence."""
    return len(words) == 2 and words[0].lstrip(_OPENERS).lower() in _TIME_PREPOSITIONS and words[1][:1].isdigit()


def _decide_word(word: str, para: str, nxt: int, first: str) -> int:
    low = word.lower()
    if not word:
        return DOUBT
    if low in _NUMBERED:
        # "No. 5", "Fig. 3" never end; "say no. The" does.
        return NO_BREAK if first.isdigit() else (BREAK if len(word) > 1 else DOUBT)
    if low in _NEVER_END or word in _TITLES:
        return NO_BREAK
    if low in _MAYBE_END or low.rstrip(".") in _MAYBE_END:
        return BREAK if _next_word(para, nxt) in _STARTERS else DOUBT
    if word.isdigit():
        if len(word) <= 2:
            return NO_BREAK if _next_word(para, nxt).lower() in _MONTHS else DOUBT
        return BREAK
    if len(word) == 1:
        return DOUBT  # an initial ("J. K. Rowling") or a one-letter word
    if "." in word and "://" not in word:
        return DOUBT  # "U.S.A", "Ph.D", "example.com"
    if not unicodedata.category(first).startswith(("L", "N")):
        return DOUBT  # next starts with a symbol, emoji or CJK
    return BREAK


def _next_word(para: str, pos: int) -> str:
    m = re.match(r"[^\W\d_]+", para[pos:].lstrip(_OPENERS))
    return m.group(0) if m else ""


@lru_cache(maxsize=1)
def _pysbd():
    import pysbd

    return pysbd.Segmenter(language="en", clean=False, char_span=True)


def _pysbd_sentence_start(window: str, term_pos: int, next_pos: int) -> int:
    """Where pysbd starts a sentence in ``window`` between the terminator and the next word, or -1."""
    for span in _pysbd().segment(window):
        if term_pos < span.start <= next_pos:
            return span.start
    return -1


# --- Helpers for other apps ------------------------------------------------

_MARKER = {
    "heading": re.compile(r"^[ \t]*#{1,6}[ \t]*|[ \t]+#+\s*$|\n[ \t]*(?:=+|-+)\s*$"),
    "list_item": re.compile(r"^[ \t]*(?:[-*+•◦▪‣]|\d{1,3}[.)])[ \t]*"),
    "block_quote": re.compile(r"^[ \t]*>[ \t]?", re.M),
}


def strip_markup(segment: str, kind: str) -> str:
    """The segment without its block marker ("- ", "## ", "> "), for quotes in tables."""
    segment = _with_line_feeds(segment)  # its lines as segment_text read them
    if kind == "table_row":
        cells = [c.strip() for c in segment.split("\n", 1)[0].strip().strip("|").split("|")]
        return " | ".join(cells)
    if kind == "code_block":
        body = segment.split("\n")
        return "\n".join(body[1:-1] if len(body) > 1 and _FENCE.match(body[-1]) else body[1:])
    pattern = _MARKER.get(kind)
    return pattern.sub("", segment).strip() if pattern else segment
