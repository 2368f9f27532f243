"""Frequency and prevalence: how often each code (or theme) appears in each group of interviews.

**Columns** are the values of one attribute, chosen by the user: the participant (model,
the default), its provider or interface, any of its case variables, or an attribute of the
interview itself (depth, origin, or any scalar value of its metadata, e.g. a ground truth
from a Markdown front matter or an attribute sheet, or of metadata["attributes"], where
interviews made from probe rationales keep theirs). Every interview falls in exactly one
column; interviews without a value fall in "(not set)".

**Denominators** (stated in the table's note):

- ``segments`` (default): n = coded segments carrying the code (a segment coded by two
  coders counts once); % = share of the column's coded segments.
- ``codable``: n = answer segments carrying the code; % = share of all the column's answer
  segments (participant turns), coded or not.
- ``interviews``: n = interviews in which the code appears; % = share of the column's interviews.

**Roll-up** (on by default): a parent code counts every segment carrying it or any of its
descendants (once); a theme counts its own codes, its sub-themes' codes and, with roll-up,
those codes' descendants. Off: each row counts only what is coded with it directly.

**Log ratio** between group A and group B (each a set of columns): ln(share in A / share in B),
where share = a / n_A. 0 means equally common; "only in A" (+∞) and "only in B" (−∞) when the
other group never has it; undefined (None) when neither group has it (0/0) or a group is empty.
An infinite ratio is written "only in A"/"only in B" (the default; spreadsheets leave the number empty
and name it in the flag column) or, as papers print it, in a spelling chosen with ``infinity`` (INFINITIES);
an undefined one is never written as an infinity, and the table's note says what each means.

**Sections** (``sections``, off by default): the interviews are split by a second attribute, e.g. the label a
probe's model predicted while the columns are the ground truth (the study's Table 2: "Women" and "Men"
sections, W and M columns). Each section counts only its own interviews, has its own denominators and
ratios, and lists the rows found in it; a section where nothing is coded says so. The counts are the
same single query, over (section, column) cells.
With the continuity correction, 0.5 is added to each cell of the 2×2 table (a + 0.5 of
n_A + 1, b + 0.5 of n_B + 1), so every ratio is finite. The 95 % interval is Woolf's log
method applied to a ratio of two shares: ln ratio ± 1.96 · √(1/a − 1/n_A + 1/b − 1/n_B)
(the counts corrected when the correction is on); it is not given for infinite ratios, nor when both
groups have the code in every unit (the formula's variance is then 0; the correction gives an interval).

Queries: participants, interviews, codes (and themes with their codes), one query for the
counts, and the answer segments per interview for the ``codable`` denominator: a fixed number
whatever the size of the project. PostgreSQL adds the codings up per (column, code) and lists
the few segments coded more than once; Python turns those into distinct segments per row (roll-up
needs distinct segments over a code's whole subtree, and a column may gather interviews of several
participants). The counts are kept a minute under the version of the project's coding events, so a new coding
shows on the next request (``coding.queries.cached_counts``).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import connection
from django.db.models import Count

from coding.models import Code, Coding
from coding.queries import cached_counts
from interviews.models import Interview, Participant, Segment, Speaker
from projects.models import Project
from projects.numbers import rounded
from reports.query_params import choice, flag
from reports.writers import Heading
from themes.models import Theme, ThemeCode

LEVELS = ("code", "theme")
DENOMINATORS = {
    "segments": "coded segments",
    "codable": "answer segments (coded or not)",
    "interviews": "interviews",
}
NOT_SET = "(not set)"
Z95 = 1.959963984540054
# Participant fields a table can be grouped by (case variables come from the data).
PARTICIPANT_FIELDS = {"participant": "Model (participant)", "provider": "Provider", "interface": "Interface",
                      "model_id": "Model id"}
INTERVIEW_FIELDS = {"depth": "Interview depth", "origin": "Interview origin"}
CASE_PREFIX, INTERVIEW_PREFIX = "case:", "interview:"
# How an infinite log ratio is written. "words" names the group; the others put an infinity where the number goes.
INFINITIES = {
    "words": "only in A / only in B",
    "symbol": "+∞ / −∞",
    "paper": "+INF / –INF (as the study's Table 2)",
    "inf": "inf / -inf (read as numbers by pandas and R)",
}
# The order of the rows. Sorted rows stay under their parent: siblings are sorted among themselves.
ORDERS = {
    "codebook": "as in the codebook",
    "ratio": "by ln(A/B), A's most first",
    "count": "by count, most first",
}
_INFINITY_TEXT = {"symbol": ("+∞", "\u2212∞"), "paper": ("+INF", "–INF"), "inf": ("inf", "-inf"),
                  "words": ("only in A", "only in B")}


class FrequencySpecError(ValueError):
    pass


@dataclass(frozen=True)
class FrequencySpec:
    level: str = "code"
    group_a: frozenset[str] = frozenset()  # column keys
    group_b: frozenset[str] = frozenset()
    by: str = "participant"
    denominator: str = "segments"
    rollup: bool = True
    correction: bool = False
    # Codings a researcher made by accepting an AI suggestion; excluded, the table counts human coding only.
    with_suggestions: bool = True
    sections: str = ""  # the attribute splitting the interviews into sections; "" for one flat table
    infinity: str = "words"  # a key of INFINITIES
    order: str = "codebook"  # a key of ORDERS

    @property
    def has_ratio(self) -> bool:
        return bool(self.group_a) and bool(self.group_b)

    @property
    def hint(self) -> str:
        """What to do next when only one group is chosen (not an error: the table is still right)."""
        if bool(self.group_a) != bool(self.group_b):
            return f"Choose values for group {'B' if self.group_a else 'A'} too to see the log ratio ln(A/B)."
        return ""


@dataclass(frozen=True)
class Column:
    key: str  # the participant's uuid when grouped by participant, else the value as text
    label: str


@dataclass(frozen=True)
class Ratio:
    """ln(share A / share B) with its 95 % interval; ±inf when only one group has the code, None when undefined."""

    value: float | None
    low: float | None = None
    high: float | None = None

    @property
    def flag(self) -> str:
        if self.value is None:
            return "undefined"
        if self.value == math.inf:
            return "only in A"
        if self.value == -math.inf:
            return "only in B"
        if self.low is None:
            return "no interval: in every unit of both groups"
        return ""

    @property
    def finite(self) -> bool:
        return self.value is not None and not math.isinf(self.value)

    @property
    def infinite(self) -> bool:
        return self.value is not None and math.isinf(self.value)


@dataclass
class FrequencyRow:
    label: str
    uuid: str
    colour: str
    depth: int  # 0 for top-level codes and themes, 1 for their children, ...
    counts: list[int]
    percents: list[float | None]
    count_a: int = 0
    count_b: int = 0
    ratio: Ratio = field(default_factory=lambda: Ratio(None))

    @property
    def total(self) -> int:
        return sum(self.counts)

    @property
    def log_ratio(self) -> float | None:
        return self.ratio.value


@dataclass
class Section:
    """The rows of one value of the sections' attribute: counted over its interviews only."""

    label: str
    totals: list[int]
    rows: list[FrequencyRow]
    total_a: int = 0
    total_b: int = 0

    @property
    def overall(self) -> int:
        return sum(self.totals)

    def overall_percent(self, row: FrequencyRow) -> float | None:
        """The row's share over every column of the section: what it says when its columns are collapsed."""
        return 100 * row.total / self.overall if self.overall else None


@dataclass
class FrequencyTable:
    level: str
    columns: list[Column]
    totals: list[int]  # the denominator per column
    rows: list[FrequencyRow]
    spec: FrequencySpec
    by_label: str = "Model (participant)"
    group_a_labels: list[str] = field(default_factory=list)
    group_b_labels: list[str] = field(default_factory=list)
    total_a: int = 0
    total_b: int = 0
    archived: set[str] = field(default_factory=set)  # uuids of the rows' codes out of use, their codings still counted
    sections: list[Section] = field(default_factory=list)  # empty for a flat table
    sections_label: str = ""

    @property
    def parts(self) -> list[Section]:
        """The table's blocks of rows: its sections, or the one block of a flat table."""
        return self.sections or [Section("", self.totals, self.rows, self.total_a, self.total_b)]

    def _all_rows(self) -> Iterable[FrequencyRow]:
        return (r for part in self.parts for r in part.rows)

    @property
    def max_percent(self) -> float:
        return max((p for r in self._all_rows() for p in r.percents if p is not None), default=0.0)

    @property
    def overall(self) -> int:
        """The denominator over every column (each interview sits in exactly one)."""
        return sum(self.totals)

    @property
    def totals_label(self) -> str:
        return DENOMINATORS[self.spec.denominator].capitalize()

    def note(self) -> str:
        """What n, % and the ratio mean: printed under the table and in the LaTeX caption."""
        parts = [f"Columns: {self.by_label}.",
                 f"n = {DENOMINATORS[self.spec.denominator]} with the {self.level}; % = share of the column's "
                 f"{DENOMINATORS[self.spec.denominator]}."]
        parts.append("Parent codes and themes include their children." if self.spec.rollup
                     else "Each row counts only what is coded with it directly.")
        if not self.spec.with_suggestions:
            parts.append("Codings made by accepting AI suggestions are left out.")
        if self.sections:
            parts.append(f"Sections: {self.sections_label}; each counts only its own interviews, with its own "
                         f"totals and ratios, and lists the {self.level}s found in it.")
        if self.spec.order != "codebook":
            parts.append(f"Rows {ORDERS[self.spec.order]}, each under its parent.")
        if self.spec.has_ratio:
            parts.append(f"ln(A/B) compares group A ({', '.join(self.group_a_labels)}) with group B "
                         f"({', '.join(self.group_b_labels)}): the natural log of share in A over share in B.")
            if self.spec.correction:
                parts.append("Continuity correction: 0.5 added to each cell (a + 0.5 of n + 1).")
            parts.append("95% CI: Woolf's log method for a ratio of two shares, "
                         "ln ratio ± 1.96·√(1/a − 1/n_A + 1/b − 1/n_B); none for ratios only in A or only in B, "
                         "nor for rows in every unit of both groups (use the continuity correction for one).")
            rows = list(self._all_rows())
            if self.spec.infinity != "words" and any(r.ratio.infinite for r in rows):
                plus, minus = _INFINITY_TEXT[self.spec.infinity]
                parts.append(f"{plus} (or {minus}): only group A (or only group B) has the {self.level}; the other "
                             "group's count is 0, so the ratio is infinite.")
            if any(r.ratio.value is None for r in rows):
                parts.append("— (empty in spreadsheets): undefined, not infinite: neither group has the "
                             f"{self.level} (0/0), or a group has no {DENOMINATORS[self.spec.denominator]}.")
        return " ".join(parts)

    def headers(self) -> list[str]:
        """Spreadsheet headers: numbers in columns of their own, the ratio's flag beside it; a sectioned table
        names each row's section in a first column (one row per line, so the sheet stays sortable)."""
        cols = ["Section"] if self.sections else []
        cols.append("Code" if self.level == "code" else "Theme")
        for c in self.columns:
            cols += [f"{c.label} n", f"{c.label} %"]
        if self.spec.has_ratio:
            cols += ["Group A n", "Group B n", "ln(A/B)", "95% CI low", "95% CI high", "ln(A/B) flag"]
        return cols

    def export_rows(self) -> Iterable[list[Any]]:
        """Rows for CSV/XLSX: numbers where finite; an infinite ratio empty and flagged, or in the chosen spelling;
        an undefined one empty and flagged; each section's rows, then its totals."""
        for part in self.parts:
            lead = [part.label] if self.sections else []
            for r in part.rows:
                cells: list[Any] = [*lead, _indent(r)]
                for n, pct in zip(r.counts, r.percents, strict=True):
                    cells += [n, rounded(pct, 1)]
                if self.spec.has_ratio:
                    cells += [r.count_a, r.count_b, self._sheet_ratio(r.ratio),
                              _round(r.ratio.low), _round(r.ratio.high), r.ratio.flag]
                yield cells
            totals: list[Any] = [*lead, self.totals_label]
            for n in part.totals:
                totals += [n, None]
            if self.spec.has_ratio:
                totals += [part.total_a, part.total_b, None, None, None, ""]
            yield totals

    def _sheet_ratio(self, ratio: Ratio) -> Any:
        if ratio.finite:
            return _round(ratio.value)
        if ratio.value is None or self.spec.infinity == "words":
            return None
        if self.spec.infinity == "symbol":
            return ratio.value  # the writers' own spreadsheet infinity (reports.writers.INFINITY_TEXT)
        # A leading "+" would be guarded as a formula and show an apostrophe: +INF is the bare INF there, as +∞ is ∞.
        return infinity_text(ratio.value, self.spec.infinity).removeprefix("+")

    def compact_headers(self) -> list[str]:
        """One "n (%)" column per value, for tables in papers (LaTeX, Word)."""
        cols = ["Code" if self.level == "code" else "Theme", *(c.label for c in self.columns)]
        if self.spec.has_ratio:
            cols += ["A n", "B n", "ln(A/B)", "95% CI"]
        return cols

    def compact_rows(self) -> Iterable[Sequence[Any] | Heading]:
        """Rows for papers; a sectioned table heads each section's rows with its name, as the study's Table 2."""
        for part in self.parts:
            if self.sections:
                yield Heading(part.label)
                if not part.rows:
                    yield [f"(no {self.level}s in these interviews)", *[None] * (len(self.compact_headers()) - 1)]
            for r in part.rows:
                cells: list[Any] = [_indent(r)]
                cells += ["–" if pct is None else f"{n} ({rounded(pct, 1).text}%)"
                          for n, pct in zip(r.counts, r.percents, strict=True)]
                if self.spec.has_ratio:
                    value = r.ratio.value
                    ratio = (value if self.spec.infinity == "symbol" else infinity_text(value, self.spec.infinity)) \
                        if r.ratio.infinite else format_ratio(value)  # ±inf as a float: each writer sets its own ∞
                    cells += [r.count_a, r.count_b, ratio, format_interval(r.ratio)]
                yield cells
            totals: list[Any] = [self.totals_label, *part.totals]
            if self.spec.has_ratio:
                totals += [part.total_a, part.total_b, None, None]
            yield totals


def _indent(row: FrequencyRow) -> str:
    return "— " * row.depth + row.label


def _round(value: float | None) -> float | None:
    return rounded(value, 2)


def ratio_estimate(count_a: int, total_a: int, count_b: int, total_b: int, *, correction: bool = False) -> Ratio:
    """ln of the ratio of two shares with its 95 % interval (see the module docstring)."""
    if total_a <= 0 or total_b <= 0 or (count_a == 0 and count_b == 0):
        return Ratio(None)
    a, n_a, b, n_b = float(count_a), float(total_a), float(count_b), float(total_b)
    if correction:
        a, n_a, b, n_b = a + 0.5, n_a + 1, b + 0.5, n_b + 1
    elif b == 0:
        return Ratio(math.inf)
    elif a == 0:
        return Ratio(-math.inf)
    value = math.log((a / n_a) / (b / n_b))
    variance = 1 / a - 1 / n_a + 1 / b - 1 / n_b
    if variance <= 0:  # a = n_A and b = n_B: Woolf's interval would be [0, 0], a certainty the data do not give
        return Ratio(value)
    half = Z95 * math.sqrt(variance)
    return Ratio(value, value - half, value + half)


def log_ratio(count_a: int, total_a: int, count_b: int, total_b: int) -> float | None:
    """ln((count_a/total_a) / (count_b/total_b)); ±inf when one side is zero, None when undefined."""
    return ratio_estimate(count_a, total_a, count_b, total_b).value


def infinity_text(value: float, infinity: str = "words") -> str:
    """An infinite ratio in the spelling `infinity` (a key of INFINITIES)."""
    plus, minus = _INFINITY_TEXT[infinity]
    return plus if value > 0 else minus


def format_ratio(value: float | None, infinity: str = "words") -> str:
    if value is None:
        return "—"  # undefined (0/0): never an infinity, whatever the spelling
    if math.isinf(value):
        return infinity_text(value, infinity)
    return _signed(value)


def _signed(value: float) -> str:
    text = f"{rounded(value, 2):+.2f}"  # half up, as the CSV's figure
    return "0.00" if text in ("+0.00", "-0.00") else text.replace("-", "−")


def format_interval(ratio: Ratio) -> str:
    if ratio.low is None or ratio.high is None:
        return "—" if ratio.finite else ""  # a finite ratio without one: the table's note says why
    return f"[{_signed(ratio.low)}, {_signed(ratio.high)}]"


# --- who is in which column ----------------------------------------------------------------


@dataclass(frozen=True)
class Attribute:
    key: str
    label: str


@dataclass
class Population:
    """The project's participants and interviews (2 queries), and the attributes they can be grouped by."""

    participants: list[Participant]
    interviews: list[Interview]

    @classmethod
    def of(cls, project: Project) -> Population:
        participants = list(Participant.objects.filter(project=project).order_by("label"))
        interviews = list(Interview.objects.alive().filter(project=project)
                          .only("id", "uuid", "participant_id", "title", "depth", "origin", "status", "metadata")
                          .order_by("participant__label", "conducted_at", "title", "id"))
        return cls(participants, interviews)

    def attributes(self) -> list[Attribute]:
        found = [Attribute(k, v) for k, v in PARTICIPANT_FIELDS.items()]
        found += [Attribute(CASE_PREFIX + k, f"Case variable: {k}") for k in sorted(_keys(p.attributes for p in self.participants))]
        found += [Attribute(k, v) for k, v in INTERVIEW_FIELDS.items()]
        found += [Attribute(INTERVIEW_PREFIX + k, f"Interview: {k}")
                  for k in sorted(_keys(interview_values(i.metadata) for i in self.interviews))]
        return found

    def attribute(self, key: str) -> Attribute:
        for a in self.attributes():
            if a.key == key:
                return a
        raise FrequencySpecError(f"There is no attribute {key!r} to group by in this project; "
                                 "choose a participant field, a case variable or an interview attribute.")

    def column_of(self, key: str) -> dict[int, str]:
        """Interview id → its column key for the attribute `key`."""
        participants = {p.pk: p for p in self.participants}
        return {iv.pk: _value(key, iv, participants[iv.participant_id]) for iv in self.interviews}

    def columns(self, key: str) -> list[Column]:
        if key == "participant":
            used = {iv.participant_id for iv in self.interviews}
            return [Column(str(p.uuid), p.label) for p in self.participants if p.pk in used]
        values = set(self.column_of(key).values())
        return [Column(v, v) for v in sorted(values, key=lambda v: (v == NOT_SET, v.lower()))]


def _keys(mappings: Iterable[Any]) -> set[str]:
    return {k for m in mappings if isinstance(m, dict) for k, v in m.items() if _scalar(v)}


def _scalar(value: Any) -> bool:
    return isinstance(value, str | int | float | bool) and str(value).strip() != ""


def _value(key: str, interview: Interview, participant: Participant) -> str:
    if key == "participant":
        return str(participant.uuid)
    if key in PARTICIPANT_FIELDS:
        raw: Any = getattr(participant, key)
    elif key in INTERVIEW_FIELDS:
        raw = getattr(interview, key)
    elif key.startswith(CASE_PREFIX):
        raw = (participant.attributes or {}).get(key[len(CASE_PREFIX):]) if isinstance(participant.attributes, dict) else None
    else:
        raw = interview_values(interview.metadata).get(key[len(INTERVIEW_PREFIX):])
    return str(raw).strip() if _scalar(raw) else NOT_SET


def interview_values(metadata: Any) -> dict[str, Any]:
    """An interview's attributes to group by: its metadata's keys, and those nested under "attributes".

    Interviews made from probe rationales keep the item's ground truth, the condition and the predicted label
    under metadata["attributes"]; a top-level key of the same name wins.
    """
    if not isinstance(metadata, dict):
        return {}
    nested = metadata.get("attributes")
    return {**(nested if isinstance(nested, dict) else {}), **metadata}


# --- choices ---------------------------------------------------------------------------


def spec_from_query(population: Population, query: Mapping[str, Any]) -> FrequencySpec:
    """Level, the attribute the columns are grouped by, the two groups (values in `a` and `b`) and the options."""
    getlist = query.getlist if hasattr(query, "getlist") else (lambda k: list(query.get(k, [])))
    level = query.get("level") or "code"
    if level not in LEVELS:
        raise FrequencySpecError(f"Unknown level {level!r}; choose code or theme.")
    denominator = query.get("denominator") or "segments"
    if denominator not in DENOMINATORS:
        raise FrequencySpecError(f"Unknown denominator {denominator!r}; choose one of {', '.join(DENOMINATORS)}.")
    attribute = population.attribute(query.get("by") or "participant")
    keys = {c.key for c in population.columns(attribute.key)}
    groups = []
    for key, name in (("a", "group A"), ("b", "group B")):
        chosen = set(getlist(key))
        for value in chosen - keys:
            raise FrequencySpecError(f"No interview has {value!r} as {attribute.label} ({name}).")
        groups.append(frozenset(chosen))
    if groups[0] & groups[1]:
        raise FrequencySpecError("A value cannot be in both groups: the ratio compares two separate groups.")
    sections = query.get("sections") or ""
    if sections:
        if sections not in {a.key for a in population.attributes()}:
            raise FrequencySpecError(f"sections: there is no attribute {sections!r} in this project; choose a "
                                     "participant field, a case variable or an interview attribute.")
        if sections == attribute.key:
            raise FrequencySpecError(f"sections: the columns are already by {attribute.label}; choose another "
                                     "attribute for the sections (e.g. the predicted label when the columns are "
                                     "the ground truth).")
    order = choice(query, "order", {k: k for k in ORDERS}, "codebook", FrequencySpecError)
    if order == "ratio" and not (groups[0] and groups[1]):
        raise FrequencySpecError("order: rows go by ln(A/B) only when both groups A and B are chosen.")
    return FrequencySpec(level=level, group_a=groups[0], group_b=groups[1], by=attribute.key, denominator=denominator,
                         sections=sections, order=order,
                         infinity=choice(query, "infinity", {k: k for k in INFINITIES}, "words", FrequencySpecError),
                         rollup=flag(query, "rollup", True, FrequencySpecError),
                         correction=flag(query, "correction", False, FrequencySpecError),
                         with_suggestions=choice(query, "suggestions", {"include": True, "exclude": False}, True,
                                                 FrequencySpecError))


# --- the table ---------------------------------------------------------------------------


def frequency_table(project: Project, spec: FrequencySpec, population: Population | None = None) -> FrequencyTable:
    """Counts and shares per code (or theme) × column, with the group log ratio (a fixed number of queries).

    A sectioned table counts (section, column) cells in the same single query; its flat rows (the heatmap's)
    add the sections up, exact because every interview is in one section.
    """
    population = population or Population.of(project)
    columns = population.columns(spec.by)
    width = len(columns)
    index = {c.key: i for i, c in enumerate(columns)}
    column_of = population.column_of(spec.by)
    sections = population.columns(spec.sections) if spec.sections else []
    if sections:
        section_index = {c.key: i for i, c in enumerate(sections)}
        cell_of = {iv: section_index[key] * width + index[column_of[iv]]
                   for iv, key in population.column_of(spec.sections).items()}
    else:
        cell_of = {iv: index[key] for iv, key in column_of.items()}
    cells = width * max(len(sections), 1)
    # A code merged into another has handed it its codings: it would be a row of zeros beside its target.
    codes = list(Code.objects.for_project(project).filter(merged_into__isnull=True)
                 .only("id", "name", "uuid", "colour", "parent_id", "archived").order_by("position", "name"))
    if spec.level == "code":
        items, members = _code_items(codes, spec.rollup)
    else:
        items, members = _theme_items(project, codes, spec.rollup)
    # Kept under the version of the project's coding events (coding.queries.cached_counts) and everything else counted:
    # the live codes (a trashed one leaves the coded segments), the rows' codes and the interviews' cells.
    inputs = (spec.denominator, spec.with_suggestions, [c.pk for c in codes],
              sorted((k, sorted(v)) for k, v in members.items()), sorted(cell_of.items()))
    counts, coded = cached_counts(project, "frequency", inputs,
                                  lambda: _count(project, spec, members, cell_of, cells))
    totals = _totals(project, spec, population, cell_of, coded, cells)
    picked_a = [i for c, i in index.items() if c in spec.group_a]
    picked_b = [i for c, i in index.items() if c in spec.group_b]

    def block(label: str, counts: dict[Any, list[int]], totals: list[int], found_only: bool) -> Section:
        """One block of rows over `width` columns: a section's (only the rows found in it) or the whole table's."""
        total_a, total_b = sum(totals[i] for i in picked_a), sum(totals[i] for i in picked_b)
        rows = []
        for key, name, uuid, colour, depth in items:
            row_counts = counts.get(key) or [0] * width
            if found_only and not any(row_counts):
                continue
            row = FrequencyRow(label=name, uuid=uuid, colour=colour, depth=depth, counts=row_counts,
                               percents=[100 * n / t if t else None for n, t in zip(row_counts, totals, strict=True)])
            if spec.has_ratio:
                row.count_a, row.count_b = sum(row_counts[i] for i in picked_a), sum(row_counts[i] for i in picked_b)
                row.ratio = ratio_estimate(row.count_a, total_a, row.count_b, total_b, correction=spec.correction)
            rows.append(row)
        return Section(label, totals, _ordered(rows, spec.order), total_a, total_b)

    parts = []
    for n, section in enumerate(sections):
        cut = slice(n * width, (n + 1) * width)
        parts.append(block(section.label, {key: c[cut] for key, c in counts.items()}, totals[cut], found_only=True))
    if sections:  # the whole table (the heatmap's) adds the sections up, column by column
        counts = {key: [sum(c[i::width]) for i in range(width)] for key, c in counts.items()}
        totals = [sum(totals[i::width]) for i in range(width)]
    whole = block("", counts, totals, found_only=False)
    return FrequencyTable(
        level=spec.level, columns=columns, totals=whole.totals, rows=whole.rows, spec=spec,
        by_label=population.attribute(spec.by).label,
        group_a_labels=[columns[i].label for i in picked_a], group_b_labels=[columns[i].label for i in picked_b],
        total_a=whole.total_a, total_b=whole.total_b,
        archived={str(c.uuid) for c in codes if c.archived} if spec.level == "code" else set(),
        sections=parts, sections_label=population.attribute(spec.sections).label if sections else "",
    )


Item = tuple[Any, str, str, str, int]  # key, label, uuid, colour, depth


def _ordered(rows: list[FrequencyRow], order: str) -> list[FrequencyRow]:
    """The rows (depth-first, children after their parent) with each parent's children, and the top level, sorted
    by `order`; ties keep the codebook's order."""
    if order == "codebook":
        return rows
    key = _ORDER_KEYS[order]

    def nested(rows: list[FrequencyRow]) -> list[tuple[FrequencyRow, list]]:
        nodes, i = [], 0
        while i < len(rows):
            end = i + 1
            while end < len(rows) and rows[end].depth > rows[i].depth:
                end += 1
            nodes.append((rows[i], nested(rows[i + 1:end])))
            i = end
        return nodes

    def flat(nodes: list[tuple[FrequencyRow, list]]) -> Iterable[FrequencyRow]:
        for row, children in sorted(nodes, key=lambda node: key(node[0])):
            yield row
            yield from flat(children)

    return list(flat(nested(rows)))


def _by_ratio(row: FrequencyRow) -> tuple[int, float]:
    """Only in A first, then the finite ratios from A's most to B's most, then only in B, then the undefined."""
    value = row.ratio.value
    if value is None:
        return (3, 0.0)
    if math.isinf(value):
        return (0, 0.0) if value > 0 else (2, 0.0)
    return (1, -value)


_ORDER_KEYS: dict[str, Callable[[FrequencyRow], Any]] = {"ratio": _by_ratio, "count": lambda row: -row.total}


def _tree(nodes: list[Any], parent_of: dict[int, int | None]) -> list[tuple[Any, int]]:
    """Nodes in depth-first order (children after their parent, siblings in the given order) with their depth."""
    alive = {n.pk for n in nodes}
    children: dict[int | None, list[Any]] = defaultdict(list)
    for n in nodes:
        parent = parent_of.get(n.pk)
        children[parent if parent in alive else None].append(n)
    out: list[tuple[Any, int]] = []
    seen: set[int] = set()

    def walk(parent: int | None, depth: int) -> None:
        for n in children[parent]:
            if n.pk in seen:
                continue  # a cycle in bad data: show each node once
            seen.add(n.pk)
            out.append((n, depth))
            walk(n.pk, depth + 1)

    walk(None, 0)
    for n in nodes:  # parents that loop back on each other: shown at the top rather than lost
        if n.pk not in seen:
            seen.add(n.pk)
            out.append((n, 0))
            walk(n.pk, 1)
    return out


def _subtrees(ordered: list[tuple[Any, int]]) -> dict[int, set[int]]:
    """Each node's id → its own id and all its descendants' ids (from the depth-first order)."""
    result: dict[int, set[int]] = {}
    stack: list[tuple[int, int]] = []
    for node, depth in ordered:
        while stack and stack[-1][1] >= depth:
            stack.pop()
        result[node.pk] = {node.pk}
        for ancestor, _ in stack:
            result[ancestor].add(node.pk)
        stack.append((node.pk, depth))
    return result


def _code_items(codes: list[Code], rollup: bool) -> tuple[list[Item], dict[Any, set[int]]]:
    ordered = _tree(codes, {c.pk: c.parent_id for c in codes})
    below = _subtrees(ordered)
    items = [(c.pk, c.name, str(c.uuid), c.colour, depth) for c, depth in ordered]
    return items, {c.pk: below[c.pk] if rollup else {c.pk} for c, _ in ordered}


def _theme_items(project: Project, codes: list[Code], rollup: bool) -> tuple[list[Item], dict[Any, set[int]]]:
    themes = list(Theme.objects.for_project(project).exclude(status=Theme.Status.DISCARDED)
                  .only("id", "name", "uuid", "colour", "parent_id").order_by("position", "name"))
    code_tree = _subtrees(_tree(codes, {c.pk: c.parent_id for c in codes}))
    own: dict[int, set[int]] = defaultdict(set)
    for theme_id, code_id in ThemeCode.objects.filter(theme__in=[t.pk for t in themes]).values_list("theme_id", "code_id"):
        if code_id in code_tree:
            own[theme_id] |= code_tree[code_id] if rollup else {code_id}
    ordered = _tree(themes, {t.pk: t.parent_id for t in themes})
    below = _subtrees(ordered)
    members = {t.pk: set().union(*(own[s] for s in (below[t.pk] if rollup else {t.pk}))) for t, _ in ordered}
    return [(t.pk, t.name, str(t.uuid), t.colour, depth) for t, depth in ordered], members


# Codings per (column, code), then every segment carrying several codings (two codes, or two coders) with
# its codes: the first over-counts exactly those segments, and Python takes the excess off per row. The
# second part reads the (interview, segment) index and is empty when each segment is coded once.
_SEGMENT_COUNTS_SQL = """
WITH col(interview_id, col) AS (SELECT * FROM unnest(%(interviews)s::bigint[], %(columns)s::int[]))
SELECT col.col, ARRAY[c.code_id], count(*), false
FROM coding_coding c JOIN col ON col.interview_id = c.interview_id {live}
GROUP BY col.col, c.code_id
UNION ALL
SELECT col, codes, count(*), true FROM (
    SELECT min(col.col) AS col, array_agg(c.code_id ORDER BY c.code_id) AS codes
    FROM coding_coding c JOIN col ON col.interview_id = c.interview_id {live}
    AND (c.interview_id, c.segment_id) IN (
        SELECT interview_id, segment_id FROM coding_coding WHERE interview_id = ANY(%(interviews)s::bigint[])
        GROUP BY interview_id, segment_id HAVING count(*) > 1)
    GROUP BY c.segment_id
) shared
GROUP BY col, codes
"""
_INTERVIEW_COUNTS_SQL = """
WITH col(interview_id, col) AS (SELECT * FROM unnest(%(interviews)s::bigint[], %(columns)s::int[])),
member(item, code_id) AS (SELECT * FROM unnest(%(items)s::int[], %(codes)s::bigint[])),
used AS (SELECT DISTINCT c.code_id, c.interview_id FROM coding_coding c
         JOIN col ON col.interview_id = c.interview_id {live})
SELECT m.item, col.col, count(DISTINCT used.interview_id)
FROM used JOIN member m ON m.code_id = used.code_id JOIN col ON col.interview_id = used.interview_id
GROUP BY m.item, col.col
"""
# The codings a table counts: live codes of the project, in the columns' (live) interviews.
_LIVE_CODINGS = """JOIN coding_code k ON k.id = c.code_id AND k.project_id = %(project)s AND k.deleted_at IS NULL
    {codable} WHERE TRUE {human}"""


def _count(project: Project, spec: FrequencySpec, members: dict[Any, set[int]], column_of: dict[int, int],
           width: int) -> tuple[dict[Any, list[int]], list[int]]:
    """Per row, the distinct segments (or interviews) per column; and each column's coded segments.

    PostgreSQL counts (one query, a few hundred rows back whatever the project's size: at 50× the peer
    corpus Python's set unions over every coding took over a second); elsewhere Python does.
    """
    if connection.vendor != "postgresql":
        return _count_in_python(project, spec, members, column_of, width)
    keys = list(members)
    interviews = list(column_of)
    live = _LIVE_CODINGS.format(
        codable="JOIN interviews_segment s ON s.id = c.segment_id AND s.speaker = %(participant)s"
        if spec.denominator == "codable" else "",
        human="" if spec.with_suggestions else "AND c.origin = %(human)s")
    params = {"project": project.pk, "interviews": interviews, "columns": [column_of[i] for i in interviews],
              "participant": Speaker.PARTICIPANT, "human": Coding.Origin.HUMAN}
    counts: dict[Any, list[int]] = {}
    coded = [0] * width
    with connection.cursor() as cur:
        if spec.denominator == "interviews":
            pairs = [(index, code_id) for index, key in enumerate(keys) for code_id in members[key]]
            cur.execute(_INTERVIEW_COUNTS_SQL.format(live=live),
                        {**params, "items": [i for i, _ in pairs], "codes": [c for _, c in pairs]})
            for item, col, n in cur.fetchall():
                counts.setdefault(keys[item], [0] * width)[col] = n
            return counts, coded  # the coded segments are the segments denominator's only
        cur.execute(_SEGMENT_COUNTS_SQL.format(live=live), params)
        rows = cur.fetchall()
    items_of_code: dict[int, list[Any]] = defaultdict(list)
    for key, code_ids in members.items():
        for code_id in code_ids:
            items_of_code[code_id].append(key)
    for col, codes, n, shared in rows:
        # A shared segment was counted once per coding; it counts once per row (and column) it falls in.
        carried: dict[Any, int] = defaultdict(int)
        for code_id in codes:
            for key in items_of_code.get(code_id, ()):
                carried[key] += 1
        coded[col] += n * (1 - len(codes)) if shared else n
        for key, k in carried.items():
            counts.setdefault(key, [0] * width)[col] += n * (1 - k) if shared else n * k
    return counts, coded


def _count_in_python(project: Project, spec: FrequencySpec, members: dict[Any, set[int]], column_of: dict[int, int],
                     width: int) -> tuple[dict[Any, list[int]], list[int]]:
    """`_count` with every distinct (code, interview, segment) of the project read into Python sets (SQLite)."""
    items_of_code: dict[int, list[Any]] = defaultdict(list)
    for key, code_ids in members.items():
        for code_id in code_ids:
            items_of_code[code_id].append(key)
    codings = Coding.objects.filter(interview__project=project, interview__deleted_at__isnull=True,
                                    code__deleted_at__isnull=True, code__project=project)
    if spec.denominator == "codable":
        codings = codings.filter(segment__speaker=Speaker.PARTICIPANT)
    if not spec.with_suggestions:
        codings = codings.filter(origin=Coding.Origin.HUMAN)
    seen: dict[Any, list[set[int]]] = {}
    coded: list[set[int]] = [set() for _ in range(width)]
    by_interviews = spec.denominator == "interviews"
    for code_id, interview_id, segment_id in (codings.values_list("code_id", "interview_id", "segment_id")
                                              .distinct().iterator(chunk_size=5000)):
        col = column_of.get(interview_id)
        if col is None:
            continue
        coded[col].add(segment_id)
        unit = interview_id if by_interviews else segment_id
        for key in items_of_code.get(code_id, ()):
            seen.setdefault(key, [set() for _ in range(width)])[col].add(unit)
    return {key: [len(s) for s in sets] for key, sets in seen.items()}, [len(s) for s in coded]


def _totals(project: Project, spec: FrequencySpec, population: Population, column_of: dict[int, int],
            coded: list[int], width: int) -> list[int]:
    totals = [0] * width
    if spec.denominator == "segments":
        return coded
    if spec.denominator == "interviews":
        for col in column_of.values():
            totals[col] += 1
        return totals
    answers = (Segment.objects.filter(interview__project=project, interview__deleted_at__isnull=True,
                                      speaker=Speaker.PARTICIPANT)
               .values("interview_id").annotate(n=Count("id")).values_list("interview_id", "n"))
    for interview_id, n in answers:
        if interview_id in column_of:
            totals[column_of[interview_id]] += n
    return totals
