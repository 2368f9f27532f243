"""Probe tables for download: every answer with its provenance, and the Table-1 summary."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from django.db.models.functions import JSONObject

from interviews.models import Participant
from probes.models import Answer, Condition, ConditionVersion, Probe, asked_model_id
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


# The provenance keys the table shows: the whole provenance (raw response, attempts) is most of an answer's bytes.
_PROVENANCE_KEYS = ("model_requested", "request", "model_returned", "system_fingerprint", "usage", "latency_ms")


def _answer_rows(probe: Probe, attribute_keys: list[str]) -> Iterator[Sequence[Cell]]:
    """Each answer as plain values, with its item, condition, version and model looked up from one read of each:
    at 12,000 answers, building five model instances and decoding every provenance per answer took most of the time."""
    items = {pk: (text, labels, attributes, position) for pk, text, labels, attributes, position
             in probe.items.values_list("pk", "text", "labels", "attributes", "position")}
    conditions = dict(Condition.objects.filter(probe=probe).values_list("pk", "name"))
    versions = dict(ConditionVersion.objects.filter(condition__probe=probe).values_list("pk", "number"))
    answers = Answer.objects.for_probe(probe)
    participants = {pk: (label, model_id) for pk, label, model_id in Participant.objects.filter(
        pk__in=answers.values("participant_id")).values_list("pk", "label", "model_id")}
    status_names = dict(Answer.Status.choices)
    provenance = JSONObject(**{key: f"provenance__{key}" for key in _PROVENANCE_KEYS})
    rows = answers.values_list("item_id", "condition_id", "condition_version_id", "participant_id", "repetition", "status",
                               "reason", "label", "categories", "rationale", "text", "parsed_with_version", "finished_at",
                               provenance)
    for (item_id, condition_id, version_id, participant_id, repetition, status, reason, label, categories, rationale,
         text, parsed_with_version, finished_at, shown) in rows.iterator(chunk_size=2000):
        item_text, labels, attributes, position = items[item_id]
        participant_label, participant_model = participants[participant_id]
        usage = shown.get("usage") or {}
        yield [
            item_text, *[labels.get(c, "") for c in probe.label_columns], *[_cell(attributes.get(k)) for k in attribute_keys],
            # Parsed with: as Answer.parsed_with.
            conditions[condition_id], versions[version_id], parsed_with_version or versions[version_id], participant_label,
            asked_model_id(shown) or participant_model, position,  # not asked yet: the model it will be
            repetition, status_names[status], reason, label, "; ".join(categories), rationale, text,
            shown.get("model_returned"), shown.get("system_fingerprint"), usage.get("prompt_tokens"),
            usage.get("completion_tokens"), shown.get("latency_ms"),
            finished_at.isoformat() if finished_at else None,
            json.dumps(shown["request"], ensure_ascii=False) if shown.get("request") else None,
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
