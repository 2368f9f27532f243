"""Table 1 of a probe: per condition × model, per ground-truth group, rates, accuracy and tests.

Only parsed answers count towards N; unparsed and failed answers are reported beside it.
Subsets split the answers by what their rationale cites: "cites" = the applied categories
include any of the chosen ones, "none" = they include none of them.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from probes.items import truth_key
from probes.models import Answer, ConditionVersion, Probe
from probes.stats import TestResult, difference_test, wilson
from projects.numbers import PValue, rounded

ALL, CITES, NONE, UNCITED = "all", "cites", "none", "uncited"
SUBSET_NAMES = {ALL: "All answers", CITES: "Cites the chosen categories", NONE: "Cites none of them",
                UNCITED: "Cites no category"}
# What the "None" subset holds: answers citing none of the chosen categories, or (as the study's Table 1 counts it)
# answers citing no category at all, shown for every condition whether or not categories are chosen.
NONE_MEANINGS = {"chosen": "cites none of the chosen categories", "any": "cites no category at all"}


@dataclass
class Rate:
    count: int
    n: int

    @property
    def value(self) -> float | None:
        return self.count / self.n if self.n else None

    @property
    def interval(self) -> tuple[float, float] | None:
        return wilson(self.count, self.n)


@dataclass
class GroupRow:
    group: str  # a ground-truth value
    n: int
    items: int  # distinct items among the n answers (fewer than n when items were asked more than once)
    predicted: dict[str, Rate]  # label → rate of predicting it
    accuracy: Rate


@dataclass
class Cell:
    condition: str
    version: int  # the condition version the answers were asked with: versions are different prompts, never pooled
    model: str
    subset: str
    labels: list[str]
    groups: list[GroupRow]
    accuracy: Rate
    confusion: list[list[int]]  # rows: groups in order; columns: labels in order
    test: TestResult | None
    items: int = 0
    unparsed: int = 0
    failed: int = 0

    @property
    def n(self) -> int:
        return self.accuracy.n

    @property
    def subset_name(self) -> str:
        return SUBSET_NAMES[self.subset]


@dataclass
class Scores:
    truth_column: str
    chosen: list[str]
    cells: list[Cell]
    none: str = "chosen"  # a key of NONE_MEANINGS
    novel: dict[str, list[tuple[str, int]]] = field(default_factory=dict)  # condition → [(category, count)]
    # Ground-truth values no condition's label matches: every answer about them counts as wrong.
    unmatched_truths: list[str] = field(default_factory=list)
    versions: dict[str, list[int]] = field(default_factory=dict)  # condition → the versions its answers were asked with
    repetitions: int = 1
    # Every ground-truth group among the answers, whatever their status: the paper table's rows, kept with N = 0
    # where a cell has no parsed answer about them. The labels' order first (woman, man), then the others.
    groups: list[str] = field(default_factory=list)

    def notes(self) -> list[str]:
        """What a reader of the table must know to read N, said on the page and under every download."""
        notes = []
        if self.repetitions > 1:
            notes.append(
                f"Each item was asked {self.repetitions} times per condition and model, and N counts every answer "
                "(Items counts the distinct items). Repetitions of one item are not independent observations: the "
                "intervals and tests treat them as if they were, so they are narrower than the items alone support.")
        for condition, numbers in self.versions.items():
            if len(numbers) > 1:
                listed = ", ".join(f"v{n}" for n in numbers[:-1]) + f" and v{numbers[-1]}"
                notes.append(
                    f"The answers of “{condition}” were asked with {listed} of its prompt: each version is scored "
                    "on rows of its own (Version), never pooled with another.")
        return notes


@dataclass
class _Row:
    item: int
    truth: str
    label: str
    categories: list[str]
    status: str


def probe_scores(probe: Probe, *, truth_column: str = "", chosen: list[str] | None = None, none: str = "chosen") -> Scores:
    """Table 1 for the probe: one Cell per condition × version × model × subset (only "all" when nothing is chosen,
    and "None" meaning "cites none of them"; with `none="any"`, "None" is the answers citing no category at all).

    Answers asked with different versions of a condition answered different prompts: each version gets cells of
    its own, and Scores.notes() says so.
    """
    truth_column = truth_column or probe.truth_column
    chosen_set = {c.lower() for c in chosen or []}
    rows: dict[tuple[str, int, str], list[_Row]] = defaultdict(list)
    labels = latest_labels(probe)
    offered: dict[str, set[str]] = {}
    # Each item's ground truth and each version's categories read once, not with every answer.
    truths = {pk: str(item_labels.get(truth_column, "")).strip()
              for pk, item_labels in probe.items.values_list("pk", "labels")}
    version_categories = dict(ConditionVersion.objects.filter(condition__probe=probe).values_list("pk", "categories"))
    answers = Answer.objects.filter(item__probe=probe).order_by(
        "condition__name", "condition_version__number", "participant__label").values_list(
        "condition__name", "condition_version__number", "participant__label", "item_id", "label", "categories",
        "status", "condition_version_id",
    )
    spellings: dict[str, str] = {}
    versions: dict[str, list[int]] = {}
    for condition, version, model, item, label, categories, status, version_id in answers.iterator(chunk_size=2000):
        truth = truths[item]
        # One group per value whatever its case, named as its first spelling (a label's, below, when one matches).
        truth = spellings.setdefault(truth_key(truth), truth)
        rows[(condition, version, model)].append(_Row(item, truth, label, categories or [], status))
        if version not in versions.setdefault(condition, []):
            versions[condition].append(version)
            offered.setdefault(condition, set()).update(c.lower() for c in version_categories[version_id])
        columns = labels.setdefault(condition, [])
        if status == Answer.Status.DONE and label not in columns:
            columns.append(label)  # parsed with an older version's labels: still a column, so every answer counts
    named = _named_as_labels(spellings, labels)
    for cell_rows in rows.values():
        for row in cell_rows:
            row.truth = named.get(row.truth, row.truth)
    # Every cell has a row per ground-truth group, N = 0 where it has no parsed answer about it: never dropped.
    groups = sorted({row.truth for cell_rows in rows.values() for row in cell_rows})
    cells = []
    for (condition, version, model), cell_rows in rows.items():
        subsets = [ALL, *([CITES] if chosen_set else []), *([NONE] if chosen_set and none == "chosen" else []),
                   *([UNCITED] if none == "any" else [])]
        for subset in subsets:
            cells.append(_cell(condition, version, model, subset, labels[condition], cell_rows, chosen_set, groups))
    novel = {condition: _novel(cell_rows_of(rows, condition), offered[condition]) for condition in offered}
    unmatched = sorted((t for t in spellings.values() if t and t not in named), key=str.lower)
    return Scores(truth_column=truth_column, chosen=list(chosen or []), cells=cells, none=none, novel=novel,
                  unmatched_truths=unmatched, versions=versions, repetitions=probe.repetitions,
                  groups=_in_label_order(set(groups), labels))


def _in_label_order(groups: set[str], labels: dict[str, list[str]]) -> list[str]:
    order = {truth_key(label): i for i, label in enumerate(dict.fromkeys(
        label for condition in sorted(labels) for label in labels[condition]))}
    return sorted(groups, key=lambda g: (order.get(truth_key(g), len(order)), g.lower(), g))


def scores_from_query(probe: Probe, query: Any) -> Scores:
    """The scores a results page or download asks for: `truth` (a label column; the probe's first otherwise) and the
    categories `cites` chooses for the subsets."""
    truth, none = query.get("truth", ""), query.get("none", "")
    return probe_scores(probe, truth_column=truth if truth in probe.label_columns else "", chosen=query.getlist("cites"),
                        none=none if none in NONE_MEANINGS else "chosen")


def _named_as_labels(spellings: dict[str, str], labels: dict[str, list[str]]) -> dict[str, str]:
    """Each ground-truth spelling that some condition's label matches (whatever its case), mapped to that label."""
    label_of = {truth_key(label): label for version_labels in labels.values() for label in version_labels}
    return {spelling: label_of[key] for key, spelling in spellings.items() if key in label_of}


def latest_labels(probe: Probe) -> dict[str, list[str]]:
    """Each condition's labels as its latest version lists them: the predicted columns of Table 1."""
    labels: dict[str, list[str]] = {}
    versions = ConditionVersion.objects.filter(condition__probe=probe).order_by("condition__name", "-number")
    for condition, version_labels in versions.values_list("condition__name", "labels"):
        labels.setdefault(condition, list(version_labels))
    return labels


def cell_rows_of(rows: dict[tuple[str, int, str], list[_Row]], condition: str) -> list[_Row]:
    return [row for (c, _, _), members in rows.items() if c == condition for row in members]


def _in_subset(row: _Row, subset: str, chosen: set[str]) -> bool:
    if subset == ALL:
        return True
    if row.status != Answer.Status.DONE:
        return False  # an answer not parsed cites nothing we know of: it is in neither subset, only in All
    if subset == UNCITED:
        return not row.categories
    cites = any(c.lower() in chosen for c in row.categories)
    return cites if subset == CITES else not cites


def _cell(condition: str, version: int, model: str, subset: str, labels: list[str], rows: list[_Row],
          chosen: set[str], groups: list[str]) -> Cell:
    status_counts = Counter(row.status for row in rows if _in_subset(row, subset, chosen))
    parsed = [row for row in rows if row.status == Answer.Status.DONE and _in_subset(row, subset, chosen)]
    confusion = [[sum(1 for r in parsed if r.truth == g and r.label == label) for label in labels] for g in groups]
    group_rows = []
    for g, counts in zip(groups, confusion, strict=True):
        n = sum(counts)
        predicted = {label: Rate(count, n) for label, count in zip(labels, counts, strict=True)}
        correct = sum(count for label, count in zip(labels, counts, strict=True) if _same(label, g))
        items = len({r.item for r in parsed if r.truth == g})
        group_rows.append(GroupRow(group=g, n=n, items=items, predicted=predicted, accuracy=Rate(correct, n)))
    correct = sum(1 for r in parsed if _same(r.label, r.truth))
    return Cell(
        condition=condition, version=version, model=model, subset=subset, labels=labels, groups=group_rows,
        accuracy=Rate(correct, len(parsed)), confusion=confusion, test=difference_test(confusion),
        items=len({r.item for r in parsed}), unparsed=status_counts[Answer.Status.UNPARSED], failed=status_counts[Answer.Status.FAILED],
    )


def _same(label: str, truth: str) -> bool:
    return truth_key(label) == truth_key(truth)


def _novel(rows: list[_Row], offered: set[str]) -> list[tuple[str, int]]:
    """Categories the model applied that the condition did not offer, most cited first."""
    counts = Counter(c for row in rows if row.status == Answer.Status.DONE for c in row.categories if c.lower() not in offered)
    return sorted(counts.items(), key=lambda item: (-item[1], item[0].lower()))


def categories_cited(probe: Probe) -> list[str]:
    """Every category any condition offers, for choosing the subsets."""
    seen: dict[str, str] = {}
    for categories in probe.conditions.values_list("versions__categories", flat=True):
        for c in categories or []:
            seen.setdefault(c.lower(), c)
    return sorted(seen.values(), key=str.lower)


SUMMARY_HEADERS = [
    "Condition", "Version", "Model", "Subset", "Ground truth", "N", "Items", "Predicted label", "Count", "Rate", "Rate 95% CI low",
    "Rate 95% CI high", "Group accuracy", "Accuracy (all groups)", "Accuracy 95% CI low", "Accuracy 95% CI high",
    "Test", "P-value", "Unparsed", "Failed",
]


def summary_rows(scores: Scores) -> list[list[Any]]:
    """Table 1 in long form: one row per condition × model × subset × ground-truth group × predicted label.

    A ground-truth group with no parsed answers in a cell still gets its rows (N = 0, the rate left empty), with the
    cell's unparsed and failed counts.
    """
    out = []
    for cell in scores.cells:
        low, high = cell.accuracy.interval or (None, None)
        for group in cell.groups:
            for label, rate in group.predicted.items():
                r_low, r_high = rate.interval or (None, None)
                out.append([
                    cell.condition, cell.version, cell.model, cell.subset_name, group.group, group.n, group.items, label,
                    rate.count,
                    _round(rate.value), _round(r_low), _round(r_high), _round(group.accuracy.value),
                    _round(cell.accuracy.value), _round(low), _round(high), cell.test.test if cell.test else "",
                    PValue(cell.test.p_value) if cell.test else None, cell.unparsed, cell.failed,
                ])
    return out


def _round(value: float | None) -> float | None:
    return rounded(value, 4)


# --- Table 1 as the paper prints it -----------------------------------------------------------------

DASH = "–"  # a rate, accuracy or P-value with nothing to compute it from
SUBSET_HEADINGS = {ALL: "All", NONE: "None", UNCITED: "None"}  # CITES is headed by the chosen categories


@dataclass
class PaperColumn:
    group: str  # the condition (with its version, and the model, when there are several)
    heading: str  # the subset: "All", the chosen categories, "None"
    cell: Cell


@dataclass
class PaperTable:
    """Table 1 in the paper's wide layout: a column group per condition × version × model over its subsets, a row per
    ground-truth group with the rate of predicting `rate_label`, then N, the P-value and the accuracy.

    Every ground-truth group is a row and every subset a column even where nothing was counted (N = 0, the rate
    DASH), so the columns line up with a paper's whatever the answers were.
    """

    caption: str
    rate_label: str
    rate_labels: list[str]  # the labels a rate can be shown for
    groups: list[str]
    columns: list[PaperColumn]
    rows: list[list[Any]]  # each starts with its heading
    notes: list[str]

    @property
    def headers(self) -> list[str]:
        return ["Ground truth", *(column.heading for column in self.columns)]

    @property
    def column_groups(self) -> list[tuple[str, int]]:
        spans: list[tuple[str, int]] = [("", 1)]
        for column in self.columns:
            if len(spans) > 1 and spans[-1][0] == column.group:
                spans[-1] = (column.group, spans[-1][1] + 1)
            else:
                spans.append((column.group, 1))
        return spans


def paper_table(scores: Scores, rate_label: str = "") -> PaperTable:
    """The scores as the paper's Table 1; `rate_label` is the predicted label whose rate the group rows show (any
    spelling of one of the conditions' labels; the first label otherwise)."""
    spelled: dict[str, str] = {}  # one choice per label whatever its case, spelled as first seen
    for cell in scores.cells:
        for label in cell.labels:
            spelled.setdefault(truth_key(label), label)
    choices = list(spelled.values())
    rate_label = next((label for label in choices if truth_key(label) == truth_key(rate_label)),
                      choices[0] if choices else "")
    columns = _paper_columns(scores)
    groups = scores.groups
    rows: list[list[Any]] = [[f"N ({'/'.join(groups)})", *("/".join(str(_group_n(c.cell, g)) for g in groups)
                                                          for c in columns)]]
    for group in groups:
        rows.append([group, *(_shown(_group_rate(c.cell, group, rate_label), 2) for c in columns)])
    rows.append(["P-value", *(PValue(c.cell.test.p_value) if c.cell.test else DASH for c in columns)])
    rows.append(["Accuracy", *(_shown(c.cell.accuracy, 2) for c in columns)])
    models = list(dict.fromkeys(cell.model for cell in scores.cells))
    who = f"{models[0]} as a classifier of" if len(models) == 1 else "Models as classifiers of"
    caption = (f"{who} “{scores.truth_column}”: the rate of predicting “{rate_label}” per ground-truth group, "
               "by condition and by the categories the rationale cites")
    return PaperTable(caption=caption, rate_label=rate_label, rate_labels=choices, groups=groups, columns=columns,
                      rows=rows, notes=_paper_notes(scores, rate_label, rows))


def _paper_columns(scores: Scores) -> list[PaperColumn]:
    several_models = len({cell.model for cell in scores.cells}) > 1
    cites = " or ".join(scores.chosen)
    columns = []
    for cell in scores.cells:
        group = cell.condition + (f" v{cell.version}" if len(scores.versions.get(cell.condition, [])) > 1 else "")
        group += f" · {cell.model}" if several_models else ""
        columns.append(PaperColumn(group=group, heading=SUBSET_HEADINGS.get(cell.subset, cites), cell=cell))
    return columns


def _group_row(cell: Cell, group: str) -> GroupRow:
    return next(row for row in cell.groups if row.group == group)  # every cell has every group (probe_scores)


def _group_n(cell: Cell, group: str) -> int:
    return _group_row(cell, group).n


def _group_rate(cell: Cell, group: str, label: str) -> Rate:
    row = _group_row(cell, group)
    # A condition without this label never predicted it: 0 of the group's answers, not undefined.
    return next((rate for predicted, rate in row.predicted.items() if truth_key(predicted) == truth_key(label)),
                Rate(0, row.n))


def _shown(rate: Rate, decimals: int) -> Any:
    return DASH if rate.value is None else rounded(rate.value, decimals)


def _paper_notes(scores: Scores, rate_label: str, rows: list[list[Any]]) -> list[str]:
    groups = "/".join(scores.groups)
    notes = [
        f"Each ground-truth row gives the share of that group's parsed answers predicted “{rate_label}”; N counts "
        f"the parsed answers per group ({groups}). Unparsed and failed answers are not counted.",
        "P-value: whether the groups' predicted labels differ, by Fisher's exact test when a 2×2 table has an expected "
        "count below 5, else Pearson's chi-squared (Yates-corrected on 2×2). Accuracy: the share of parsed answers "
        "whose label is their ground truth.",
    ]
    if scores.chosen:
        listed = ", ".join(f"“{c}”" for c in scores.chosen)
        none = "citing none of them" if scores.none == "chosen" else "citing no category at all"
        notes.append(f"“{' or '.join(scores.chosen)}”: answers whose rationale cites any of {listed}; “None”: answers "
                     f"{none}. Unparsed and failed answers are in neither, only in “All”.")
    elif scores.none == "any":
        notes.append("“None”: answers whose rationale cites no category at all. Unparsed and failed answers are only "
                     "in “All”.")
    if any(value == DASH for row in rows for value in row[1:]):
        notes.append(f"{DASH}: undefined, as no parsed answer is counted there (N = 0), or, for the P-value, there is "
                     "nothing to compare (one group or one predicted label). Such groups and columns are kept so the "
                     "table keeps its shape.")
    if scores.unmatched_truths:
        listed = ", ".join(f"“{t}”" for t in scores.unmatched_truths)
        notes.append(f"The ground truth {listed} matches none of the labels: every answer about it counts as wrong.")
    return [*scores.notes(), *notes]
