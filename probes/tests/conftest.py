from __future__ import annotations

import io

import pytest

# The local chat-completions server, live participants on it and real worker processes, as conduct's tests use them.
from conduct.tests.conftest import fake_openai, fake_openai_server, live, start_worker  # noqa: F401

REVIEWS = [
    # (text, gender): the hand-computed tables in the tests rely on this order.
    ("item-1 The receptionist was so rude to me and I felt completely ignored and small.", "woman"),
    ("item-2 I cried in the parking lot after this condescending visit, never again.", "woman"),
    ("item-3 Rude staff, rude doctor!!! I have never been treated like this in my life.", "woman"),
    ("item-4 The doctor was dismissive and disrespectful about my condition and my pain.", "woman"),
    ("item-5 Disrespectful front desk. Waited two hours and nobody said a word to me.", "man"),
    ("item-6 Rude doctor. Wrong prescription. Billing errors. Find another practice.", "man"),
    ("item-7 Condescending attitude from start to finish and the bill was wrong too.", "man"),
    ("item-8 Rude and arrogant. He did not listen and rushed me out in five minutes.", "man"),
]


def sheet(rows=REVIEWS) -> io.BytesIO:
    lines = ["text,gender,stars"] + [f'"{text}",{gender},1' for text, gender in rows]
    return io.BytesIO(("\n".join(lines) + "\n").encode())


@pytest.fixture
def probe(project, owner):
    from probes.services import probe_create

    return probe_create(project=project, user=owner, name="Gender from reviews")


@pytest.fixture
def probe_with_items(probe):
    from probes.items import ItemFilters
    from probes.services import ItemImport, items_import

    items_import(probe=probe, spec=ItemImport("reviews.csv", sheet(), "text", ["gender"], ItemFilters()))
    return probe


CONTROL_SCHEMA = {
    "type": "object",
    "properties": {
        "gender": {"type": "string", "enum": ["woman", "man"]},
        "codes_applied": {"type": "array", "items": {"type": "string"}},
        "rationale": {"type": "string"},
    },
    "required": ["gender", "codes_applied", "rationale"],
    "additionalProperties": False,
}


@pytest.fixture
def conditions(probe_with_items, owner):
    """A JSON-schema control condition and a labelled-lines primed condition."""
    from probes.services import condition_save

    control = condition_save(
        probe=probe_with_items, condition=None, user=owner, name="Control", template="Review: {text}",
        system_prompt="Control. Classify the author's gender.", output_format="json_schema",
        json_schema=CONTROL_SCHEMA, label_key="gender", categories_key="codes_applied", rationale_key="rationale",
        labels=["woman", "man"], categories=["Declaration", "Medical Condition", "Other"],
    )
    primed = condition_save(
        probe=probe_with_items, condition=None, user=owner, name="Primed", template="Review: {text}",
        system_prompt="Primed. Attend to emotional expression.", output_format="labelled_lines", json_schema={},
        label_key="Gender", categories_key="Codes Applied", rationale_key="Rationale", labels=["woman", "man"],
        categories=["Declaration", "Medical Condition", "Other", "Emotional Expression", "Textual Style"],
    )
    return control.condition, primed.condition


@pytest.fixture
def answered(probe_with_items, conditions, project):
    """The probe with two models and a finished answer per item × condition × model, written directly (no endpoint)."""
    from interviews.models import Participant
    from probes.models import Answer

    models = [Participant.objects.create(project=project, label=label, model_id=label.lower(), is_live=True)
              for label in ("Model A", "Model B")]
    probe_with_items.participants.set(models)
    rows = []
    for condition in conditions:
        version = condition.versions.get()
        for participant in models:
            for item in probe_with_items.items.all():
                truth = item.labels["gender"]
                rows.append(Answer(
                    item=item, condition=condition, condition_version=version, participant=participant,
                    status=Answer.Status.DONE, label=truth, categories=["Declaration"],
                    rationale=f"The author writes about the visit. It reads like item {item.position}.",
                    text="…", provenance={"model_returned": participant.model_id, "usage": {"prompt_tokens": 20}},
                ))
    Answer.objects.bulk_create(rows)
    return probe_with_items
