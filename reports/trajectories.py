"""Trajectories: the order in which the codes of a chosen set (e.g. the negotiation moves) occur along each
interview, as a timeline and as a transition table "A followed by B within the next k answers".

Definitions, so a reader can recount every number:

- A **move** is a code of the set on at least one segment of a participant's answer. An answer's moves
  are taken once each, in the order of their first segment in the answer. Answers are numbered
  1, 2, ... per interview (interviewer turns do not count: the moves are the model's).
- **A → B within k**: an occurrence of A in answer i is *followed by* B when B occurs in one of the
  answers i+1 ... i+k (the same answer does not count). **n** is the number of A's occurrences
  followed by B; **share** = n / the number of A's occurrences (every occurrence counts, also those
  near the end of an interview, where fewer than k answers follow).
- **Groups**: the columns of the transition table are the values of one attribute of the interview or
  its participant, as in the frequency table (reports.frequency.Population).

Queries: participants, interviews, codes, the codings of the set with their turns' positions: a fixed number.
"""

from __future__ import annotations

import io
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from coding.models import Code, Coding
from coding.queries import with_descendants
from interviews.models import Speaker
from projects.models import Project
from projects.numbers import rounded
from reports.frequency import Column, FrequencySpecError, Population

DEFAULT_WITHIN = 1
MAX_WITHIN = 20


class CodeSetError(ValueError):
    """A choice of codes (or of the trajectory's options) that cannot be honoured."""


TrajectorySpecError = CodeSetError


@dataclass(frozen=True)
class TrajectorySpec:
    codes: tuple[int, ...] = ()  # the set, in codebook order
    within: int = DEFAULT_WITHIN
    by: str = "participant"


@dataclass
class Sequence:
    interview_id: int
    title: str
    column: int
    answers: list[list[int]]  # per answer (in order), the code ids of the set that occur in it


@dataclass
class TransitionRow:
    source: Code
    target: Code
    counts: list[int]  # per column
    occurrences: list[int]  # the source's occurrences per column

    @property
    def shares(self) -> list[float | None]:
        return [n / m if m else None for n, m in zip(self.counts, self.occurrences, strict=True)]

    @property
    def total(self) -> int:
        return sum(self.counts)

    @property
    def cells(self) -> list[tuple[int, float | None]]:
        return list(zip(self.counts, self.shares, strict=True))

    @property
    def total_share(self) -> float | None:
        occurrences = sum(self.occurrences)
        return self.total / occurrences if occurrences else None


@dataclass
class Trajectories:
    spec: TrajectorySpec
    codes: list[Code]
    columns: list[Column]
    sequences: list[Sequence]
    transitions: list[TransitionRow] = field(default_factory=list)
    by_label: str = ""

    def csv_headers(self) -> list[str]:
        cols = ["Move A", "Followed by B"]
        for c in self.columns:
            cols += [f"{c.label} n", f"{c.label} A occurrences", f"{c.label} share"]
        return cols + ["All n", "All A occurrences", "All share"]

    def csv_rows(self) -> Iterable[list[Any]]:
        for r in self.transitions:
            cells: list[Any] = [r.source.name, r.target.name]
            for n, m, share in zip(r.counts, r.occurrences, r.shares, strict=True):
                cells += [n, m, rounded(share, 3)]
            total_share = r.total_share
            yield cells + [r.total, sum(r.occurrences), rounded(total_share, 3)]

    def note(self) -> str:
        return (f"n = occurrences of A followed by B within the next {self.spec.within} answer"
                f"{'s' if self.spec.within != 1 else ''} (not the same answer); share = n / occurrences of A. "
                f"Columns: {self.by_label}.")


def spec_from_query(codes: list[Code], population: Population, query: Mapping[str, Any]) -> TrajectorySpec:
    """The code set (`codes` uuids, with `subcodes=1` their descendants), `within` (k) and `by`."""
    raw = query.get("within") or str(DEFAULT_WITHIN)
    try:
        within = int(raw)
    except ValueError:
        raise TrajectorySpecError(f"“Within” must be a whole number of answers, not {raw!r}.") from None
    if not 1 <= within <= MAX_WITHIN:
        raise TrajectorySpecError(f"“Within” must be between 1 and {MAX_WITHIN} answers (got {within}).")
    try:
        by = population.attribute(query.get("by") or "participant").key
    except FrequencySpecError as e:
        raise TrajectorySpecError(str(e)) from None
    return TrajectorySpec(codes=code_set_from_query(codes, query), within=within, by=by)


def code_set_from_query(codes: list[Code], query: Mapping[str, Any]) -> tuple[int, ...]:
    """The codes chosen in `codes` (uuids), with `subcodes=1` their sub-codes too, in codebook order."""
    getlist = query.getlist if hasattr(query, "getlist") else (lambda k: list(query.get(k, [])))
    by_uuid = {str(c.uuid): c for c in codes}
    chosen: set[int] = set()
    for value in getlist("codes"):
        if value not in by_uuid:
            raise CodeSetError(f"There is no code {value!r} in this project (it may have been deleted).")
        chosen.add(by_uuid[value].pk)
    if query.get("subcodes") in ("1", "on", "true"):
        chosen = with_descendants(chosen, codes)
    return tuple(c.pk for c in codes if c.pk in chosen)


def trajectories(project: Project, spec: TrajectorySpec, *, population: Population | None = None,
                 codes: list[Code] | None = None) -> Trajectories:
    """Each interview's sequence of moves and the transition table by group (a fixed number of queries)."""
    population = population or Population.of(project)
    codes = codes if codes is not None else list(Code.objects.for_project(project).order_by("position", "name"))
    columns = population.columns(spec.by)
    index = {c.key: i for i, c in enumerate(columns)}
    column_of = {iv: index[key] for iv, key in population.column_of(spec.by).items()}
    chosen = [c for c in codes if c.pk in set(spec.codes)]
    sequences = _sequences(project, spec, population, column_of)
    result = Trajectories(spec=spec, codes=chosen, columns=columns, sequences=sequences,
                          by_label=population.attribute(spec.by).label)
    result.transitions = _transitions(chosen, sequences, spec.within, len(columns))
    return result


def _sequences(project: Project, spec: TrajectorySpec, population: Population, column_of: dict[int, int]) -> list[Sequence]:
    if not spec.codes:
        return []
    rows = (Coding.objects.filter(interview__project=project, interview__deleted_at__isnull=True,
                                  code_id__in=spec.codes, segment__speaker=Speaker.PARTICIPANT)
            .order_by("interview_id", "segment__turn__position", "segment__position")
            .values_list("interview_id", "segment__turn__position", "code_id").distinct())
    # Each interview's answers, numbered in order: the answers with no move count too (they separate moves).
    answers = _answer_positions(project)
    moves: dict[int, dict[int, list[int]]] = defaultdict(lambda: defaultdict(list))
    for interview_id, turn_position, code_id in rows.iterator(chunk_size=5000):
        in_turn = moves[interview_id][turn_position]
        if code_id not in in_turn:
            in_turn.append(code_id)
    titles = {iv.pk: iv.title for iv in population.interviews}
    sequences = []
    for iv in population.interviews:
        if iv.pk not in moves:
            continue
        sequences.append(Sequence(interview_id=iv.pk, title=titles[iv.pk], column=column_of[iv.pk],
                                  answers=[moves[iv.pk].get(p, []) for p in answers.get(iv.pk, [])]))
    return sequences


def _answer_positions(project: Project) -> dict[int, list[int]]:
    from interviews.models import Turn

    positions: dict[int, list[int]] = defaultdict(list)
    for interview_id, position in (Turn.objects.filter(interview__project=project, interview__deleted_at__isnull=True,
                                                       speaker=Speaker.PARTICIPANT)
                                   .order_by("interview_id", "position").values_list("interview_id", "position")
                                   .iterator(chunk_size=5000)):
        positions[interview_id].append(position)
    return positions


def _transitions(codes: list[Code], sequences: list[Sequence], within: int, width: int) -> list[TransitionRow]:
    followed: dict[tuple[int, int], list[int]] = defaultdict(lambda: [0] * width)
    occurrences: dict[int, list[int]] = defaultdict(lambda: [0] * width)
    for seq in sequences:
        for i, answer in enumerate(seq.answers):
            ahead = {code for later in seq.answers[i + 1 : i + 1 + within] for code in later}
            for a in answer:
                occurrences[a][seq.column] += 1
                for b in ahead:
                    followed[(a, b)][seq.column] += 1
    # Pairs that never happen are left out: with eight moves, 64 rows would be mostly zeros.
    return [TransitionRow(source=a, target=b, counts=followed[(a.pk, b.pk)], occurrences=occurrences[a.pk])
            for a in codes for b in codes if (a.pk, b.pk) in followed]


# --- the timeline (SVG and PNG, drawn from one layout) ------------------------------------------

CELL, ROW, LABEL_W, GAP = 18, 22, 220, 2
LEGEND_W, LEGEND_PER_ROW = 180, 4
EMPTY = "#f0f0f0"


@dataclass
class _Layout:
    width: int
    height: int
    rects: list[tuple[float, float, float, float, str, str]]  # x, y, w, h, fill, tooltip
    texts: list[tuple[float, float, str, str]]  # x, baseline y, shown text, full text


def _layout(t: Trajectories) -> _Layout:
    longest = max((len(s.answers) for s in t.sequences), default=0)
    legend_y = 8 + ROW * len(t.sequences) + 16
    legend_w = 4 + LEGEND_W * min(len(t.codes), LEGEND_PER_ROW)
    legend_rows = math.ceil(len(t.codes) / LEGEND_PER_ROW)
    out = _Layout(width=max(LABEL_W + CELL * max(longest, 1) + 8, legend_w), height=legend_y + ROW * legend_rows + 8,
                  rects=[], texts=[])
    colours = {c.pk: c.colour for c in t.codes}
    names = {c.pk: c.name for c in t.codes}
    for row, seq in enumerate(t.sequences):
        y = 8 + ROW * row
        label = f"{seq.title} · {t.columns[seq.column].label}"
        out.texts.append((4, y + 14, label[:34], label))
        for i, answer in enumerate(seq.answers):
            x = LABEL_W + CELL * i
            out.rects.append((x, y, CELL - GAP, ROW - 4, EMPTY, f"answer {i + 1}"))
            for j, code_id in enumerate(answer):
                h = (ROW - 4) / len(answer)
                out.rects.append((x, y + j * h, CELL - GAP, h, colours[code_id], f"answer {i + 1}: {names[code_id]}"))
    for k, c in enumerate(t.codes):
        x, y = 4 + LEGEND_W * (k % LEGEND_PER_ROW), legend_y + ROW * (k // LEGEND_PER_ROW)
        out.rects.append((x, y, 12, 12, c.colour, c.name))
        out.texts.append((x + 16, y + 11, c.name[:24], c.name))
    return out


def timeline_svg(t: Trajectories) -> str:
    """One row per interview, one cell per answer; a cell holds a stripe per move, coloured like its code."""
    lay = _layout(t)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{lay.width}" height="{lay.height}" '
           f'viewBox="0 0 {lay.width} {lay.height}" font-family="system-ui, sans-serif" font-size="12" role="img" '
           'aria-label="Moves along each interview">']
    for x, y, w, h, fill, tip in lay.rects:
        out.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" fill={quoteattr(fill)}>'
                   f"<title>{escape(tip)}</title></rect>")
    for x, y, text, full in lay.texts:
        out.append(f'<text x="{x}" y="{y}">{escape(text)}<title>{escape(full)}</title></text>')
    out.append("</svg>")
    return "".join(out)


def timeline_png(t: Trajectories, scale: int = 2) -> bytes:
    """The same timeline as a PNG (for slides and documents that take no SVG)."""
    from PIL import Image, ImageDraw

    from reports.heatmap import _font

    lay = _layout(t)
    image = Image.new("RGB", (lay.width * scale, lay.height * scale), "white")
    draw = ImageDraw.Draw(image)
    font = _font(12 * scale)
    for x, y, w, h, fill, _ in lay.rects:
        draw.rectangle([x * scale, y * scale, (x + w) * scale - 1, (y + h) * scale - 1], fill=fill)
    for x, y, text, _ in lay.texts:
        draw.text((x * scale, y * scale), text, fill="#1f2328", font=font, anchor="ls")
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()
