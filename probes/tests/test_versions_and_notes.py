"""Condition versions in runs and scores, and the notes every score download carries (repetitions, versions)."""

from __future__ import annotations

import csv
import io
import uuid

import docx
import openpyxl
from django.urls import reverse

from probes import services
from probes.models import Answer, Condition, Probe
from probes.scoring import probe_scores
from probes.tests.test_views import url


def edit_control(probe, owner) -> int:
    """Save an edit of Control (a new template): its version 2."""
    control = Condition.objects.get(probe=probe, name="Control")
    latest = control.versions.get()
    fields = {f: getattr(latest, f) for f in services.VERSION_FIELDS} | {"template": "Edited. Review: {text}"}
    return services.condition_save(probe=probe, condition=control, user=owner, name="Control", **fields).number


def summary(client, project, probe, fmt: str) -> bytes:
    response = client.get(reverse("reports:probe_summary", args=[project.uuid, probe.uuid, fmt]))
    assert response.status_code == 200
    return b"".join(response.streaming_content) if hasattr(response, "streaming_content") else response.content


def test_run_the_rest_asks_every_unfinished_answer_with_the_edited_version(answered, owner):
    control = Answer.objects.filter(condition__name="Control")
    pending = list(control.filter(item__position__lte=2).values_list("pk", flat=True))
    failed = list(control.filter(item__position=3).values_list("pk", flat=True))
    Answer.objects.filter(pk__in=pending).update(status=Answer.Status.PENDING, label="")
    Answer.objects.filter(pk__in=failed).update(status=Answer.Status.FAILED, label="")
    assert edit_control(answered, owner) == 2

    services.run_start(probe=answered)  # "Run the rest": pending answers are asked, failed ones stay
    version = dict(Answer.objects.values_list("pk", "condition_version__number"))
    assert {version[pk] for pk in pending} == {2}
    assert {version[pk] for pk in failed} == {1}
    assert set(control.filter(status=Answer.Status.DONE).values_list("condition_version__number", flat=True)) == {1}

    services.run_start(probe=answered, retry_failed=True)  # "Ask the failed again": the same rule
    assert set(Answer.objects.filter(pk__in=failed).values_list("condition_version__number", flat=True)) == {2}


def test_answers_of_two_versions_are_scored_separately_and_every_download_says_so(answered, owner, project, viewer,
                                                                                   client_for):
    edit_control(answered, owner)
    v2 = Condition.objects.get(probe=answered, name="Control").versions.get(number=2)
    Answer.objects.filter(condition__name="Control", participant__label="Model A", item__position__in=(1, 5)).update(
        condition_version=v2)

    cells = {(c.condition, c.version, c.model): c for c in probe_scores(answered).cells}
    assert (cells[("Control", 1, "Model A")].n, cells[("Control", 2, "Model A")].n) == (6, 2)
    assert cells[("Control", 1, "Model B")].n == 8 and ("Control", 2, "Model B") not in cells
    note = "The answers of “Control” were asked with v1 and v2 of its prompt"

    client = client_for(viewer)
    page = client.get(url("results", project, answered)).content.decode()
    assert "Control v2 · Model A · All answers" in page and note in page
    rows = list(csv.reader(io.StringIO(summary(client, project, answered, "csv").decode("utf-8-sig"))))
    assert rows[0][:3] == ["Condition", "Version", "Model"]
    assert {(r[1], r[5]) for r in rows[1:] if r[:1] == ["Control"] and r[2] == "Model A"} == {("1", "3"), ("2", "1")}
    assert rows[-1][0].startswith("Note: " + note)
    for fmt in ("md", "tex"):
        assert "were asked with v1 and v2 of its prompt" in summary(client, project, answered, fmt).decode()


def test_score_downloads_count_items_beside_n_and_warn_that_repetitions_are_not_independent(answered, project, viewer,
                                                                                            client_for):
    Probe.objects.filter(pk=answered.pk).update(repetitions=2)
    again = list(Answer.objects.all())
    for answer in again:
        answer.pk, answer.uuid, answer.repetition = None, uuid.uuid4(), 2
    Answer.objects.bulk_create(again)
    warning = "Repetitions of one item are not independent observations"

    client = client_for(viewer)
    rows = list(csv.reader(io.StringIO(summary(client, project, answered, "csv").decode("utf-8-sig"))))
    header = rows[0]
    n, items = header.index("N"), header.index("Items")
    assert items == n + 1
    body = [r for r in rows[1:] if len(r) == len(header)]
    assert {(r[n], r[items]) for r in body} == {("8", "4")}
    assert rows[-2] == [] and rows[-1][0].startswith("Note: Each item was asked 2 times") and warning in rows[-1][0]

    markdown = summary(client, project, answered, "md").decode()
    assert "| N | Items |" in markdown and "*Note.* Each item was asked 2 times" in markdown and warning in markdown
    latex = summary(client, project, answered, "tex").decode()
    assert r"\emph{Note.} Each item was asked 2 times" in latex and warning in latex
    document = docx.Document(io.BytesIO(summary(client, project, answered, "docx")))
    assert any(p.text.startswith("Note. Each item was asked 2 times") and warning in p.text for p in document.paragraphs)
    assert "Items" in [c.text for c in document.tables[0].rows[0].cells]
    book = openpyxl.load_workbook(io.BytesIO(summary(client, project, answered, "xlsx")))
    assert book.sheetnames == ["Table", "Notes"] and warning in book["Notes"]["A1"].value
    assert [c.value for c in book["Table"][1]][n:items + 1] == ["N", "Items"]
