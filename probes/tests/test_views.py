"""Probe pages: who may see and change what, bounded queries, and the forms' messages."""

from __future__ import annotations

import html
import io

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from interviews.models import Interview, Segment
from probes.models import Answer, Condition, Item, Probe
from probes.tests.conftest import sheet


def url(name, project, probe=None, **kwargs):
    args = {"project_uuid": project.uuid} | ({"probe_uuid": probe.uuid} if probe else {}) | kwargs
    return reverse(f"probes:{name}", kwargs=args)


CONDITION_POST = {
    "name": "Plain", "template": "Review: {text}", "system_prompt": "", "output_format": "json_schema",
    "label_key": "label", "categories_key": "categories", "rationale_key": "rationale", "labels": "woman, man",
    "categories": "Declaration, Other", "json_schema": "",
}


def writes(project, probe):
    """Every POST endpoint of a probe, with data that works for a member."""
    condition = probe.conditions.first()
    return [
        (url("list", project), {"name": "Another probe"}),
        (url("setup", project, probe), {"repetitions": "1", "concurrency": "2"}),
        (url("condition_create", project, probe), CONDITION_POST),
        (url("condition_edit", project, probe, condition_uuid=condition.uuid), CONDITION_POST | {"name": condition.name}),
        (url("reparse", project, probe, condition_uuid=condition.uuid), {}),
        (url("to_interviews", project, probe, condition_uuid=condition.uuid), {}),
        (url("cancel", project, probe), {}),
        (url("dry_run", project, probe), {}),
        (url("run", project, probe), {}),
        (url("edit", project, probe), {"name": "Renamed", "description": ""}),
        (url("condition_delete", project, probe, condition_uuid=condition.uuid), {}),
        (url("delete", project, probe), {}),
    ]


def test_outsiders_get_404_on_every_page_and_action(answered, project, outsider, client_for):
    client = client_for(outsider)
    for page in ("list",):
        assert client.get(url(page, project)).status_code == 404
    for page in ("detail", "results"):
        assert client.get(url(page, project, answered)).status_code == 404
    assert client.get(url("detail", project, answered), HTTP_HX_REQUEST="true").status_code == 404
    for target, data in writes(project, answered):
        assert client.post(target, data).status_code == 404, target
    assert client.get(reverse("reports:probe_answers", args=[project.uuid, answered.uuid, "csv"])).status_code == 404


def test_viewers_see_the_pages_but_every_write_is_403(answered, project, viewer, client_for):
    client = client_for(viewer)
    assert client.get(url("list", project)).status_code == 200
    for page in ("detail", "results"):
        assert client.get(url(page, project, answered)).status_code == 200
    progress = client.get(url("detail", project, answered), HTTP_HX_REQUEST="true").content.decode()
    assert progress.lstrip().startswith('<div id="run-progress"') and "32 done" in progress
    for target, data in writes(project, answered):
        assert client.post(target, data).status_code == 403, target
    assert Probe.objects.live().filter(name=answered.name).count() == 1 and Interview.objects.count() == 0
    assert Condition.objects.filter(probe=answered).count() == 2


def test_an_analyst_creates_a_probe_and_imports_items(project, analyst, client_for):
    client = client_for(analyst)
    response = client.post(url("list", project), {"name": "Reviews", "description": ""})
    probe = Probe.objects.get(name="Reviews")
    assert response.status_code == 302 and response["Location"] == url("detail", project, probe)
    upload = sheet()
    upload.name = "reviews.csv"
    data = {"file": upload, "text_column": "text", "label_columns": "gender", "min_words": "14",
            "exclude_words": "wife, husband", "per_label": "2", "seed": "42"}
    assert client.post(url("items_import", project, probe), data).status_code == 302
    probe.refresh_from_db()
    assert Item.objects.filter(probe=probe).count() == 4
    assert probe.import_report["sample"] == {"per_label": 2, "seed": 42, "column": "gender"}
    assert probe.import_report["filters"] == {"min_words": 14, "exclude_words": ["wife", "husband"]}
    page = client.get(url("detail", project, probe)).content.decode()
    assert "4 items from" in page and "seed <code>42</code>" in page
    assert "excluded words: wife, husband (0 rows dropped)" in page
    upload = sheet()
    upload.name = "reviews.csv"
    data = {"file": upload, "text_column": "text", "label_columns": "gender", "exclude_words": "parking, wrong"}
    assert client.post(url("items_import", project, probe), data).status_code == 302
    assert "excluded words: parking, wrong (3 rows dropped)" in client.get(url("detail", project, probe)).content.decode()


def test_a_bad_sheet_names_row_and_column_and_imports_nothing(probe, project, analyst, client_for):
    upload = io.BytesIO(b"text,gender\nFine review,woman\n,man\n")
    upload.name = "reviews.csv"
    data = {"file": upload, "text_column": "text", "label_columns": "gender"}
    response = client_for(analyst).post(url("items_import", project, probe), data)
    assert response.status_code == 400
    assert "reviews.csv, row 3, column “text”: the text is empty." in response.content.decode()
    assert not Item.objects.exists()


def test_a_condition_edit_is_a_new_version_and_bad_placeholders_are_named(answered, project, analyst, client_for):
    client = client_for(analyst)
    condition = Condition.objects.get(probe=answered, name="Control")
    edit = url("condition_edit", project, answered, condition_uuid=condition.uuid)
    response = client.post(edit, CONDITION_POST | {"name": "Control", "template": "Review: {text} by {author}"})
    assert response.status_code == 400
    assert "{author} is not a field of the items; they have: gender, stars, text." in response.content.decode()
    assert client.post(edit, CONDITION_POST | {"name": "Control"}).status_code == 302
    assert list(condition.versions.values_list("number", flat=True)) == [2, 1]
    bad_json = client.post(url("condition_create", project, answered), CONDITION_POST | {"json_schema": "{oops"})
    assert "Not valid JSON" in bad_json.content.decode()


def test_a_label_longer_than_an_answer_can_hold_is_refused_naming_it(probe, project, analyst, client_for):
    """An answer stores its label in 200 characters: a longer allowed label would fail every answer that gives it,
    in the worker, leaving the answer claimed and the run stalled."""
    long_label = "a" * 201
    response = client_for(analyst).post(url("condition_create", project, probe),
                                        CONDITION_POST | {"labels": f"woman, {long_label}"})
    assert response.status_code == 400
    assert response.context["form"].errors["labels"] == [
        f"“{long_label[:40]}…” is 201 characters long; a label may have at most 200."]
    assert not Condition.objects.filter(probe=probe).exists()


def test_the_rationales_become_interviews_with_attributes_and_segments(answered, project, analyst, client_for):
    condition = Condition.objects.get(probe=answered, name="Primed")
    target = url("to_interviews", project, answered, condition_uuid=condition.uuid)
    assert client_for(analyst).post(target).status_code == 302
    interviews = Interview.objects.filter(project=project)
    assert interviews.count() == 16  # 8 items × 2 models
    one = interviews.get(title="Gender from reviews · Primed · item 3 · #1", participant__label="Model A")
    assert one.metadata["attributes"] == {"stars": "1", "gender": "woman", "condition": "Primed", "predicted": "woman",
                                          "categories": "Declaration"}
    answer_turn = one.turns.get(position=1)
    assert answer_turn.text == "The author writes about the visit. It reads like item 3."
    assert list(Segment.objects.filter(turn=answer_turn).values_list("text", flat=True)) == [
        "The author writes about the visit.", "It reads like item 3."]
    # A second click makes no duplicates.
    client_for(analyst).post(target)
    assert interviews.count() == 16


def test_the_answers_and_scores_download(answered, project, viewer, client_for):
    client = client_for(viewer)
    response = client.get(reverse("reports:probe_answers", args=[project.uuid, answered.uuid, "csv"]))
    body = b"".join(response.streaming_content).decode("utf-8-sig")
    header, *rows = body.strip().splitlines()
    assert header.startswith("Item text,Ground truth: gender,stars,Condition,Condition version,Parsed with version,Model")
    assert len(rows) == Answer.objects.count() == 32
    assert response["Content-Disposition"].startswith('attachment; filename="Chatbots-and-identity-Gender-from-reviews-answers-')
    xlsx = client.get(reverse("reports:probe_answers", args=[project.uuid, answered.uuid, "xlsx"]))
    assert xlsx.status_code == 200 and b"".join(xlsx.streaming_content)[:2] == b"PK"
    scores = client.get(reverse("reports:probe_summary", args=[project.uuid, answered.uuid, "csv"]) + "?cites=Declaration")
    text = b"".join(scores.streaming_content).decode("utf-8-sig")
    assert "Control,1,Model A,All answers,man,4,4,man,4,1.0," in text
    assert "Cites the chosen categories" in text
    assert client.get(reverse("reports:probe_summary", args=[project.uuid, answered.uuid, "pdf"])).status_code == 404


def count_queries(client, target, **headers) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert client.get(target, **headers).status_code == 200
    return len(queries)


@pytest.mark.parametrize("page", ["list", "detail", "results", "progress"])
def test_pages_cost_the_same_number_of_queries_with_more_rows(answered, project, owner, client_for, page, conditions):
    client = client_for(owner)
    target = url(page, project) if page == "list" else url("detail" if page == "progress" else page, project, answered)
    headers = {"HTTP_HX_REQUEST": "true"} if page == "progress" else {}
    small = count_queries(client, target, **headers)
    # More items, answers and probes: the page's queries stay the same.
    from probes.services import probe_create

    probe_create(project=project, user=owner, name="Second probe")
    item = Item.objects.create(probe=answered, position=99, text="item-9 Another rude visit.", labels={"gender": "man"})
    for answer in Answer.objects.filter(item__position=1):
        answer.pk, answer.uuid, answer.item = None, None, item
        import uuid

        answer.uuid = uuid.uuid4()
        answer.save()
    assert count_queries(client, target, **headers) == small


def test_an_item_file_over_the_upload_limit_is_refused(probe, project, analyst, client_for, settings):
    settings.RTA_MAX_UPLOAD_BYTES = 100
    upload = sheet()
    upload.name = "reviews.csv"
    response = client_for(analyst).post(url("items_import", project, probe),
                                        {"file": upload, "text_column": "text", "label_columns": "gender"})
    assert response.status_code == 400
    assert ("reviews.csv: larger than 100 bytes, the most an item file may be here (and at most 50,000 rows). "
            "Split it into several probes or drop columns.") in html.unescape(response.content.decode())
    assert not Item.objects.exists()


def test_an_answer_page_shows_item_parse_and_provenance_in_bounded_queries(answered, project, viewer, client_for):
    answer = Answer.objects.filter(condition__name="Control").order_by("pk").first()
    Answer.objects.filter(pk=answer.pk).update(provenance={
        "model_requested": "model a", "model_returned": "model-a-2026", "system_fingerprint": "fp_1",
        "usage": {"prompt_tokens": 20, "completion_tokens": 7}, "latency_ms": 512, "attempts": [{"ok": True}],
        "request": {"model": "model a", "messages": [{"role": "user", "content": "Review: item-1"}]},
        "raw_response": {"id": "chatcmpl-1"},
    })
    target = url("answer", project, answered, answer_uuid=answer.uuid)
    client = client_for(viewer)
    with CaptureQueriesContext(connection) as queries:
        body = client.get(target).content.decode()
    # Session, user, membership with project, the answer with item, probe, condition, version and participant,
    # and the navigation's unread-mentions badge.
    assert len(queries) == 5
    assert "model-a-2026" in body and "fp_1" in body and "512 ms · 1 attempt" in body and "chatcmpl-1" in body
    assert "Ground truth: gender" in body
    other = Probe.objects.create(project=project, name="Other")
    assert client.get(url("answer", project, other, answer_uuid=answer.uuid)).status_code == 404


def test_the_condition_page_lists_versions_in_bounded_queries(answered, project, owner, client_for):
    from probes.services import VERSION_FIELDS, condition_save

    condition = Condition.objects.get(probe=answered, name="Control")
    target = url("condition_edit", project, answered, condition_uuid=condition.uuid)
    client = client_for(owner)
    few = count_queries(client, target)
    version = condition.versions.get()
    for n in range(3):
        fields = {f: getattr(version, f) for f in VERSION_FIELDS} | {"template": f"Review {n}: {{text}}"}
        condition_save(probe=answered, condition=condition, user=owner, name="Control", **fields)
    assert count_queries(client, target) == few
    page = client.get(target).content.decode()
    assert "v4" in page and "Answers asked with it" in page


def test_after_a_finished_run_a_new_condition_is_remaining_and_run_the_rest_asks_it(answered, project, analyst,
                                                                                      client_for):
    Probe.objects.filter(pk=answered.pk).update(run_state=Probe.RunState.FINISHED)
    client = client_for(analyst)
    progress = client.get(url("detail", project, answered), HTTP_HX_REQUEST="true").content.decode()
    assert "0 remaining" in progress and 'id="run-button"' not in progress
    assert client.post(url("condition_create", project, answered), CONDITION_POST).status_code == 302
    progress = client.get(url("detail", project, answered), HTTP_HX_REQUEST="true").content.decode()
    # 8 items × 2 models under the new condition.
    assert "32 done · 0 unparsed · 0 failed · 16 remaining" in progress
    assert "16 answers the probe now needs" in progress and ">Run the rest</button>" in progress
    response = client.post(url("run", project, answered), follow=True)
    assert "Run started: 16 answers to ask." in response.content.decode()
    assert Answer.objects.filter(condition__name="Plain", status=Answer.Status.PENDING).count() == 16


def test_resuming_says_how_many_answers_it_asks_not_only_the_new_ones(answered, project, analyst, client_for):
    Answer.objects.filter(pk__in=Answer.objects.order_by("pk").values("pk")[:3]).update(status=Answer.Status.PENDING)
    Answer.objects.filter(pk__in=Answer.objects.order_by("-pk").values("pk")[:2]).update(status=Answer.Status.FAILED)
    client = client_for(analyst)
    assert "Run started: 3 answers to ask." in client.post(url("run", project, answered), follow=True).content.decode()
    retried = client.post(url("run", project, answered), {"retry_failed": "1"}, follow=True).content.decode()
    assert "Run started: 5 answers to ask." in retried
    Answer.objects.update(status=Answer.Status.DONE)
    done = client.post(url("run", project, answered), follow=True).content.decode()
    assert "Nothing to ask: every answer the probe needs is finished." in done


def test_result_columns_follow_the_latest_labels_and_every_parsed_label(answered, owner, project, viewer, client_for):
    import json

    from probes.scoring import probe_scores
    from probes.services import VERSION_FIELDS, answers_reparse, condition_save

    control = Condition.objects.get(probe=answered, name="Control")
    for answer in Answer.objects.filter(condition=control).select_related("item", "participant"):
        said = "nonbinary" if answer.participant.label == "Model A" and answer.item.position in (1, 5) else answer.label
        answer.text = json.dumps({"gender": said, "codes_applied": ["Declaration"], "rationale": "r"})
        answer.status = Answer.Status.UNPARSED if said == "nonbinary" else Answer.Status.DONE
        answer.save(update_fields=["text", "status"])
    version = control.versions.get()
    fields = {f: getattr(version, f) for f in VERSION_FIELDS}
    schema = json.loads(json.dumps(fields["json_schema"]))
    schema["properties"]["gender"]["enum"] = ["woman", "man", "nonbinary"]
    condition_save(probe=answered, condition=control, user=owner, name="Control",
                   **fields | {"labels": ["woman", "man", "nonbinary"], "json_schema": schema})
    assert answers_reparse(condition=control) == {"done": 16, "unparsed": 0, "stopped": 0}

    def model_a() -> list:
        cells = probe_scores(answered).cells
        return next(c for c in cells if (c.condition, c.model) == ("Control", "Model A"))

    cell = model_a()
    assert cell.labels == ["woman", "man", "nonbinary"]
    assert [(g.group, g.n, g.predicted["nonbinary"].count) for g in cell.groups] == [("man", 4, 1), ("woman", 4, 1)]
    assert sum(g.n for g in cell.groups) == cell.n == 8 and cell.confusion == [[0, 3, 1], [3, 0, 1]]
    assert cell.accuracy.count == 6
    page = client_for(viewer).get(url("results", project, answered)).content.decode()
    assert "Predicted “nonbinary”" in page
    # A later version without the label: the answers parsed with it keep their column.
    condition_save(probe=answered, condition=control, user=owner, name="Control", **fields | {"template": "R: {text}"})
    assert model_a().labels == ["woman", "man", "nonbinary"] and model_a().n == 8


def test_the_summary_download_keeps_cells_without_parsed_answers(answered, project, viewer, client_for):
    Answer.objects.filter(condition__name="Primed", participant__label="Model B").update(
        status=Answer.Status.FAILED, label="")
    Answer.objects.filter(condition__name="Primed", participant__label="Model B", item__position=1).update(
        status=Answer.Status.UNPARSED)
    scores = client_for(viewer).get(reverse("reports:probe_summary", args=[project.uuid, answered.uuid, "csv"]))
    lines = b"".join(scores.streaming_content).decode("utf-8-sig").splitlines()
    assert [line for line in lines if line.startswith("Primed,1,Model B,")] == [  # each group at N = 0, with the counts
        f"Primed,1,Model B,All answers,{group},0,0,{label},0,,,,,,,,,,1,7" for group in ("man", "woman")
        for label in ("woman", "man")]
    assert sum(1 for line in lines if line.startswith("Primed,1,Model A,All answers,")) == 4  # 2 groups × 2 labels


def test_a_condition_whose_keys_clash_is_refused_with_a_form_error(answered, project, analyst, client_for):
    post = CONDITION_POST | {"name": "Same keys", "label_key": "gender", "categories_key": "Gender",
                             "rationale_key": "gender"}
    response = client_for(analyst).post(url("condition_create", project, answered), post)
    assert response.status_code == 400
    assert "The label, categories and rationale keys must differ: “Gender” is the label key too." in response.content.decode()
    assert not Condition.objects.filter(name="Same keys").exists()


def test_an_items_file_naming_a_column_twice_is_refused_and_imports_nothing(probe, project, analyst, client_for):
    upload = io.BytesIO(b"id,text,gender,gender\n1,Rude.,woman,man\n")
    upload.name = "reviews.csv"
    data = {"file": upload, "text_column": "text", "label_columns": "gender"}
    response = client_for(analyst).post(url("items_import", project, probe), data)
    assert response.status_code == 400
    assert "reviews.csv, row 1: the column “gender” appears twice (columns C and D); rename one." in response.content.decode()
    assert not Item.objects.exists()


def test_an_answer_keeps_the_model_id_it_was_asked_with(answered):
    answer = Answer.objects.select_related("participant").order_by("pk").first()
    assert answer.asked_model_id == ""  # never sent: nothing recorded
    answer.provenance = {"model_requested": "clf-lines", "request": {"model": "clf-lines"}}
    answer.participant.model_id = "clf-lines-v2"
    assert answer.asked_model_id == "clf-lines"
    answer.provenance = {"request": {"model": "clf-old"}}  # provenance written before model_requested was recorded
    assert answer.asked_model_id == "clf-old"


def test_the_answers_download_shows_the_model_id_each_answer_was_asked_with(answered, project, viewer, client_for):
    import csv

    from interviews.models import Participant

    Answer.objects.filter(participant__label="Model A").update(provenance={"model_requested": "model-a-v1"})
    Participant.objects.filter(label="Model A").update(model_id="model-a-v2")
    response = client_for(viewer).get(reverse("reports:probe_answers", args=[project.uuid, answered.uuid, "csv"]))
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode("utf-8-sig"))))
    assert {r["Model id"] for r in rows if r["Model"] == "Model A"} == {"model-a-v1"}


def test_the_answers_download_writes_each_answers_item_condition_model_and_provenance(answered, project, viewer,
                                                                                       client_for):
    import csv
    import datetime as dt

    answer = Answer.objects.select_related("item", "condition").get(condition__name="Control", participant__label="Model B",
                                                                     item__position=2)
    Answer.objects.filter(pk=answer.pk).update(
        repetition=1, status=Answer.Status.UNPARSED, reason="No label in the answer.", label="", categories=["A", "B"],
        rationale="", text='{"guess": "unsure"}', parsed_with_version=7,
        finished_at=dt.datetime(2026, 11, 28, 9, 30, tzinfo=dt.UTC),
        provenance={"model_requested": "model-b-2026", "model_returned": "model-b-2026-11", "system_fingerprint": "fp_9",
                    "usage": {"prompt_tokens": 31, "completion_tokens": 12}, "latency_ms": 845,
                    "request": {"model": "model-b-2026", "messages": [{"role": "user", "content": "Gender? “é”"}]},
                    "raw_response": {"choices": []}, "attempts": [{"status": 200}]})
    target = reverse("reports:probe_answers", args=[project.uuid, answered.uuid, "csv"])
    client = client_for(viewer)
    with CaptureQueriesContext(connection) as queries:
        body = b"".join(client.get(target).streaming_content).decode("utf-8-sig")
    rows = list(csv.DictReader(io.StringIO(body)))
    row = next(r for r in rows if (r["Condition"], r["Model"], r["Item"]) == ("Control", "Model B", "2"))
    assert row == {
        "Item text": answer.item.text, "Ground truth: gender": answer.item.labels["gender"],
        "stars": str(answer.item.attributes["stars"]), "Condition": "Control", "Condition version": "1",
        "Parsed with version": "7", "Model": "Model B", "Model id": "model-b-2026", "Item": "2", "Repetition": "1",
        "Status": "Unparsed", "Reason": "No label in the answer.", "Label": "", "Categories": "A; B", "Rationale": "",
        "Raw answer": '{"guess": "unsure"}', "Model returned": "model-b-2026-11", "System fingerprint": "fp_9",
        "Prompt tokens": "31", "Completion tokens": "12", "Latency (ms)": "845",
        "Finished at": "2026-11-28T09:30:00+00:00",
        "Request": '{"model": "model-b-2026", "messages": [{"role": "user", "content": "Gender? “é”"}]}',
    }
    other = next(r for r in rows if (r["Condition"], r["Model"], r["Item"]) == ("Control", "Model A", "2"))
    assert (other["Model id"], other["Parsed with version"], other["Prompt tokens"], other["Request"]) == ("model a", "1", "20", "")
    # Ordered as the results page lists them, and read in a fixed number of queries however many answers there are.
    assert [(r["Condition"], r["Model"], int(r["Item"])) for r in rows] == sorted(
        (r["Condition"], r["Model"], int(r["Item"])) for r in rows)
    Answer.objects.filter(item__position__gt=4).delete()
    with CaptureQueriesContext(connection) as fewer:
        b"".join(client.get(target).streaming_content)
    assert len(fewer) == len(queries)


def test_results_say_repetitions_are_not_independent_observations(answered, project, viewer, client_for):
    page = client_for(viewer).get(url("results", project, answered)).content.decode()
    assert 'id="repetitions-note"' not in page  # asked once: every N is items
    Probe.objects.filter(pk=answered.pk).update(repetitions=3)
    page = client_for(viewer).get(url("results", project, answered)).content.decode()
    assert "Each item was asked 3 times per condition and model" in page and "not independent observations" in page


def test_unparsed_and_failed_answers_are_in_neither_subset_only_in_all(answered):
    from probes.scoring import probe_scores

    Answer.objects.filter(condition__name="Control", participant__label="Model A", item__position__lte=3).update(
        status=Answer.Status.UNPARSED, label="", categories=[])
    cells = {(c.condition, c.model, c.subset): c for c in probe_scores(answered, chosen=["Declaration"]).cells}
    everything = cells[("Control", "Model A", "all")]
    assert everything.unparsed == 3
    assert cells[("Control", "Model A", "cites")].unparsed == cells[("Control", "Model A", "none")].unparsed == 0
    assert cells[("Control", "Model A", "cites")].n + cells[("Control", "Model A", "none")].n == everything.n


@pytest.mark.parametrize("state", [Probe.RunState.FINISHED, Probe.RunState.IDLE])
def test_cancelling_a_probe_that_is_not_running_says_so(client_for, owner, viewer, outsider, probe, state):
    # The button goes with the polled progress; a click as the run ended (or from a stale tab) still arrives.
    Probe.objects.filter(pk=probe.pk).update(run_state=state)
    url = reverse("probes:cancel", args=[probe.project.uuid, probe.uuid])
    assert client_for(outsider).post(url).status_code == 404
    assert client_for(viewer).post(url).status_code == 403
    page = client_for(owner).post(url, follow=True).content.decode()
    assert "This probe was not running: there was nothing to cancel." in page and "Run cancelled" not in page
    assert Probe.objects.get(pk=probe.pk).run_state == state
