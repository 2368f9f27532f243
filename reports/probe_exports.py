"""Probe tables for download: every answer with its provenance, and the Table-1 summary."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from probes.models import Answer, Probe
from probes.scoring import SUMMARY_HEADERS, PaperTable, Scores, summary_rows
from projects.filenames import download_filename
from reports.writers import FORMATS, Cell, Table

ANSWER_HEADERS = [
    "Condition", "Condition version", "Parsed with version", "Model", "Model id", "Item", "Repetition", "Status", "Reason", "Label",
    "Categories", "Rationale", "Raw answer", "Model returned", "System fingerprint", "Prompt tokens",
    "Completion tokens", "Latency (ms)", "Finished at", "Request",
]


def probe_filename(probe: Probe, what: str, fmt: str) -> str:
    """The project's one download scheme (projects.filenames), naming the probe and the table."""
    return download_filename(probe.project, f"{probe.name}-{what}", FORMATS[fmt][0])


def answers_table(probe: Probe) -> Table:
    """Every answer: item text, ground truth and attributes, condition, model, repetition, parsed fields, provenance."""
    attribute_keys = _attribute_keys(probe)
    headers = ["Item text", *[f"Ground truth: {c}" for c in probe.label_columns], *attribute_keys, *ANSWER_HEADERS]
    count = Answer.objects.filter(item__probe=probe).count()
    return Table(caption=f"Answers of the probe “{probe.name}”", headers=headers, rows=_answer_rows(probe, attribute_keys),
                 row_count=count, label="tab:probe-answers")


def _attribute_keys(probe: Probe) -> list[str]:
    keys: dict[str, None] = {}
    for attributes in probe.items.values_list("attributes", flat=True):
        keys.update(dict.fromkeys(attributes))
    return list(keys)


def _answer_rows(probe: Probe, attribute_keys: list[str]) -> Iterator[Sequence[Cell]]:
    for a in Answer.objects.for_probe(probe).iterator(chunk_size=500):
        usage = a.provenance.get("usage") or {}
        yield [
            a.item.text, *[a.item.labels.get(c, "") for c in probe.label_columns],
            *[_cell(a.item.attributes.get(k)) for k in attribute_keys],
            a.condition.name, a.condition_version.number, a.parsed_with, a.participant.label,
            a.asked_model_id or a.participant.model_id, a.item.position,  # not asked yet: the model it will be
            a.repetition, a.get_status_display(), a.reason, a.label, "; ".join(a.categories), a.rationale, a.text,
            a.provenance.get("model_returned"), a.provenance.get("system_fingerprint"), usage.get("prompt_tokens"),
            usage.get("completion_tokens"), a.provenance.get("latency_ms"),
            a.finished_at.isoformat() if a.finished_at else None,
            json.dumps(a.provenance.get("request"), ensure_ascii=False) if a.provenance.get("request") else None,
        ]


def _cell(value: Any) -> Cell:
    if value is None or isinstance(value, str | int | float):
        return value
    return json.dumps(value, ensure_ascii=False)


def summary_table(probe: Probe, scores: Scores) -> Table:
    """Table 1 in long form (see probes.scoring.summary_rows)."""
    rows = summary_rows(scores)
    numeric = frozenset(i for i, h in enumerate(SUMMARY_HEADERS) if h not in {"Condition", "Model", "Subset", "Ground truth",
                                                                            "Predicted label", "Test"})
    return Table(caption=f"Scores of the probe “{probe.name}” by ground truth ({scores.truth_column})",
                 headers=SUMMARY_HEADERS, rows=rows, row_count=len(rows), numeric=numeric, label="tab:probe-summary",
                 notes=scores.notes())


def paper_table_download(probe: Probe, table: PaperTable, page: dict[str, Any]) -> Table:
    """Table 1 as the paper prints it (see probes.scoring.paper_table): a column group per condition over its subsets."""
    columns = len(table.headers)
    return Table(caption=table.caption, headers=table.headers, rows=table.rows, row_count=len(table.rows),
                 numeric=frozenset(range(1, columns)), widths=[2.0] + [1.0] * (columns - 1), label="tab:probe-table1",
                 notes=table.notes, column_groups=table.column_groups, **page)
