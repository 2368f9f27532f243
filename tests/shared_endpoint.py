"""Two probes and an AI second-reader run asking one live endpoint at the same time, for the tests that
run them in real Celery workers (tests/test_endpoint_in_workers.py).

The endpoint answers both kinds of request: the reader's coder proposes the first code for every third
sentence and the critic keeps every proposal, so the suggestions a run must end with are known in advance;
probe items are answered in the probe condition's JSON schema.
"""

from __future__ import annotations

import io
import json
import re
from dataclasses import dataclass

from coding import reader
from coding.models import SuggestionRun
from coding.services import code_create
from interviews.models import Interview, Participant, Segment, Speaker, Turn
from interviews.segment_store import segments_for_turns
from probes import services as probe_services
from probes.items import ItemFilters
from probes.models import Probe

SCHEMA = {
    "type": "object",
    "properties": {"label": {"type": "string", "enum": ["yes", "no"]}, "rationale": {"type": "string"}},
    "required": ["label", "rationale"],
    "additionalProperties": False,
}


def answer(body: dict) -> str:
    """The answer for any request of the world: reader coder, reader critic or probe item."""
    name = ((body.get("response_format") or {}).get("json_schema") or {}).get("name")
    user = body["messages"][-1]["content"]
    if name == "code_proposals":
        code = json.loads(user.split("Codebook (JSON):\n", 1)[1].split("\n\n", 1)[0])[0]["id"]
        ids = [int(i) for i in re.findall(r"^\[(\d+)\]", user, re.M)]
        proposals = [{"segment_id": i, "code_id": code, "rationale": "fits", "evidence": "x"} for i in ids if i % 3 == 0]
        return json.dumps({"proposals": proposals, "new_code_ideas": []})
    if name == "proposal_verdicts":
        listed = json.loads(user.split("Proposals (JSON):\n", 1)[1])
        return json.dumps({"verdicts": [{"proposal": p["proposal"], "segment_id": p["segment_id"], "code_id": p["code_id"],
                                         "verdict": "keep", "new_code_id": None, "reason": "Fits."} for p in listed]})
    return json.dumps({"label": "yes", "rationale": "Short."})


@dataclass
class World:
    probes: list[Probe]
    run: SuggestionRun
    code_id: int

    def expected_suggestions(self) -> set[tuple[int, int]]:
        ids = Segment.objects.filter(interview__in=self.run.interviews.all(), speaker=Speaker.PARTICIPANT)
        return {(pk, self.code_id) for pk in ids.values_list("pk", flat=True) if pk % 3 == 0}


def probe_on(project, user, endpoint: Participant, *, name: str, items: int, concurrency: int) -> Probe:
    probe = probe_services.probe_create(project=project, user=user, name=name)
    sheet = "text,label\n" + "".join(f"{name} item {i} says something.,{'yes' if i % 2 else 'no'}\n" for i in range(items))
    probe_services.items_import(probe=probe, spec=probe_services.ItemImport(
        "items.csv", io.BytesIO(sheet.encode()), "text", ["label"], ItemFilters()))
    probe_services.probe_configure(probe=probe, participants=[endpoint], repetitions=1, concurrency=concurrency)
    probe_services.condition_save(probe=probe, condition=None, user=user, name="Only", template="Item: {text}",
                                  system_prompt="Answer yes or no.", output_format="json_schema", json_schema=SCHEMA,
                                  label_key="label", categories_key="", rationale_key="rationale",
                                  labels=["yes", "no"], categories=[])
    return probe


def interview_with(project, sentences: int) -> Interview:
    """An interview whose participant says `sentences` sentences, twenty per answer."""
    participant = Participant.objects.create(project=project, label="Interviewed model")
    interview = Interview.objects.create(project=project, participant=participant, title="Long")
    turns = []
    for t in range(sentences // 20):
        turns.append(Turn(interview=interview, position=2 * t, speaker=Speaker.INTERVIEWER, text=f"Question {t}?"))
        turns.append(Turn(interview=interview, position=2 * t + 1, speaker=Speaker.PARTICIPANT,
                          text=" ".join(f"Sentence {t}-{i} says something about fairness." for i in range(20))))
    Segment.objects.bulk_create(segments_for_turns(interview, Turn.objects.bulk_create(turns)))
    return interview


def start_world(project, user, endpoint: Participant, *, probes: int, items: int, probe_concurrency: int,
                sentences: int) -> World:
    """Start `probes` probe runs and one reader run (with critic) on `endpoint`, all in the worker."""
    code = code_create(project=project, actor=user, name="Fairness", definition="What fairness means to them")
    made = [probe_on(project, user, endpoint, name=f"Probe {n}", items=items, concurrency=probe_concurrency)
            for n in range(probes)]
    reader.reader_settings_save(project=project, user=user, enabled=True, endpoint=endpoint, local_only=False)
    interview = interview_with(project, sentences)
    for probe in made:
        probe_services.run_start(probe=probe)
    run = reader.run_start(project=project, user=user, interviews=[interview])
    return World(made, run, code.pk)


def finished(world: World) -> bool:
    probes_done = all(p.run_state == Probe.RunState.FINISHED for p in Probe.objects.filter(pk__in=[p.pk for p in world.probes]))
    return probes_done and SuggestionRun.objects.get(pk=world.run.pk).status == SuggestionRun.Status.DONE
