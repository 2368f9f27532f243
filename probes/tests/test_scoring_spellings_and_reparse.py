"""Ground truth spelled unlike the labels, re-parsing a pipeline that stopped early, and a cancel after the end."""

from __future__ import annotations

import csv
import html
import io

from django.urls import reverse

from probes import services
from probes.items import ItemRow, balanced_sample
from probes.models import Answer, Item, Probe
from probes.scoring import probe_scores
from probes.tests.test_views import url


def test_ground_truth_in_another_case_is_one_group_named_as_the_label(answered):
    for item in Item.objects.filter(probe=answered):
        if item.position <= 2:  # two of the four women's reviews say "Woman", one says " WOMAN "
            item.labels["gender"] = "Woman" if item.position == 1 else " WOMAN "
            item.save(update_fields=["labels"])
    scores = probe_scores(answered)
    cell = scores.cells[0]
    assert [(g.group, g.n) for g in cell.groups] == [("man", 4), ("woman", 4)]
    assert cell.accuracy.value == 1.0 and scores.unmatched_truths == []


def test_ground_truth_matching_no_label_is_said_on_the_results_page(answered, project, viewer, client_for):
    for item in Item.objects.filter(probe=answered):
        item.labels["gender"] = {"woman": "F", "man": "M"}[item.labels["gender"]]
        item.save(update_fields=["labels"])
    scores = probe_scores(answered)
    assert scores.unmatched_truths == ["F", "M"] and scores.cells[0].accuracy.value == 0.0
    page = html.unescape(client_for(viewer).get(url("results", project, answered)).content.decode())
    assert ("Ground-truth values “F”, “M” match none of the conditions' labels, so accuracy counts every answer about "
            "them as wrong.") in page


def test_sampling_per_label_folds_case_and_draws_as_before_without_mixed_spellings():
    rows = [ItemRow(line=i, text=f"t{i}", labels={"g": label}, attributes={})
            for i, label in enumerate(["Woman", "woman", "man", "man", "Woman", "man"], start=2)]
    sample = balanced_sample(rows, column="g", per_label=3, seed=7)
    assert sorted(r.labels["g"].lower() for r in sample) == ["man"] * 3 + ["woman"] * 3
    plain = [ItemRow(line=i, text=f"t{i}", labels={"g": label}, attributes={})
             for i, label in enumerate(["woman", "man"] * 5, start=2)]
    # The draw for a file without mixed spellings, as it was before case folding (pinned with seed 42).
    assert [r.line for r in balanced_sample(plain, column="g", per_label=2, seed=42)] == \
        [r.line for r in _draw_before(plain, per_label=2, seed=42)]


def _draw_before(rows, *, per_label, seed):
    import random
    from collections import defaultdict

    groups = defaultdict(list)
    for row in rows:
        groups[row.labels["g"]].append(row)
    rng = random.Random(seed)
    return sorted((row for label in sorted(groups) for row in rng.sample(groups[label], per_label)), key=lambda r: r.line)


def test_reparsing_an_answer_whose_pipeline_stopped_early_marks_it_failed_not_done(answered, owner, project, analyst,
                                                                                    client_for):
    control = answered.conditions.get(name="Control")
    first = control.versions.get()
    version = services.condition_save(
        probe=answered, condition=control, user=owner, name="Control", template=first.template,
        system_prompt=first.system_prompt, output_format="json_schema", json_schema={}, label_key="gender",
        categories_key="codes_applied", rationale_key="rationale", labels=["woman", "man", "unsure"],
        categories=first.categories, pipeline=[{"name": "optimiser", "template": "Improve: {previous}"}])
    stopped = Answer.objects.filter(condition=control).order_by("pk").first()
    Answer.objects.filter(pk=stopped.pk).update(
        condition_version=version, status=Answer.Status.UNPARSED, label="",
        text='{"gender": "unsure", "codes_applied": [], "rationale": "hard to say"}',
        provenance={"pipeline": [{"agent": "assistant"}]})
    response = client_for(analyst).post(url("reparse", project, answered, condition_uuid=control.uuid), follow=True)
    assert "1 from a pipeline that stopped early marked failed, to be asked again" in html.unescape(
        response.content.decode())
    stopped.refresh_from_db()
    assert (stopped.status, stopped.label, stopped.parsed_with_version) == (Answer.Status.FAILED, "", 2)
    others = Answer.objects.filter(condition=control).exclude(pk=stopped.pk)
    # The fixture's answers say "…": parsed again, they stay unparsed, never failed; each says which version read it.
    assert {a.status for a in others} == {Answer.Status.UNPARSED} and {a.parsed_with for a in others} == {2}
    # Asked again, it is asked with the condition as it is now.
    services.run_start(probe=answered, retry_failed=True)
    stopped.refresh_from_db()
    assert (stopped.status, stopped.condition_version_id, stopped.parsed_with_version) == (
        Answer.Status.PENDING, version.pk, None)


def test_the_answers_download_says_which_version_parsed_each_answer(answered, owner, project, viewer, client_for):
    primed = answered.conditions.get(name="Primed")
    services.answers_reparse(condition=primed)
    body = b"".join(client_for(viewer).get(reverse("reports:probe_answers", args=[project.uuid, answered.uuid, "csv"]))
                    .streaming_content).decode("utf-8-sig")
    rows = list(csv.DictReader(io.StringIO(body)))
    assert {(r["Condition"], r["Condition version"], r["Parsed with version"]) for r in rows} == {
        ("Control", "1", "1"), ("Primed", "1", "1")}


def test_cancelling_a_finished_probe_leaves_it_finished(answered, project, analyst, client_for):
    Probe.objects.filter(pk=answered.pk).update(run_state=Probe.RunState.FINISHED)
    client_for(analyst).post(url("cancel", project, answered))
    answered.refresh_from_db()
    assert answered.run_state == Probe.RunState.FINISHED


def test_the_results_page_offers_the_summary_as_markdown(answered, project, viewer, client_for):
    page = client_for(viewer).get(url("results", project, answered)).content.decode()
    assert reverse("reports:probe_summary", args=[project.uuid, answered.uuid, "md"]) in page
