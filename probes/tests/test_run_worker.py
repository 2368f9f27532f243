"""End to end in a real Celery worker: two conditions run, the worker is killed and restarted mid-run,
no answer is lost or duplicated, Table 1 matches values computed by hand, and the rationales become
interviews that are coded and grouped by ground truth."""

from __future__ import annotations

import math
import os
import signal
from collections import Counter

import pytest

from coding.models import Coding
from coding.services import code_create, coding_apply
from conduct.tests.conftest import wait_until
from interviews.models import Interview, Segment
from probes import services
from probes.models import Answer, Probe
from probes.scoring import probe_scores
from probes.stats import wilson
from probes.tests import scripted
from reports.frequency import log_ratio

pytestmark = [pytest.mark.worker, pytest.mark.slow]


def test_a_probe_runs_in_the_worker_survives_a_restart_and_scores_by_hand(
    probe_with_items, conditions, live, fake_openai, start_worker, settings
):
    settings.OPENAI_API_KEY = "sk-deployment-test"
    probe = probe_with_items
    fake_openai.script("model-a", answer=scripted.answer, first_delay=0.4, model_id="model-a-2026-01")
    services.probe_configure(probe=probe, participants=[live("Model A", "model-a")], repetitions=1, concurrency=2)
    worker = start_worker()
    services.run_start(probe=probe)
    answers = Answer.objects.filter(item__probe=probe)

    # At most two answers are in flight at once (the probe's concurrency), even with four worker threads.
    def in_flight_then_some_done():
        busy = answers.filter(status__in=("queued", "running")).count()
        assert busy <= 2
        return answers.filter(status__in=Answer.FINISHED).count() >= 4

    wait_until(in_flight_then_some_done, message="four answers to finish")
    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait()
    assert answers.exclude(status__in=Answer.FINISHED).exists()  # killed mid-run

    start_worker()
    wait_until(lambda: Probe.objects.get(pk=probe.pk).run_state == Probe.RunState.FINISHED, timeout=30,
               message="the run to finish after the restart")

    # Every item × condition × model once, all finished; a request in flight at the kill may be asked twice.
    assert answers.count() == 16
    assert Counter(answers.values_list("status", flat=True)) == {"done": 15, "unparsed": 1}
    asked = Counter((r.body["messages"][0]["content"][:7], scripted.item_number(r.body)) for r in fake_openai.chat_requests())
    assert len(asked) == 16 and sum(asked.values()) <= 16 + 2

    done = answers.filter(status="done").first()
    assert done.provenance["model_returned"] == "model-a-2026-01"
    assert done.provenance["system_fingerprint"] == "fp_fake_0001"
    assert done.provenance["usage"]["total_tokens"] > 0 and done.provenance["latency_ms"] >= 400
    json_request = answers.get(condition__name="Control", item__position=1).provenance["request"]
    assert json_request["response_format"]["json_schema"]["strict"] is True
    unparsed = answers.get(status="unparsed")
    assert unparsed.item.position == 7 and "No “Gender:” line" in unparsed.reason
    assert unparsed.text == "I cannot tell the author's gender from this review."

    scores = probe_scores(probe, chosen=["Emotional Expression"])
    cells = {(c.condition, c.subset): c for c in scores.cells}

    control = cells[("Control", "all")]
    man, woman = control.groups  # groups in sorted order
    assert (man.group, man.n, man.predicted["woman"].count, woman.n, woman.predicted["woman"].count) == ("man", 4, 3, 4, 4)
    assert control.accuracy.value == pytest.approx(5 / 8)
    assert control.confusion == [[3, 1], [4, 0]]
    # Fisher's exact test on [[3, 1], [4, 0]]: both possible tables have probability 35/70, so p = 1.
    assert control.test.test == "Fisher's exact" and control.test.p_value == pytest.approx(1.0)
    # Wilson's interval for 3 of 4, written out: (p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n).
    z = 1.959963984540054
    centre = (0.75 + z * z / 8) / (1 + z * z / 4)
    half = z * (0.75 * 0.25 / 4 + z * z / 64) ** 0.5 / (1 + z * z / 4)
    assert man.predicted["woman"].interval == pytest.approx((centre - half, centre + half))
    assert wilson(3, 4) == pytest.approx((centre - half, centre + half))

    primed = cells[("Primed", "all")]
    assert primed.n == 7 and primed.unparsed == 1
    assert primed.confusion == [[1, 2], [3, 1]]
    assert primed.accuracy.value == pytest.approx(5 / 7)
    # Fisher on [[1, 2], [3, 1]]: P(x) = C(4,x)·C(3,3-x)/35 = 1, 12, 18, 4 (/35); tables ≤ 12/35 sum to 17/35.
    assert primed.test.p_value == pytest.approx(17 / 35)

    cites, cites_none = cells[("Primed", "cites")], cells[("Primed", "none")]
    assert (cites.n, cites.accuracy.value) == (3, pytest.approx(2 / 3))
    assert [(g.group, g.n, g.predicted["woman"].value) for g in cites.groups] == [("man", 1, 1.0), ("woman", 2, 1.0)]
    # The unparsed answer cites nothing we know of: it is counted in All only, in neither subset.
    assert (cites_none.n, cites_none.accuracy.value, cites_none.unparsed) == (4, pytest.approx(3 / 4), 0)
    assert scores.novel["Primed"] == [("Tone", 1)]
    assert scores.novel["Control"] == []

    # The primed rationales become interviews, are coded like any answer, and group by ground truth.
    owner = probe.created_by
    assert services.condition_to_interviews(condition=unparsed.condition, user=owner) == 7
    code = code_create(project=probe.project, actor=owner, name="Reads this way")
    derived = Interview.objects.filter(project=probe.project, source_format="probe")
    for interview in derived.filter(metadata__attributes__predicted="woman"):
        first = interview.segments.filter(speaker="participant").order_by("position").first()
        coding_apply(project_uuid=probe.project.uuid, interview_uuid=interview.uuid, user_id=owner.pk, code_id=code.pk,
                     segment_ids=[first.pk])
    codings = Coding.objects.filter(code=code)
    by_truth = {g: codings.filter(interview__metadata__attributes__gender=g).count() for g in ("woman", "man")}
    segments = {g: Segment.objects.filter(interview__in=derived, speaker="participant",
                                          interview__metadata__attributes__gender=g).count() for g in ("woman", "man")}
    # Predicted "woman": items 1-3 (women) and 5 (a man); two sentences per rationale; 4 women, 3 parsed men.
    assert by_truth == {"woman": 3, "man": 1} and segments == {"woman": 8, "man": 6}
    assert log_ratio(3, 8, 1, 6) == pytest.approx(math.log((3 / 8) / (1 / 6)))
