"""Packing code fields into a REFI-QDA Description and back."""

from __future__ import annotations

from refiqda.conventions import code_description, parse_code_description


def test_fields_round_trip():
    fields = {"definition": "Belonging as a choice.\n\nSecond paragraph.", "include_when": "it's up to you",
              "exclude_when": "legal status", "example": "You can belong everywhere!", "kind": "latent"}
    text = code_description(**fields)
    assert text.startswith("Belonging as a choice.\n\nSecond paragraph.\n\nInclude when: it's up to you")
    assert parse_code_description(text) == fields


def test_defaults_are_left_out_and_foreign_text_is_all_definition():
    assert code_description(definition="Just this.") == "Just this."
    assert parse_code_description("Just this.") == {"definition": "Just this."}
    assert parse_code_description("") == {"definition": ""}
    assert parse_code_description("Text.\n\nKind: weird") == {"definition": "Text.\n\nKind: weird"}
