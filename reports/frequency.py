"""Frequency and prevalence: how often each code (or theme) appears in each model's answers.

Counts are *coded segments* (a segment coded by two coders counts once). A model's
percentage for a code is the share of that model's coded segments that carry the code,
so models with longer answers are comparable. The log ratio between two groups of
models is ln(share in group A / share in group B): 0 means equally common, +∞ means
only group A has it, −∞ only group B, and it is undefined (None) when neither has it
or a group has no coded segments at all.

Theme level: a segment counts for a theme when any of the theme's codes (or its
sub-themes' codes) is on it. Everything is aggregated in SQL: a fixed number of
queries whatever the number of segments.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, F, Q
from django.db.models.functions import Coalesce

from coding.models import Code, Coding
from interviews.models import Participant
from projects.models import Project
from themes.models import Theme

LEVELS = ("code", "theme")


class FrequencySpecError(ValueError):
    pass


@dataclass(frozen=True)
class FrequencySpec:
    level: str = "code"
    group_a: frozenset[int] = frozenset()
    group_b: frozenset[int] = frozenset()

    @property
    def has_ratio(self) -> bool:
        return bool(self.group_a) and bool(self.group_b)

    @property
    def hint(self) -> str:
        """What to do next when only one group is chosen (not an error: the table is still right)."""
        if bool(self.group_a) != bool(self.group_b):
            return f"Choose models for group {'B' if self.group_a else 'A'} too to see the log ratio ln(A/B)."
        return ""


@dataclass
class FrequencyRow:
    label: str
    uuid: str
    colour: str
    depth: int  # 0 for codes and themes, 1 for sub-themes
    counts: list[int]
    percents: list[float | None]
    count_a: int = 0
    count_b: int = 0
    log_ratio: float | None = None

    @property
    def total(self) -> int:
        return sum(self.counts)


@dataclass
class FrequencyTable:
    level: str
    participants: list[Participant]
    totals: list[int]  # coded segments per participant
    rows: list[FrequencyRow]
    spec: FrequencySpec
    group_a_labels: list[str] = field(default_factory=list)
    group_b_labels: list[str] = field(default_factory=list)
    total_a: int = 0
    total_b: int = 0

    @property
    def max_percent(self) -> float:
        return max((p for r in self.rows for p in r.percents if p is not None), default=0.0)

    def headers(self) -> list[str]:
        first = "Code" if self.level == "code" else "Theme"
        cols = [first]
        for p in self.participants:
            cols += [f"{p.label} n", f"{p.label} %"]
        if self.spec.has_ratio:
            cols += ["Group A n", "Group B n", "ln(A/B)"]
        return cols

    def export_rows(self) -> Iterable[list[Any]]:
        """Rows for the table writers: numbers stay numbers (percent with 1 decimal, ratio with 2)."""
        for r in self.rows:
            label = ("— " if r.depth else "") + r.label
            cells: list[Any] = [label]
            for n, pct in zip(r.counts, r.percents, strict=True):
                cells += [n, None if pct is None else round(pct, 1)]
            if self.spec.has_ratio:
                cells += [r.count_a, r.count_b, _ratio_cell(r.log_ratio)]
            yield cells
        totals: list[Any] = ["Coded segments"]
        for n in self.totals:
            totals += [n, None]
        if self.spec.has_ratio:
            totals += [self.total_a, self.total_b, None]
        yield totals

    def numeric_columns(self) -> frozenset[int]:
        return frozenset(range(1, len(self.headers())))

    def compact_headers(self) -> list[str]:
        """One column per model ("n (%)"), for tables in papers (LaTeX)."""
        cols = ["Code" if self.level == "code" else "Theme", *(p.label for p in self.participants)]
        if self.spec.has_ratio:
            cols += ["A n", "B n", "ln(A/B)"]
        return cols

    def compact_rows(self) -> Iterable[list[Any]]:
        for r in self.rows:
            cells: list[Any] = [("— " if r.depth else "") + r.label]
            cells += ["–" if pct is None else f"{n} ({pct:.1f}%)" for n, pct in zip(r.counts, r.percents, strict=True)]
            if self.spec.has_ratio:
                cells += [r.count_a, r.count_b, _ratio_cell(r.log_ratio)]
            yield cells
        totals: list[Any] = ["Coded segments", *self.totals]
        if self.spec.has_ratio:
            totals += [self.total_a, self.total_b, None]
        yield totals


def _ratio_cell(value: float | None) -> float | None:
    return None if value is None else (value if math.isinf(value) else round(value, 2))


def log_ratio(count_a: int, total_a: int, count_b: int, total_b: int) -> float | None:
    """ln((count_a/total_a) / (count_b/total_b)); ±inf when one side is zero, None when undefined."""
    if total_a <= 0 or total_b <= 0 or (count_a == 0 and count_b == 0):
        return None
    if count_b == 0:
        return math.inf
    if count_a == 0:
        return -math.inf
    return math.log((count_a / total_a) / (count_b / total_b))


def format_ratio(value: float | None) -> str:
    if value is None:
        return "—"
    if value == math.inf:
        return "+∞"
    if value == -math.inf:
        return "−∞"
    text = f"{value:+.2f}"
    return "0.00" if text in ("+0.00", "-0.00") else text.replace("-", "−")


# --- choices ---------------------------------------------------------------------------


def spec_from_query(participants: list[Participant], query: Mapping[str, Any]) -> FrequencySpec:
    """Level and the two groups (participant UUIDs in `a` and `b`)."""
    getlist = query.getlist if hasattr(query, "getlist") else (lambda k: list(query.get(k, [])))
    level = query.get("level") or "code"
    if level not in LEVELS:
        raise FrequencySpecError(f"Unknown level {level!r}; choose code or theme.")
    by_uuid = {str(p.uuid): p.pk for p in participants}
    groups = []
    for key, name in (("a", "group A"), ("b", "group B")):
        ids = set()
        for value in getlist(key):
            if value not in by_uuid:
                raise FrequencySpecError(f"There is no model {value!r} in this project ({name}).")
            ids.add(by_uuid[value])
        groups.append(frozenset(ids))
    if groups[0] & groups[1]:
        raise FrequencySpecError("A model cannot be in both groups: the ratio compares two separate groups.")
    return FrequencySpec(level=level, group_a=groups[0], group_b=groups[1])


# --- the table ---------------------------------------------------------------------------


def frequency_table(project: Project, spec: FrequencySpec,
                    participants: list[Participant] | None = None) -> FrequencyTable:
    """Counts and shares per code (or theme) × model, with the group log ratio (4-5 queries)."""
    if participants is None:
        participants = list(Participant.objects.filter(project=project).order_by("label"))
    codings = Coding.objects.filter(interview__project=project, interview__deleted_at__isnull=True,
                                    code__deleted_at__isnull=True, code__project=project)
    totals_by_p = dict(codings.values_list("interview__participant_id").annotate(n=Count("segment", distinct=True))
                       .values_list("interview__participant_id", "n"))
    totals = [totals_by_p.get(p.pk, 0) for p in participants]
    if spec.level == "code":
        items, counts = _code_counts(project, codings)
    else:
        items, counts = _theme_counts(project, codings)
    # The groups' own totals: segments are distinct per group, but a segment belongs to one interview,
    # so summing the participants' distinct counts is exact.
    total_a = sum(totals_by_p.get(p, 0) for p in spec.group_a)
    total_b = sum(totals_by_p.get(p, 0) for p in spec.group_b)
    rows = []
    for key, label, uuid, colour, depth in items:
        per_p = counts.get(key, {})
        row_counts = [per_p.get(p.pk, 0) for p in participants]
        row = FrequencyRow(
            label=label, uuid=uuid, colour=colour, depth=depth, counts=row_counts,
            percents=[100 * n / t if t else None for n, t in zip(row_counts, totals, strict=True)],
        )
        if spec.has_ratio:
            row.count_a = sum(per_p.get(p, 0) for p in spec.group_a)
            row.count_b = sum(per_p.get(p, 0) for p in spec.group_b)
            row.log_ratio = log_ratio(row.count_a, total_a, row.count_b, total_b)
        rows.append(row)
    names = {p.pk: p.label for p in participants}
    return FrequencyTable(
        level=spec.level, participants=participants, totals=totals, rows=rows, spec=spec,
        group_a_labels=sorted(names[p] for p in spec.group_a), group_b_labels=sorted(names[p] for p in spec.group_b),
        total_a=total_a, total_b=total_b,
    )


Counts = dict[Any, dict[int, int]]


def _code_counts(project: Project, codings) -> tuple[list[tuple], Counts]:
    codes = list(Code.objects.for_project(project).order_by("position", "name"))
    counts: Counts = defaultdict(dict)
    for code_id, p_id, n in (codings.values_list("code_id", "interview__participant_id")
                             .annotate(n=Count("segment", distinct=True)).values_list("code_id", "interview__participant_id", "n")):
        counts[code_id][p_id] = n
    return [(c.pk, c.name, str(c.uuid), c.colour, 0) for c in codes], counts


def _theme_counts(project: Project, codings) -> tuple[list[tuple], Counts]:
    themes = list(Theme.objects.for_project(project).exclude(status=Theme.Status.DISCARDED).order_by("position", "name"))
    alive = {t.pk for t in themes}
    placed = Q(code__theme_codes__theme__deleted_at__isnull=True, code__theme_codes__theme__project=project)
    counts: Counts = defaultdict(dict)
    # Each theme on its own (sub-themes included as rows of their own)...
    for theme_id, p_id, n in (codings.filter(placed).values_list("code__theme_codes__theme_id", "interview__participant_id")
                              .annotate(n=Count("segment", distinct=True))
                              .values_list("code__theme_codes__theme_id", "interview__participant_id", "n")):
        counts[theme_id][p_id] = n
    # ...and top-level themes again with their sub-themes' codes rolled in (distinct segments).
    top = Coalesce(F("code__theme_codes__theme__parent_id"), F("code__theme_codes__theme_id"))
    for theme_id, p_id, n in (codings.filter(placed).annotate(top=top).values_list("top", "interview__participant_id")
                              .annotate(n=Count("segment", distinct=True)).values_list("top", "interview__participant_id", "n")):
        counts[("top", theme_id)][p_id] = n
    items: list[tuple] = []
    children: dict[int, list[Theme]] = defaultdict(list)
    for t in themes:
        if t.parent_id in alive:
            children[t.parent_id].append(t)
    for t in themes:
        if t.parent_id in alive:
            continue
        items.append((("top", t.pk), t.name, str(t.uuid), t.colour, 0))
        items += [(s.pk, s.name, str(s.uuid), s.colour, 1) for s in children[t.pk]]
    return items, counts
