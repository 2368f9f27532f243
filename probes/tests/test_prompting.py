"""Filling templates and parsing answers: JSON schema and labelled lines."""

from __future__ import annotations

import json

import pytest

from probes.models import Condition, ConditionVersion, Item, OutputFormat
from probes.prompting import ParseError, messages_for, parse, response_format


def version(**kwargs) -> ConditionVersion:
    fields = {"template": "Review: {text}\nStars: {stars}. Keep {braces} as written.", "system_prompt": "Classify.",
              "labels": ["woman", "man"], "categories": ["Declaration", "Emotional Expression"]} | kwargs
    return ConditionVersion(condition=Condition(name="Primed for emotion"), number=1, **fields)


def lines_version() -> ConditionVersion:
    return version(output_format=OutputFormat.LABELLED_LINES, label_key="Gender", categories_key="Codes Applied",
                   rationale_key="Rationale")


def test_the_template_is_filled_from_the_item_and_unknown_braces_stay():
    item = Item(text="So rude!", labels={"gender": "woman"}, attributes={"stars": 1})
    assert messages_for(version(), item) == [
        {"role": "system", "content": "Classify."},
        {"role": "user", "content": "Review: So rude!\nStars: 1. Keep {braces} as written."},
    ]


def test_a_json_condition_sends_a_strict_schema_built_from_its_keys():
    sent = response_format(version())
    assert sent["type"] == "json_schema" and sent["json_schema"]["strict"] is True
    assert sent["json_schema"]["name"] == "Primed_for_emotion"
    assert sent["json_schema"]["schema"]["properties"]["label"] == {"type": "string", "enum": ["woman", "man"]}
    assert response_format(lines_version()) is None


def test_json_answers_parse_and_are_validated_again():
    answer = json.dumps({"label": "woman", "categories": ["Emotional Expression", "Tone"], "rationale": "Warm."})
    parsed = parse(version(), answer)
    assert (parsed.label, parsed.categories, parsed.rationale) == ("woman", ["Emotional Expression", "Tone"], "Warm.")
    with pytest.raises(ParseError, match="Does not match the JSON schema at label: 'other' is not one of"):
        parse(version(), json.dumps({"label": "other", "categories": [], "rationale": ""}))
    with pytest.raises(ParseError, match="Not valid JSON: 'Expecting ',' delimiter' at line 1, column 19"):
        parse(version(), '{"label": "woman" "categories": []}')


def test_empty_answers_and_plain_text_refusals_say_which_they_are():
    for v in (version(), lines_version()):
        with pytest.raises(ParseError, match=r"^The answer was empty: the model sent no text\.$"):
            parse(v, " \n")
    with pytest.raises(ParseError, match=r"^Not JSON: the answer is plain text \(“I'm sorry, but I can't help with that\.”\)\.$"):
        parse(version(), "I'm sorry, but I can't help\nwith that.")


def test_labelled_lines_parse_with_markdown_and_multi_line_rationales():
    text = ("**Gender:** Woman\nCodes Applied: Emotional Expression; Textual Style\n"
            "Rationale: The review is emotional.\nIt uses many exclamation marks.")
    parsed = parse(lines_version(), text)
    assert parsed.label == "woman"
    assert parsed.categories == ["Emotional Expression", "Textual Style"]
    assert parsed.rationale == "The review is emotional.\nIt uses many exclamation marks."


def test_labelled_lines_without_the_label_or_with_another_label_are_unparsed():
    with pytest.raises(ParseError, match="No “Gender:” line"):
        parse(lines_version(), "I cannot tell.")
    with pytest.raises(ParseError, match="“Gender” is “unknown”, which is not one of: woman, man"):
        parse(lines_version(), "Gender: unknown")


def test_json_answers_are_read_as_leniently_as_labelled_lines():
    control = version(label_key="gender", categories_key="codes_applied")
    as_json = parse(control, json.dumps({"gender": " Woman.", "codes_applied": "Declaration; Other", "rationale": "r"}))
    as_lines = parse(lines_version(), "Gender: Woman.\nCodes Applied: Declaration; Other\nRationale: r")
    assert (as_json.label, as_json.categories) == (as_lines.label, as_lines.categories) == ("woman", ["Declaration", "Other"])
    with pytest.raises(ParseError, match="Does not match the JSON schema at gender: 'Other' is not one of"):
        parse(control, json.dumps({"gender": "Other", "codes_applied": [], "rationale": ""}))


@pytest.mark.django_db
def test_re_parsing_rescues_json_answers_the_strict_schema_refused(answered):
    from probes.models import Answer
    from probes.services import answers_reparse

    control = Condition.objects.get(probe=answered, name="Control")
    text = json.dumps({"gender": "Woman", "codes_applied": "Declaration; Other", "rationale": "Warm."})
    Answer.objects.filter(condition=control).update(status=Answer.Status.UNPARSED, text=text, label="", categories=[])
    assert answers_reparse(condition=control) == {"done": 16, "unparsed": 0, "stopped": 0}
    assert {(label, tuple(categories)) for label, categories in
            Answer.objects.filter(condition=control).values_list("label", "categories")} == {
        ("woman", ("Declaration", "Other"))}
