"""A condition as a pipeline of agents (assistant → analysis → optimisation), each with a strict JSON schema."""

from __future__ import annotations

import json

import pytest
from django.core.exceptions import ValidationError

from probes import services
from probes.models import Answer

SCHEMA = {
    "type": "object",
    "properties": {"inclusive": {"type": "string", "enum": ["yes", "no"]}, "reasoning": {"type": "string"}},
    "required": ["inclusive", "reasoning"],
    "additionalProperties": False,
}
PIPELINE = [
    {"name": "analysis", "system_prompt": "You are the language analysis agent.",
     "template": "Sentence: {text}\nEarlier agents:\n{previous}\nIs their reasoning sound? Change the decision if not."},
    {"name": "optimisation", "system_prompt": "You are the optimisation agent.",
     "template": "Sentence: {text}\nEarlier agents:\n{previous}\nMake the final decision."},
]


def agent_answer(body) -> str:
    system = body["messages"][0]["content"]
    if "analysis" in system:
        return json.dumps({"inclusive": "no", "reasoning": "The assistant missed the gendered pronoun."})
    if "optimisation" in system:
        return json.dumps({"inclusive": "no", "reasoning": "Both analyses considered: not inclusive."})
    return json.dumps({"inclusive": "yes", "reasoning": "Looks fine."})


@pytest.fixture
def agents(probe_with_items, owner, live, fake_openai, settings):
    settings.PROBES_EAGER_IN_THREAD = False
    settings.OPENAI_API_KEY = "sk-deployment-test"
    services.probe_configure(probe=probe_with_items, participants=[live("Model A", "model-a")], repetitions=1, concurrency=2)
    common = {"template": "Sentence: {text}\nIs it inclusive of all genders?", "output_format": "json_schema",
              "json_schema": SCHEMA, "label_key": "inclusive", "categories_key": "", "rationale_key": "reasoning",
              "labels": ["yes", "no"], "categories": []}
    one = services.condition_save(probe=probe_with_items, condition=None, user=owner, name="1 agent",
                                  system_prompt="You are the assistant agent.", **common)
    three = services.condition_save(probe=probe_with_items, condition=None, user=owner, name="3 agents",
                                    system_prompt="You are the assistant agent.", pipeline=PIPELINE, **common)
    return one.condition, three.condition


def test_each_agent_sees_the_earlier_answers_and_the_last_decides(agents, probe_with_items, fake_openai,
                                                                  django_capture_on_commit_callbacks):
    fake_openai.script("model-a", answer=agent_answer)
    with django_capture_on_commit_callbacks(execute=True):
        services.run_start(probe=probe_with_items)
    one, three = agents
    assert set(Answer.objects.filter(condition=one).values_list("label", flat=True)) == {"yes"}
    assert set(Answer.objects.filter(condition=three).values_list("label", flat=True)) == {"no"}
    assert len(fake_openai.chat_requests()) == 8 + 8 * 3

    answer = Answer.objects.get(condition=three, item__position=1)
    steps = answer.provenance["pipeline"]
    assert [s["agent"] for s in steps] == ["assistant", "analysis", "optimisation"]
    assert all(s["request"]["response_format"]["json_schema"]["strict"] for s in steps)
    last_prompt = steps[2]["request"]["messages"][-1]["content"]
    assert '"agent": "assistant"' in last_prompt and '"agent": "analysis"' in last_prompt
    assert "The assistant missed the gendered pronoun." in last_prompt
    assert answer.rationale == "Both analyses considered: not inclusive."
    assert answer.provenance["usage"]["total_tokens"] == sum(s["usage"]["total_tokens"] for s in steps)


def test_an_agent_whose_answer_does_not_parse_stops_the_pipeline(agents, probe_with_items, fake_openai,
                                                                 django_capture_on_commit_callbacks):
    fake_openai.script("model-a", answer=lambda body: "I refuse." if "analysis" in body["messages"][0]["content"]
                       else agent_answer(body))
    with django_capture_on_commit_callbacks(execute=True):
        services.run_start(probe=probe_with_items)
    answer = Answer.objects.get(condition=agents[1], item__position=1)
    assert answer.status == "unparsed"
    assert answer.reason.startswith("The analysis agent's answer: Not JSON: the answer is plain text (“I refuse.”)")
    assert [s["agent"] for s in answer.provenance["pipeline"]] == ["assistant", "analysis"]


def test_a_pipeline_needs_json_and_well_formed_agents(probe_with_items, owner):
    fields = {"template": "{text}", "label_key": "Decision", "labels": ["yes", "no"], "json_schema": {}}
    with pytest.raises(ValidationError, match="choose the JSON schema output"):
        services.condition_save(probe=probe_with_items, condition=None, user=owner, name="Bad", output_format="labelled_lines",
                                pipeline=PIPELINE, **fields)
    with pytest.raises(ValidationError, match="Give a list of agents"):
        services.condition_save(probe=probe_with_items, condition=None, user=owner, name="Bad", output_format="json_schema",
                                pipeline=[{"template": "{text}"}], **fields)
    with pytest.raises(ValidationError, match=r"\{author\} is not a field of the items"):
        services.condition_save(probe=probe_with_items, condition=None, user=owner, name="Bad", output_format="json_schema",
                                pipeline=[{"name": "analysis", "template": "{text} by {author}"}], **fields)
