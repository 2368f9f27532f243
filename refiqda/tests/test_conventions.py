"""Packing code fields into a REFI-QDA Description and back."""

from __future__ import annotations

from refiqda.conventions import code_description, parse_code_description, unique_name


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


def test_archived_travels_as_a_last_paragraph_and_only_a_plain_yes_counts():
    text = code_description(definition="Old idea.", kind="latent", archived=True)
    assert text == "Old idea.\n\nKind: latent\n\nArchived: yes"
    assert parse_code_description(text) == {"definition": "Old idea.", "kind": "latent", "archived": True}
    assert code_description(definition="Live.", archived=False) == "Live."
    assert parse_code_description("Text.\n\nArchived: maybe") == {"definition": "Text.\n\nArchived: maybe"}


def test_a_repeated_name_takes_its_parent_then_a_number():
    taken: set[str] = set()
    names = [unique_name(n, taken, 200, hint) for n, hint in [("Home", ""), ("home", "People"), ("Home", "People"), ("Home", "")]]
    assert names == ["Home", "home (People)", "Home (2)", "Home (3)"]


def test_a_note_carries_its_kind_as_a_last_paragraph():
    from refiqda.conventions import note_text, parse_note_text

    assert note_text("Thoughts.\r\nMore.", "analytic") == "Thoughts.\r\nMore.\n\nKind: analytic"
    assert note_text("", "reflexive") == "Kind: reflexive"
    for text in ("Thoughts.", "", "Quoted:\n\nKind: analytic", "Kind: reflexive in the middle.\n\nEnd."):
        for kind in ("reflexive", "familiarisation", "familiarisation note"):
            assert parse_note_text(note_text(text, kind)) == (text, kind)
    # Another tool may have re-saved it with CRLF and a trailing line end.
    assert parse_note_text("Body\r\n\r\nKind: Analytic\r\n") == ("Body", "analytic")
    # Foreign notes, and kinds we do not have, come back whole.
    assert parse_note_text("Just a note.") == ("Just a note.", "")
    assert parse_note_text("Body\n\nKind: weird") == ("Body\n\nKind: weird", "")


def test_a_theme_description_carries_status_and_parent():
    from refiqda.conventions import parse_theme_description, theme_description

    text = theme_description(definition="What it is.", status="final", parent="Top theme")
    assert text == "What it is.\n\nStatus: final\n\nSub-theme of: Top theme"
    assert parse_theme_description(text) == {"definition": "What it is.", "status": "final", "parent": "Top theme"}
    assert theme_description(definition="Plain.") == "Plain."  # a top-level candidate: as before
    assert theme_description(status="defined") == "Status: defined"
    assert parse_theme_description("Status: defined") == {"definition": "", "status": "defined"}
    assert parse_theme_description("Free text.\n\nStatus: open") == {"definition": "Free text.\n\nStatus: open"}
    assert parse_theme_description("") == {"definition": ""}
