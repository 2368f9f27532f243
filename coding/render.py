"""The coding page's transcript, built in Python in one pass.

A Django template loop costs ~40 µs per segment; a 6,000-segment interview would take a quarter
of a second to render. Here every piece of text from transcripts, code names and user names
goes through html.escape, and identical chips (same code, same coder) are rendered once.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from django.utils.safestring import SafeString, mark_safe

from interviews.models import turn_number
from interviews.rendering import quote_html

# An ordered list item shows its own number (interviews.rendering), so it gets no bullet.
_NUMBERED = re.compile(r"\s*\d{1,9}[.)]\s")


def initials(username: str, first_name: str = "", last_name: str = "") -> str:
    """Two letters for a coder: first and last name initials, else the username's first two."""
    if first_name and last_name:
        return (first_name[0] + last_name[0]).upper()
    return (first_name or username)[:2].upper()


@dataclass(frozen=True)
class CodeInfo:
    id: int
    name: str
    colour: str
    kind: str


@dataclass(frozen=True)
class CoderInfo:
    id: int
    initials: str
    name: str


class ChipRenderer:
    """Renders chips and chip containers; caches each (code, coder) chip's HTML.

    The user's own chips carry a remove button (`can_remove`: the user may write): without one, taking a code off
    a sentence needed the keyboard (select it, press x), which a mouse or a phone does not have.
    """

    def __init__(self, codes: dict[int, CodeInfo], coders: dict[int, CoderInfo], me: int, *, can_remove: bool = True) -> None:
        self.codes = codes
        self.coders = coders
        self.me = me
        self.can_remove = can_remove
        self._cache: dict[tuple[int, int], str] = {}

    def chip(self, code_id: int, coder_id: int) -> str:
        key = (code_id, coder_id)
        html = self._cache.get(key)
        if html is None:
            code = self.codes.get(code_id) or CodeInfo(code_id, "(unknown code)", "#999999", "semantic")
            coder = self.coders.get(coder_id) or CoderInfo(coder_id, "??", "a former member")
            # Kept small: a 10× interview has ~5,000 chips. Kind and coder names come from the page's JSON.
            # The remove button's × is drawn by CSS: the chip's text stays the code and the initials.
            mine = coder_id == self.me
            remove = (f'<button type="button" class="chip-x" aria-label="Remove {escape(code.name)} from this sentence">'
                      "</button>" if mine and self.can_remove else "")
            html = (
                f'<span class="chip{" mine" if mine else ""}" data-c="{code_id}" data-u="{coder_id}" '
                f'style="--c:{escape(code.colour)}">{escape(code.name)}<small>{escape(coder.initials)}</small>{remove}</span>'
            )
            self._cache[key] = html
        return html

    def chips(self, pairs: Iterable[tuple[int, int]]) -> str:
        return "".join([self.chip(code_id, coder_id) for code_id, coder_id in pairs])

    def suggested(self, suggestions: Sequence[tuple[str, int, str]]) -> str:
        """AI suggestions: dashed, marked AI, the model's and the critic's reasons on hover and focus."""
        out = []
        for uuid, code_id, why in suggestions:
            code = self.codes.get(code_id) or CodeInfo(code_id, "(unknown code)", "#999999", "semantic")
            out.append(f'<button type="button" class="chip suggested" data-sugg="{escape(uuid)}" data-c="{code_id}" '
                       f'style="--c:{escape(code.colour)}" title="{escape(why)}" aria-label="AI suggests '
                       f'{escape(code.name)}. {escape(why)}">{escape(code.name)}<small>AI</small></button>')
        return "".join(out)

    def container(self, segment_id: int, pairs: Sequence[tuple[int, int]], *, oob: bool = False) -> str:
        extra = ' hx-swap-oob="true"' if oob else ""
        return f'<span class="chips" id="chips-{segment_id}"{extra}>{self.chips(pairs)}</span>'


def chips_from_rows(rows: Iterable[Sequence[Any]], me: int) -> tuple[ChipRenderer, dict[int, list[tuple[int, int]]]]:
    """A renderer and the per-segment chips from the apply/remove statement's rows."""
    codes: dict[int, CodeInfo] = {}
    coders: dict[int, CoderInfo] = {}
    by_segment: dict[int, list[tuple[int, int]]] = {}
    for segment_id, code_id, coder_id, name, colour, kind, username, first, last in rows:
        codes[code_id] = CodeInfo(code_id, name, colour, kind)
        coders[coder_id] = CoderInfo(coder_id, initials(username, first, last), f"{first} {last}".strip() or username)
        by_segment.setdefault(segment_id, []).append((code_id, coder_id))
    return ChipRenderer(codes, coders, me), by_segment


SPEAKER_LABEL = {"interviewer": "Interviewer", "system": "System", "tool": "Tool"}


def render_transcript(*, turns: Sequence[tuple[int, int, str]], segments: Sequence[tuple[int, int, int, str, str, str]],
                      codings: dict[int, list[tuple[int, int]]], renderer: ChipRenderer, participant_label: str,
                      code_any_speaker: bool, notes_html: dict[int, str], can_write: bool,
                      suggestions: dict[int, list[tuple[str, int, str]]] | None = None) -> SafeString:
    """The transcript: one <section> per turn, one row per segment with its chips container.

    Each segment shows as the reader saw it (interviews.rendering.quote_html: Markdown markers gone,
    bold and italics kept); its row's kind class (k-list_item, k-heading...) gives the block its look.

    turns: (id, position, speaker); segments: (id, turn id, position, text, speaker, kind), in order.
    suggestions: pending AI suggestions per segment (queries.interview_suggestions), kept apart from the chips.
    """
    suggestions = suggestions or {}
    by_turn: dict[int, list[tuple[int, int, int, str, str, str]]] = {}
    for seg in segments:
        by_turn.setdefault(seg[1], []).append(seg)
    out: list[str] = []
    append = out.append
    label = escape(participant_label)
    for turn_id, position, speaker in turns:
        who = label if speaker == "participant" else SPEAKER_LABEL.get(speaker, escape(speaker))
        number = turn_number(position)
        append(f'<section class="turn sp-{escape(speaker)}" id="t-{turn_id}" data-turn="{turn_id}" aria-label="Turn {number}, {who}">'
               f'<header class="turn-head"><span class="speaker">{who}</span><span class="turn-no">#{number}</span>')
        if can_write:
            append(f'<button type="button" class="note-btn link" data-turn="{turn_id}">Note</button>')
        append("</header>")
        append(notes_html.get(turn_id, f'<div class="notes" id="notes-t{turn_id}"></div>'))
        if speaker == "tool":
            # Collapsed like on chatgpt.com; open while other speakers are codable, so every codable line shows.
            append(f'<details class="tool-step"{" open" if code_any_speaker else ""}>'
                   "<summary>Tool step: code, output or browsing</summary>")
        for seg_id, _turn, _pos, text, seg_speaker, kind in by_turn.get(turn_id, ()):
            codable = seg_speaker == "participant" or code_any_speaker
            pairs = codings.get(seg_id)
            cls = "seg"
            if codable:
                cls += " codable"
            if seg_speaker != "participant":
                cls += " other"
            if kind != "sentence":
                cls += " k-" + kind + (" numbered" if kind == "list_item" and _NUMBERED.match(text) else "")
            if pairs:
                cls += " coded"
            suggested = suggestions.get(seg_id)
            append(f'<div class="{cls}" id="s-{seg_id}">'
                   f'<span class="st">{quote_html(text)}</span>'
                   f'<span class="chips" id="chips-{seg_id}">{renderer.chips(pairs) if pairs else ""}</span>'
                   + (f'<span class="suggested-chips">{renderer.suggested(suggested)}</span>' if suggested else "")
                   + '</div>')
        if speaker == "tool":
            append("</details>")
        append("</section>")
    return mark_safe("".join(out))  # noqa: S308 -- every interpolated value above is escaped or an int


def render_code_rows(codes: Sequence[dict[str, Any]]) -> SafeString:
    """The codes panel: a button per code with its uses here; archived codes stay, hidden, for their chips.

    Built here like the transcript: a template loop cost ~90 µs per code, 9 ms for a codebook of 100.
    codes: workspace_codes rows with "here" (uses in this interview) added.
    """
    return mark_safe("".join([  # noqa: S308 -- every interpolated value is escaped or an int
        f'<li{" hidden" if c["archived"] else ""}><button type="button" class="code-row" data-code="{c["id"]}" '
        f'title="{escape(c["definition"])}"><span class="sw" style="--c:{escape(c["colour"])}"></span>{escape(c["name"])}'
        f'<small class="muted">{escape(c["kind"])}</small>'
        f'<span id="uses-{c["id"]}" class="uses" title="Uses in this interview">{c["here"]}</span></button></li>'
        for c in codes
    ]))


def render_code_options(codes: Sequence[dict[str, Any]]) -> SafeString:
    """The code filter's options, archived codes included (their chips can still be filtered)."""
    return mark_safe("".join([f'<option value="{c["id"]}">{escape(c["name"])}</option>' for c in codes]))  # noqa: S308


def render_notes(*, key: str, notes: Sequence[Any], me: int, coders: dict[int, CoderInfo], oob: bool = False) -> str:
    """A notes block (interview: key "interview", turn: "t<id>"); data-mine carries the user's own note for editing."""
    mine = ""
    items = []
    for note in notes:
        if note.author_id == me:
            mine = note.text
        coder = coders.get(note.author_id) or CoderInfo(note.author_id, "??", "a former member")
        items.append(f'<p class="note{" mine" if note.author_id == me else ""}"><b title="{escape(coder.name)}">'
                     f'{escape(coder.initials)}</b> {escape(note.text)}</p>')
    extra = ' hx-swap-oob="true"' if oob else ""
    html = f'<div class="notes" id="notes-{key}" data-mine="{escape(mine)}"{extra}>{"".join(items)}</div>'
    return mark_safe(html)  # noqa: S308 -- the note texts and names above are escaped
