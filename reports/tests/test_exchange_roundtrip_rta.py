"""REFI-QDA round trips of what only RTA Studio has: familiarisation notes, case codings, one note per sentence,
memo kinds, theme status and sub-themes; older exports and other tools' files import as before."""

from __future__ import annotations

import io
import zipfile

import pytest
from lxml import etree

import refiqda
from coding.models import CaseCoding, Code, Coding, Note
from interviews.models import Interview, Speaker
from refiqda.conventions import MEMO_KINDS, THEME_STATUSES
from refiqda.tests.helpers import PROJECT_XSD, QDPX_SAMPLES, G, codebook, make_zip, project_xml
from reports.exchange import CASE_CODING_NOTE, project_import_qdpx, qdpx_people
from reports.models import PersonName
from reports.tests.test_exchange import _enrich, _export, _kept_name
from themes.models import Memo, Theme, ThemeCode

pytestmark = pytest.mark.django_db
POSITIONS = ["codepoints", "utf16"]
EMOJI = "Emoji 🚀 interview"
GPT = "Home and belonging: GPT-4o"


def _owner(project):
    return project.memberships.get(role="owner").user


def _import(project, positions: str, *, analyst=None, name: str = "Round trip"):
    """Export `project` and import it as its owner; `analyst` given: the file's Arjun is mapped to that account."""
    data = _export(project, positions)
    people = {p.key: analyst for p in qdpx_people(refiqda.read_project(data)) if p.username == "Arjun Analyst"}
    return project_import_qdpx(source=data, owner=_owner(project), name=name, people=people if analyst else None)


def _name(row, user) -> str:
    """Who a row is by: a name kept by an import, else the account's full name or username."""
    kept = PersonName.objects.filter(model=row._meta.label_lower, row_id=row.pk).values_list("name", flat=True).first()
    return kept or user.get_full_name() or user.username


def _notes(project) -> list[tuple]:
    return sorted((n.interview.title, n.turn.position if n.turn else -1, _name(n, n.author), n.text)
                  for n in Note.objects.filter(interview__project=project).select_related("interview", "turn", "author"))


def _case_codings(project) -> list[tuple]:
    return sorted((cc.interview.title, cc.code.name, _name(cc, cc.coder))
                  for cc in CaseCoding.objects.filter(interview__project=project).select_related("interview", "code", "coder"))


def _sentence_codings(project) -> list[tuple]:
    return sorted((c.interview.title, c.segment.turn.position, c.segment.text, c.code.name, _name(c, c.coder), c.note)
                  for c in Coding.objects.filter(interview__project=project).select_related(
                      "interview", "segment__turn", "code", "coder"))


def _add_notes(project, analyst) -> None:
    """Notes on an interview and on turns, two authors on one turn, text with an emoji and CRLF (positions differ)."""
    owner = _owner(project)
    emoji = Interview.objects.get(project=project, title=EMOJI)
    answer = emoji.turns.get(position=1)
    Note.objects.create(interview=emoji, author=owner, text="First read: playful.\r\nCheck the 😀.")
    Note.objects.create(interview=emoji, turn=answer, author=analyst, text="Second 🧭 matters.")
    Note.objects.create(interview=emoji, turn=answer, author=owner, text="Mine, on the same turn.")
    gpt = Interview.objects.get(project=project, title=GPT)
    Note.objects.create(interview=gpt, turn=gpt.turns.get(position=3), author=owner, text="Neutral again.")
    Note.objects.create(interview=gpt, author=analyst, text="Arjun's overall view.")


def _add_case_codings(project, analyst) -> None:
    owner = _owner(project)
    codes = list(Code.objects.for_project(project).order_by("position", "name")[:2])
    for title, code, coder in [(EMOJI, codes[0], owner), (EMOJI, codes[1], analyst), (EMOJI, codes[0], analyst),
                               (GPT, codes[1], owner)]:
        CaseCoding.objects.create(interview=Interview.objects.get(project=project, title=title), code=code, coder=coder)


def _add_themes(project) -> None:
    """The demo's theme defined, a final sub-theme under it and a candidate under that, with codes of their own."""
    top = Theme.objects.get(project=project)
    Theme.objects.filter(pk=top.pk).update(status=Theme.Status.DEFINED)
    sub = Theme.objects.create(project=project, name="Universalism", definition="Defaults as universal.\n\nStatus: open",
                               status=Theme.Status.FINAL, parent=top, position=1)
    leaf = Theme.objects.create(project=project, name="Choice", status=Theme.Status.CANDIDATE, parent=sub, position=2)
    codes = list(Code.objects.for_project(project).order_by("-position")[:2])
    ThemeCode.objects.create(theme=sub, code=codes[0])
    ThemeCode.objects.create(theme=leaf, code=codes[1])


def _themes(project) -> dict[str, tuple]:
    return {t.name: (t.definition, t.status, t.parent.name if t.parent else None, sorted(t.codes.values_list("name", flat=True)))
            for t in Theme.objects.for_project(project).select_related("parent")}


def _qde(data: bytes) -> etree._Element:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return etree.fromstring(zf.read("project.qde"))


def test_our_kinds_and_statuses_are_the_models_choices():
    assert MEMO_KINDS == tuple(Memo.Kind.values)
    assert THEME_STATUSES == tuple(Theme.Status.values)


@pytest.mark.parametrize("positions", POSITIONS)
def test_export_with_everything_is_schema_valid(demo_project, analyst, positions):
    _enrich(demo_project, analyst)
    _add_notes(demo_project, analyst)
    _add_case_codings(demo_project, analyst)
    _add_themes(demo_project)
    root = _qde(_export(demo_project, positions))
    assert PROJECT_XSD.validate(root), PROJECT_XSD.error_log


# 1. Familiarisation notes -------------------------------------------------------------------------


@pytest.mark.parametrize("positions", POSITIONS)
def test_familiarisation_notes_come_back_as_notes_on_their_interview_and_turn(demo_project, analyst, positions):
    _enrich(demo_project, analyst)
    _add_notes(demo_project, analyst)
    parsed = refiqda.read_project(_export(demo_project, positions))
    # Other tools see ordinary notes: on the source, and on a passage (the turn's text) that nobody coded.
    emoji = next(s for s in parsed.sources if s.name == EMOJI)
    notes = parsed.notes_by_guid()
    on_source = [notes[refiqda.norm_guid(r)] for r in emoji.note_refs]
    assert [n.text for n in on_source if n.name == "Familiarisation note"] == [
        "First read: playful.\r\nCheck the 😀.\n\nKind: familiarisation note"]
    passages = [(emoji.selected_text(s), notes[refiqda.norm_guid(r)].name) for s in emoji.selections if not s.codings
                for r in s.note_refs]
    answer = "Home is 😀 people.\r\nBorders matter too. Second 🧭 sentence here."
    assert passages == [(answer, "Familiarisation note on turn 2")] * 2

    result = _import(demo_project, positions, analyst=analyst)
    assert _notes(result.project) == _notes(demo_project) and result.notes == 5
    assert not Memo.objects.filter(project=result.project, title__startswith="Familiarisation note").exists()
    # Arjun kept as a name: his notes are the importer's account's, with his name kept, and leave as his again;
    # the one on a turn where the importer has a note of their own is kept as a familiarisation memo there.
    kept = _import(demo_project, positions, name="Kept")
    expected = [row for row in _notes(demo_project) if row[3] != "Second 🧭 matters."]
    assert _notes(kept.project) == expected
    assert _kept_name(Note.objects.get(interview__project=kept.project, text="Arjun's overall view.")) == "Arjun Analyst"
    memo = Memo.objects.get(project=kept.project, title="Familiarisation note on turn 2")
    assert (memo.kind, memo.interview.title, memo.body.endswith("\n\nSecond 🧭 matters.")) == (
        "familiarisation", EMOJI, True)
    again = project_import_qdpx(source=_export(kept.project, positions), owner=_owner(demo_project), name="Again")
    assert _notes(again.project) == expected


def test_a_second_note_on_one_place_by_the_same_account_becomes_a_familiarisation_memo(demo_project, analyst):
    """People kept as names write as the importer, who has a note of their own there: nothing is lost."""
    _enrich(demo_project, analyst)
    emoji = Interview.objects.get(project=demo_project, title=EMOJI)
    Note.objects.create(interview=emoji, author=_owner(demo_project), text="Mine.")
    Note.objects.create(interview=emoji, author=analyst, text="Arjun's.")
    result = _import(demo_project, "codepoints")
    assert [(n.text, n.author) for n in Note.objects.filter(interview__project=result.project)] == [
        ("Mine.", _owner(demo_project))]
    memo = Memo.objects.get(project=result.project, title="Familiarisation note")
    assert (memo.body, memo.kind, memo.interview.title, _kept_name(memo)) == ("Arjun's.", "familiarisation", EMOJI,
                                                                              "Arjun Analyst")
    assert any("Arjun Analyst has two familiarisation notes on 'Emoji 🚀 interview'" in w for w in result.warnings)


# 2. Whole-interview codings (case features) -------------------------------------------------------


@pytest.mark.parametrize("positions", POSITIONS)
def test_case_codings_come_back_as_case_codings_not_sentence_codings(demo_project, analyst, positions):
    _enrich(demo_project, analyst)
    _add_case_codings(demo_project, analyst)
    parsed = refiqda.read_project(_export(demo_project, positions))
    # Other tools see the whole transcript coded with each code, by each coder.
    emoji = next(s for s in parsed.sources if s.name == EMOJI)
    [whole] = [s for s in emoji.selections if (s.start, s.end) == (0, len(emoji.text))]
    assert whole.name == emoji.text and len(whole.codings) == 3
    assert [parsed.notes_by_guid()[refiqda.norm_guid(r)].text for r in whole.note_refs] == [CASE_CODING_NOTE]

    result = _import(demo_project, positions, analyst=analyst)
    assert _case_codings(result.project) == _case_codings(demo_project) and result.case_codings == 4
    assert _sentence_codings(result.project) == _sentence_codings(demo_project)
    assert not Memo.objects.filter(project=result.project, title=CASE_CODING_NOTE).exists()
    # Arjun kept as a name: his case codings are the importer's account's, with his name kept, as for codings; the
    # one that repeats the importer's own is kept once, and said.
    kept = _import(demo_project, positions, name="Kept")
    first = Code.objects.for_project(demo_project).order_by("position", "name").first()
    expected = [row for row in _case_codings(demo_project) if row != (EMOJI, first.name, "Arjun Analyst")]
    assert _case_codings(kept.project) == expected
    assert any("1 whole-interview codings by people kept as names repeat a code" in w for w in kept.warnings)
    again = project_import_qdpx(source=_export(kept.project, positions), owner=_owner(demo_project), name="Again")
    assert _case_codings(again.project) == expected


# 3. A coding's note stays on its own sentence ----------------------------------------------------------


def _three_sentences(project):
    interview = Interview.objects.for_project(project).get(title=GPT)
    Coding.objects.filter(interview__project=project).delete()
    segments = list(interview.segments.filter(speaker=Speaker.PARTICIPANT).order_by("position"))
    run = [s for s in segments if s.turn_id == segments[0].turn_id][:3]
    assert len(run) == 3
    return interview, run, Code.objects.for_project(project).order_by("position").first()


@pytest.mark.parametrize("positions", POSITIONS)
def test_a_note_on_one_sentence_of_a_coded_passage_stays_on_that_sentence(demo_project, positions):
    interview, run, code = _three_sentences(demo_project)
    for seg, note in zip(run, ["", "Only this sentence.", ""], strict=True):
        Coding.objects.create(segment=seg, code=code, coder=_owner(demo_project), interview=interview, note=note)
    src = next(s for s in refiqda.read_project(_export(demo_project, positions)).sources if s.name == GPT)
    assert sorted(src.selected_text(s) for s in src.selections) == sorted(seg.text for seg in run)
    result = _import(demo_project, positions)
    assert _sentence_codings(result.project) == _sentence_codings(demo_project)


@pytest.mark.parametrize("positions", POSITIONS)
def test_sentences_with_the_same_note_stay_one_selection_with_one_note(demo_project, positions):
    interview, run, code = _three_sentences(demo_project)
    for seg, note in zip(run, ["Both of us.", "Both of us.", ""], strict=True):
        Coding.objects.create(segment=seg, code=code, coder=_owner(demo_project), interview=interview, note=note)
    parsed = refiqda.read_project(_export(demo_project, positions))
    src = next(s for s in parsed.sources if s.name == GPT)
    turn_text = run[0].turn.text
    assert sorted((src.selected_text(s), len(s.codings[0].note_refs)) for s in src.selections) == sorted(
        [(turn_text[run[0].start:run[1].end], 1), (run[2].text, 0)])
    result = _import(demo_project, positions)
    assert _sentence_codings(result.project) == _sentence_codings(demo_project)


# 4. Memo kinds ---------------------------------------------------------------------------------------


def test_memo_kinds_come_back_and_read_as_a_last_paragraph(demo_project, analyst):
    _enrich(demo_project, analyst)
    kinds = {"Project memo": "analytic", "On the emoji bot": "familiarisation", "Borders code": "methodological",
             "Theme memo": "reflexive"}
    for title, kind in kinds.items():
        Memo.objects.filter(project=demo_project, title=title).update(kind=kind)
    Memo.objects.create(project=demo_project, title="Quotes a kind", body="Someone wrote:\n\nKind: analytic",
                        author=_owner(demo_project))
    kinds["Quotes a kind"] = "reflexive"
    parsed = refiqda.read_project(_export(demo_project))
    by_name = {n.name: n.text for n in parsed.notes}
    assert by_name["Project memo"] == "Overall *thoughts*.\r\nTwo lines.\n\nKind: analytic"
    result = _import(demo_project, "codepoints")

    def memos(project):
        return {m.title: (m.kind, m.body, m.target_kind) for m in Memo.objects.filter(project=project)}

    assert memos(result.project) == memos(demo_project)
    assert {t: k for t, (k, _, _) in memos(result.project).items()} == kinds
    assert all(m.revisions.get().kind == m.kind for m in Memo.objects.filter(project=result.project))


# 5. Theme status and sub-themes -------------------------------------------------------------------------


def test_theme_status_and_parent_come_back(demo_project):
    _add_themes(demo_project)
    parsed = refiqda.read_project(_export(demo_project))
    # Other tools see a plain set whose description reads as text.
    sets = {s.name: s for s in parsed.sets}
    assert sets["Universalism"].description == (
        "Defaults as universal.\n\nStatus: open\n\nStatus: final\n\nSub-theme of: Neutrality that takes sides")
    assert sets["Choice"].description == "Sub-theme of: Universalism"
    result = _import(demo_project, "codepoints")
    assert _themes(result.project) == _themes(demo_project)
    assert {(c.theme.name, c.from_status, c.to_status) for c in Theme.objects.for_project(result.project)
            .get(name="Universalism").status_changes.select_related("theme")} == {("Universalism", "", "final")}


def test_a_sub_theme_whose_parent_is_missing_or_ambiguous_is_top_level_and_said(owner):
    body = (codebook((1, "a"))
            + "<Sets>"
            + f'<Set guid="{G(50)}" name="Twin"><MemberCode targetGUID="{G(1)}"/></Set>'
            + f'<Set guid="{G(51)}" name="Twin"><MemberCode targetGUID="{G(1)}"/></Set>'
            + f'<Set guid="{G(52)}" name="Child"><Description>Kids.\n\nSub-theme of: Twin</Description></Set>'
            + f'<Set guid="{G(53)}" name="Orphan"><Description>Status: final\n\nSub-theme of: Nobody</Description></Set>'
            + f'<Set guid="{G(54)}" name="Loop A"><Description>Sub-theme of: Loop B</Description></Set>'
            + f'<Set guid="{G(55)}" name="Loop B"><Description>Sub-theme of: Loop A</Description></Set>'
            + "</Sets>")
    result = project_import_qdpx(source=make_zip({"project.qde": project_xml(body)}), owner=owner)
    themes = {t.name: (t.definition, t.status, t.parent.name if t.parent else None)
              for t in Theme.objects.for_project(result.project).select_related("parent")}
    assert themes["Twin (2)"] == ("", "candidate", None)  # live theme names are unique
    assert themes["Child"] == ("Kids.", "candidate", None)
    assert themes["Orphan"] == ("", "final", None)
    assert {themes["Loop A"][2], themes["Loop B"][2]} == {"Loop B", None}  # the second would close a loop
    assert "Theme 'Child' is a sub-theme of 'Twin', but more than one set is called that; imported as a " \
           "top-level theme." in result.warnings
    assert "Two sets are called 'Twin'; the second is imported as the theme 'Twin (2)'." in result.warnings
    assert any("'Orphan' is a sub-theme of 'Nobody', but no set" in w for w in result.warnings)
    assert any("'Loop B' is a sub-theme of 'Loop A', which would put it under itself" in w for w in result.warnings)


# Older exports and other tools' files ------------------------------------------------------------------------


def _older_export() -> bytes:
    """A file as our export wrote it before notes, case codings, kinds and statuses travelled."""
    text = "Interviewer: Where is home?\n\nGPT-4o: Home is people. Borders matter."
    answer, coded = text.index("Home is"), text.index("Borders")
    turns = (f'[{{"speaker": "interviewer", "start": 13, "end": 27}}, '
             f'{{"speaker": "participant", "start": {answer}, "end": {len(text)}}}]').replace('"', "&quot;")
    body = (codebook((1, "borders"))
            + f'<Variables><Variable guid="{G(60)}" name="RTA turns" typeOfVariable="Text"/></Variables>'
            + f'<Sources><TextSource guid="{G(5)}" name="Chat" plainTextPath="internal://{G(5)}.txt">'
            + f'<PlainTextSelection guid="{G(6)}" name="Borders matter." startPosition="{coded}" '
            + f'endPosition="{len(text)}"><Coding guid="{G(7)}"><CodeRef targetGUID="{G(1)}"/>'
            + f'<NoteRef targetGUID="{G(32)}"/></Coding></PlainTextSelection>'
            + f'<PlainTextSelection guid="{G(8)}" name="Home is people. Borders matter." startPosition="{answer}" '
            + f'endPosition="{len(text)}"><NoteRef targetGUID="{G(31)}"/></PlainTextSelection>'
            + f'<NoteRef targetGUID="{G(33)}"/>'
            + f'<VariableValue><VariableRef targetGUID="{G(60)}"/><TextValue>{turns}</TextValue></VariableValue>'
            + "</TextSource></Sources>"
            + "<Notes>"
            + f'<Note guid="{G(31)}" name="Passage"><PlainTextContent>Why people?</PlainTextContent></Note>'
            + f'<Note guid="{G(32)}" name="Note on Borders"><PlainTextContent>Clear.</PlainTextContent></Note>'
            + f'<Note guid="{G(33)}" name="On the chat"><PlainTextContent>Short.\n\nKind: odd</PlainTextContent></Note>'
            + "</Notes>"
            + f'<Sets><Set guid="{G(50)}" name="Borders theme"><Description>Limits.\n\nStatus: open</Description>'
            + f'<MemberCode targetGUID="{G(1)}"/></Set></Sets>')
    return make_zip({"project.qde": project_xml(body, origin="RTA Studio"), f"sources/{G(5)}.txt": text.encode()})


def test_an_older_export_imports_as_before(owner):
    result = project_import_qdpx(source=_older_export(), owner=owner, filename="old.qdpx")
    project = result.project
    interview = Interview.objects.get(project=project)
    assert [t.text for t in interview.turns.order_by("position")] == ["Where is home?", "Home is people. Borders matter."]
    assert [(c.segment.text, c.note) for c in Coding.objects.filter(interview=interview)] == [("Borders matter.", "Clear.")]
    memos = {m.title: (m.kind, m.body, m.target_kind) for m in Memo.objects.filter(project=project)}
    assert memos == {"Passage": ("reflexive", "> Home is people. Borders matter.\n\nWhy people?", "interview"),
                     "On the chat": ("reflexive", "Short.\n\nKind: odd", "interview")}
    assert _themes(project) == {"Borders theme": ("Limits.\n\nStatus: open", "candidate", None, ["borders"])}
    assert not Note.objects.filter(interview__project=project).exists()
    assert not CaseCoding.objects.filter(interview__project=project).exists()
    assert (result.notes, result.case_codings, result.memos) == (0, 0, 2)


@pytest.mark.parametrize("path", QDPX_SAMPLES, ids=lambda p: p.name)
def test_other_tools_samples_bring_no_notes_or_case_codings_and_plain_themes(owner, path):
    parsed = refiqda.read_project(path)
    result = project_import_qdpx(source=path.read_bytes(), owner=owner, filename=path.name)
    project = result.project
    assert not Note.objects.filter(interview__project=project).exists()
    assert not CaseCoding.objects.filter(interview__project=project).exists()
    themes = Theme.objects.for_project(project)
    assert all(t.status == "candidate" and t.parent_id is None for t in themes)
    assert {t.definition for t in themes} <= {s.description for s in parsed.sets}
    assert set(Memo.objects.filter(project=project).values_list("kind", flat=True)) <= {"reflexive"}


def test_the_import_summary_counts_in_words_and_names_notes_and_whole_interview_codings_when_there_are_any(project):
    from reports.exchange import ImportResult

    assert ImportResult(project, interviews=1, codes=2, codings=1, themes=0, memos=3).summary == \
        "1 interview, 2 codes, 1 coding, 0 themes and 3 memos"
    assert ImportResult(project, interviews=2, notes=1, case_codings=4).summary == \
        "2 interviews, 0 codes, 0 codings, 0 themes, 0 memos, 1 familiarisation note and 4 whole-interview codings"


# -- what may be absent comes back absent, what is there comes back exactly ------------------------------------------


def _interview_with(project, title: str, participant, **fields) -> Interview:
    from interviews.models import Turn

    interview = Interview.objects.create(project=project, participant=participant, title=title, **fields)
    Turn.objects.create(interview=interview, position=0, speaker=Speaker.PARTICIPANT, text="Home is people.")
    return interview


def test_dates_and_participant_facts_left_out_come_back_left_out_and_those_given_exactly(project, owner):
    import datetime as dt

    from interviews.models import Participant

    bare = Participant.objects.create(project=project, label="Bare bot")
    full = Participant.objects.create(
        project=project, label="DeepSeek", provider="DeepSeek", model_id="deepseek-chat", interface="api",
        snapshot_date=dt.date(2025, 1, 20),
        attributes={"Region": "CN", "context window": 64000, "open weights": True, "temperature": 0.7,
                    "notes": None, "model": "shadows ours", "tags": ["a", 1]})
    conducted = dt.datetime(2026, 3, 4, 5, 6, 7, 891011, tzinfo=dt.timezone(dt.timedelta(hours=5, minutes=30)))
    _interview_with(project, "Undated", bare)
    _interview_with(project, "Dated", full, conducted_at=conducted)
    memo_written = dt.datetime(2025, 6, 1, 9, 30, 15, 250000, tzinfo=dt.UTC)
    memo = Memo.objects.create(project=project, title="On dates", body="Why dates matter.", kind="analytic", author=owner)
    Memo.objects.filter(pk=memo.pk).update(created_at=memo_written, updated_at=memo_written + dt.timedelta(days=2))
    undated = Interview.objects.get(project=project, title="Undated")
    note = Note.objects.create(interview=undated, author=owner, text="First read.")
    Note.objects.filter(pk=note.pk).update(created_at=memo_written, updated_at=memo_written + dt.timedelta(hours=1))

    result = project_import_qdpx(source=_export(project, "codepoints"), owner=owner, name="Round trip")

    back = {i.title: i for i in Interview.objects.filter(project=result.project).select_related("participant")}
    assert back["Undated"].conducted_at is None
    assert back["Dated"].conducted_at == conducted  # the same instant, to the microsecond
    bare_back, full_back = back["Undated"].participant, back["Dated"].participant
    assert (bare_back.provider, bare_back.model_id, bare_back.snapshot_date, bare_back.attributes) == ("", "", None, {})
    assert (full_back.provider, full_back.model_id, full_back.interface, full_back.snapshot_date) == (
        "DeepSeek", "deepseek-chat", "api", dt.date(2025, 1, 20))
    assert full_back.attributes == {"Region": "CN", "context window": 64000, "open weights": True, "temperature": 0.7,
                                    "notes": None, "model": "shadows ours", "tags": '["a", 1]'}
    memo_back = Memo.objects.get(project=result.project, title="On dates")
    assert (memo_back.created_at, memo_back.updated_at) == (memo_written, memo_written + dt.timedelta(days=2))
    note_back = Note.objects.get(interview=back["Undated"])
    assert (note_back.created_at, note_back.updated_at) == (memo_written, memo_written + dt.timedelta(hours=1))
