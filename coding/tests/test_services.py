"""Codebook services: create, rename/redefine with optimistic locking, merge, split, move, archive, history, notes."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from coding.models import Code, CodeEvent, Coding, Note
from coding.services import (
    CodeConflict,
    code_archive,
    code_merge,
    code_move,
    code_split,
    code_update,
    note_save,
)
from projects.models import AuditEvent

pytestmark = pytest.mark.django_db


def _code(project, owner, name, segments, coder):
    from coding.services import code_create

    code = code_create(project=project, actor=owner, name=name)
    for s in segments:
        Coding.objects.create(segment=s, code=code, coder=coder, interview=s.interview)
    return code


def test_create_records_history_and_audit(project, owner, make_code):
    code = make_code("Trust", kind="latent", definition="  Reliance on others ")
    assert code.definition == "Reliance on others" and code.kind == "latent" and code.colour.startswith("#")
    event = CodeEvent.objects.get(code=code)
    assert event.action == CodeEvent.Action.CREATED and event.actor == owner
    assert AuditEvent.objects.filter(project=project, target_type="code", target_id=str(code.uuid)).exists()


def test_names_are_unique_ignoring_case_and_spaces(make_code):
    make_code("Trust")
    with pytest.raises(ValidationError, match="already a code"):
        make_code("  trust ")


def test_rename_and_redefine_are_recorded_with_reason(make_code, analyst):
    code = make_code("Trust")
    code_update(code=code, actor=analyst, version=code.version, reason="clearer", name="Trust in others",
                definition="When a speaker relies on others", kind="semantic")
    actions = list(CodeEvent.objects.filter(code=code).values_list("action", "reason"))
    assert (CodeEvent.Action.RENAMED, "clearer") in actions and (CodeEvent.Action.REDEFINED, "clearer") in actions
    code.refresh_from_db()
    assert code.name == "Trust in others" and code.version == 2


def test_second_editor_is_refused_and_sees_the_newer_text(make_code, owner, analyst):
    code = make_code("Trust", definition="v1")
    stale = Code.objects.get(pk=code.pk)
    code_update(code=code, actor=owner, version=1, definition="owner's text")
    with pytest.raises(CodeConflict) as err:
        code_update(code=stale, actor=analyst, version=1, definition="analyst's text")
    assert err.value.current.definition == "owner's text" and err.value.current.version == 2
    assert Code.objects.get(pk=code.pk).definition == "owner's text"


def test_merge_moves_codings_without_duplicates_and_keeps_history(project, owner, analyst, make_code, participant_segments):
    s = participant_segments
    source = _code(project, owner, "Home", s[:3], owner)
    target = _code(project, owner, "Belonging", s[2:4], owner)
    child = make_code("Kitchen", parent=source)
    code_merge(source=source, target=target, actor=analyst, reason="same idea")
    assert sorted(Coding.objects.filter(code=target).values_list("segment_id", flat=True)) == sorted(x.pk for x in s[:4])
    assert not Coding.objects.filter(code=source).exists()
    source.refresh_from_db()
    child.refresh_from_db()
    assert source.archived and source.merged_into == target and child.parent == target
    event = CodeEvent.objects.get(code=source, action=CodeEvent.Action.MERGED)
    assert event.reason == "same idea" and event.data["codings"] == 3 and event.actor == analyst


def test_merge_refuses_itself_and_descendants(make_code, owner):
    parent = make_code("Home")
    child = make_code("Kitchen", parent=parent)
    with pytest.raises(ValidationError):
        code_merge(source=parent, target=parent, actor=owner)
    with pytest.raises(ValidationError, match="inside"):
        code_merge(source=parent, target=child, actor=owner)


def test_split_creates_siblings_and_moves_assigned_segments(project, owner, make_code, participant_segments):
    s = participant_segments
    parent = make_code("Place")
    code = _code(project, owner, "Home", s[:3], owner)
    code_move(code=code, actor=owner, parent=parent)
    new = code_split(code=code, actor=owner, names=["Home as people", "Home as place"], reason="two ideas",
                     assignments={s[0].pk: 0, s[1].pk: 1}, archive_original=True)
    assert [c.parent_id for c in new] == [parent.pk, parent.pk]
    assert Coding.objects.get(segment=s[0]).code == new[0] and Coding.objects.get(segment=s[1]).code == new[1]
    assert Coding.objects.get(segment=s[2]).code == code
    code.refresh_from_db()
    assert code.archived
    assert CodeEvent.objects.get(code=code, action=CodeEvent.Action.SPLIT).data["into"] == ["Home as people", "Home as place"]
    with pytest.raises(ValidationError, match="at least two"):
        code_split(code=code, actor=owner, names=["Only one"])


def test_move_refuses_cycles(make_code, owner):
    a = make_code("A")
    b = make_code("B", parent=a)
    c = make_code("C", parent=b)
    with pytest.raises(ValidationError, match="under itself"):
        code_move(code=a, actor=owner, parent=c)
    code_move(code=c, actor=owner, parent=None, reason="flatten")
    c.refresh_from_db()
    assert c.parent is None and CodeEvent.objects.get(code=c, action=CodeEvent.Action.MOVED).reason == "flatten"


def test_archive_and_unarchive_keep_codings(project, owner, participant_segments):
    code = _code(project, owner, "Old", participant_segments[:1], owner)
    code_archive(code=code, actor=owner, reason="not used")
    code_archive(code=code, actor=owner, archived=False)
    assert Coding.objects.filter(code=code).count() == 1
    assert list(CodeEvent.objects.filter(code=code).values_list("action", flat=True))[:2] == ["unarchived", "archived"]


def test_notes_are_per_author_and_empty_text_deletes(interview, owner, analyst):
    turn = interview.turns.get(position=1)
    note_save(interview=interview, turn=turn, author=owner, text="Warm tone")
    note_save(interview=interview, turn=turn, author=analyst, text="Hedging")
    note_save(interview=interview, turn=turn, author=owner, text="Warm, careful tone")
    note_save(interview=interview, author=owner, text="Whole interview: polite")
    assert Note.objects.filter(turn=turn).count() == 2
    assert Note.objects.get(turn=turn, author=owner).text == "Warm, careful tone"
    note_save(interview=interview, turn=turn, author=analyst, text="  ")
    assert Note.objects.filter(turn=turn).count() == 1 and Note.objects.filter(turn__isnull=True).count() == 1


def test_csv_import_names_bad_headers_encoding_and_cycles(project, owner):
    from coding.codebook_import import CodebookImportError, codebook_import, rows_from_csv

    with pytest.raises(CodebookImportError, match=r"book.csv, line 1, column 2: unknown column “Colour code”"):
        rows_from_csv(b"name,Colour code\nTrust,#fff\n", filename="book.csv")
    with pytest.raises(CodebookImportError, match="not UTF-8"):
        rows_from_csv("name\nCaf\u00e9\n".encode("latin-1"), filename="book.csv")
    with pytest.raises(CodebookImportError, match="line 1: no “name” column"):
        rows_from_csv(b"definition\nx\n", filename="book.csv")
    rows = rows_from_csv(b"name;parent\nA;B\nB;A\n", filename="book.csv")  # semicolons (European Excel)
    with pytest.raises(CodebookImportError, match="cycle"):
        codebook_import(project=project, actor=owner, rows=rows, source="book.csv")
    assert not Code.objects.exists()


def test_a_note_created_by_the_same_author_meanwhile_is_replaced_not_an_error(interview, analyst, monkeypatch):
    from coding import services

    Note.objects.create(interview=interview, author=analyst, text="Written in another tab")

    class _LookupBeforeTheOtherInsert:
        def first(self):
            return None

    monkeypatch.setattr(services.Note.objects, "filter", lambda **kwargs: _LookupBeforeTheOtherInsert())
    note = note_save(interview=interview, author=analyst, text="Written here")
    monkeypatch.undo()
    assert note.text == "Written here"
    assert list(Note.objects.filter(interview=interview, author=analyst).values_list("text", flat=True)) == ["Written here"]


def test_a_new_code_takes_a_palette_colour_no_code_has(project, owner):
    from coding.services import PALETTE, code_create, code_update

    first = code_create(project=project, actor=owner, name="First")
    second = code_create(project=project, actor=owner, name="Second")
    assert (first.colour, second.colour) == (PALETTE[0], PALETTE[1])
    # The first code takes the colour the count would hand the next one: the next code stands apart still.
    code_update(code=first, actor=owner, version=first.version, colour=PALETTE[2])
    assert code_create(project=project, actor=owner, name="Third").colour == PALETTE[0]
