"""REFI-QDA project exchange (.qdpx): export a whole project, import one into a new project.

Export
  * Every interview (trash excluded) is one TextSource. Its text is the turns joined as
    ``"{speaker label}: {turn text}"`` separated by a blank line; the code-point range of
    each turn's own text is kept in the source variable ``RTA turns`` (JSON), so that our
    import restores the turns exactly while other tools just see a readable transcript.
    Each entry also carries the turn's model slug, time and provenance citation.
  * Provenance: the source's Description holds the interview's provenance panel and each
    turn's citation (interviews.provenance) as plain text, which every QDA tool shows;
    our import keeps it in the interview's metadata and restores each turn's citation,
    model slug and time. Full chat-completions records travel only in the project backup.
  * Codes → Codes (hierarchy, colour; definition, include/exclude, example and kind in the
    Description). Each coded segment → one PlainTextSelection (name = the segment text)
    holding one Coding per (code, coder); coders are Users; a coding's note → a Note.
    Consecutive segments with one code by one coder (and the same note) are one selection.
  * Whole-interview codings (case features) → one selection over the whole source text, with a
    Coding per (code, coder) and a note saying so: other tools see the whole transcript coded,
    our import restores case codings.
  * Memos → Notes referenced from their project, source, code or set (theme), the memo's kind as a
    last "Kind: ..." paragraph; familiarisation notes → Notes ("Kind: familiarisation note") on the
    source or on a selection of their turn's text; themes → Sets of codes with status and parent
    theme in the Description (refiqda.conventions); participants → Cases with the variables
    provider, model and interface, their snapshot date and one per free attribute.
  * What may be absent is left out, so it comes back absent: a source's creationDateTime is the
    interview's conducted date (none when it has none), a participant without a snapshot date or an
    attribute has no value for it. Dates keep their fractions of a second.
  * Positions in code points (the standard) or UTF-16 code units (NVivo).

Import (into a NEW project, all in one transaction)
  * Sources with text become interviews. With our ``RTA turns`` map the turns come back
    as they were; a transcript with speaker labels ("Interviewer:", "GPT-4o:") is split
    into turns by the plain-text importer's label rules (labels stay outside the turns);
    any other source becomes a single participant turn.
  * Selections rarely line up with our sentence segments. We choose to make them line up:
    the turn is segmented as usual and then split again at every selection boundary, so a
    selection is exactly a run of whole segments and its codings land on precisely the
    selected text (surrounding whitespace aside). Zero-length selections and selections
    outside any turn's text (e.g. on a speaker label) have nothing to code and are reported.
  * What our export marks comes back as it was: case codings (the whole-source selection with
    our note), familiarisation notes ("Kind: familiarisation note"), memo kinds, theme status and
    parent theme. Files without the marks (older exports, other tools) import as plain codings,
    memos and top-level candidate themes.
  * People: an import NEVER creates accounts. The importer maps each user the file names
    (`qdpx_people`) to an account they share a project with, or keeps them as a name only
    (`PersonName`); a user whose id or name is the importer's username is the importer unless
    mapped otherwise. Codings need an account, so those of a person kept as a name belong to
    the importer, with the person's name kept beside them; their memos have no author account
    and keep the name. Our export writes a kept name back as a user, so names survive round trips.
"""

from __future__ import annotations

import bisect
import datetime as dt
import hashlib
import json
import re
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from itertools import pairwise
from typing import BinaryIO

from django.conf import settings
from django.db import models, transaction

import refiqda
from coding.codebook_import import MAX_CODES
from coding.models import CaseCoding, Code, CodeEvent, Coding, Note
from coding.services import PALETTE
from interviews.models import Interview, Participant, Segment, Speaker, Turn
from interviews.parsers.base import guess_labels
from interviews.parsers.text import find_label_lines
from interviews.provenance import interview_provenance, turn_citation
from interviews.segmentation import segment_text
from projects import safejson
from projects.audit import audit_record
from projects.copy import insert_all
from projects.models import AuditEvent, Membership, Project, Role
from projects.names import normalised_name
from projects.services import project_create
from refiqda.conventions import (
    FAMILIARISATION_NOTE,
    code_description,
    note_text,
    parse_code_description,
    parse_note_text,
    parse_theme_description,
    theme_description,
    unique_name,
)
from reports.backup import MAX_PEOPLE, BackupPerson, Progress, no_progress
from reports.models import PersonName
from themes.models import Memo, MemoRevision, Theme, ThemeCode, ThemeStatusChange

TURNS_VARIABLE = "RTA turns"
CASE_VARIABLES = ("provider", "model", "interface")
SNAPSHOT_VARIABLE = "snapshot date"
# A participant's free attribute named like one of ours travels under this prefix (the import takes it off).
ATTRIBUTE_PREFIX = "attribute: "
_VARIABLE_TYPES = {bool: "Boolean", int: "Integer", float: "Float", str: "Text"}
# The note on a coding that was an accepted AI suggestion (REFI-QDA codings have no origin); the import reads it back.
ACCEPTED_SUGGESTION_NOTE = "Accepted AI suggestion (RTA Studio's second reader)"
# The note on the selection of a whole source that carries its interview's case codings; the import reads it back.
CASE_CODING_NOTE = "Codes applied to the whole interview (RTA Studio's case features)"
_NS = uuid.UUID("6f1d8a52-3c1e-4f53-9a57-5b1d2f6c7e01")  # namespace for derived GUIDs


def _colour(value: str | None) -> str | None:
    """#RRGGBB or None; #RGB is widened (the schema allows it, our field holds 7 characters)."""
    if not value or not re.fullmatch(r"#([0-9A-Fa-f]{3}|[0-9A-Fa-f]{6})", value):
        return None
    return value if len(value) == 7 else "#" + "".join(ch * 2 for ch in value[1:])


def _guid(*parts: object) -> str:
    return str(uuid.uuid5(_NS, ":".join(str(p) for p in parts)))


# --- export ----------------------------------------------------------------------------


def _speaker_label(turn: Turn, participant: Participant) -> str:
    if turn.speaker == Speaker.PARTICIPANT:
        return participant.label
    return Speaker(turn.speaker).label


def _code_description(code: Code) -> str:
    return code_description(definition=code.definition, include_when=code.include_when,
                            exclude_when=code.exclude_when, example=code.example, kind=code.kind,
                            archived=code.archived)


class _Exporter:
    def __init__(self, project: Project) -> None:
        self.project = project
        self.users: dict[object, refiqda.User] = {}
        self.notes: list[refiqda.Note] = []
        # Names kept by an import or restore for people without an account here, by (model, row pk, field).
        self.kept = {(m, row, f): name for m, row, f, name in PersonName.objects.filter(
            project=project, model__in=["coding.coding", "coding.casecoding", "coding.note", "themes.memo"],
            field__in=["coder_id", "author_id"],
        ).order_by("-pk").values_list("model", "row_id", "field", "name")}

    def user_guid(self, user, kept_name: str = "") -> str | None:
        """The file user for an account, or for a person kept as a name only (who wins over the row's account)."""
        if kept_name:
            if ("name", kept_name) not in self.users:
                self.users["name", kept_name] = refiqda.User(guid=_guid("person", kept_name), name=kept_name)
            return self.users["name", kept_name].guid
        if user is None:
            return None
        if user.pk not in self.users:
            self.users[user.pk] = refiqda.User(guid=_guid("user", user.pk, user.username),
                                               name=user.get_full_name() or user.username, id=user.username)
        return self.users[user.pk].guid

    def coder_guid(self, coding: Coding) -> str | None:
        return self.user_guid(coding.coder, self.kept.get(("coding.coding", coding.pk, "coder_id"), ""))

    def codes(self) -> tuple[list[refiqda.Code], dict[int, str]]:
        rows = list(Code.objects.for_project(self.project).order_by("position", "name", "pk"))
        by_id = {c.pk: refiqda.Code(guid=str(c.uuid), name=c.name, color=_colour(c.colour),
                                    description=_code_description(c)) for c in rows}
        roots = []
        for c in rows:
            parent = by_id.get(c.parent_id) if c.parent_id else None
            (parent.children if parent else roots).append(by_id[c.pk])
        self.code_objs = by_id
        return roots, {c.pk: str(c.uuid) for c in rows}

    def source(self, interview: Interview, code_guids: dict[int, str], codings: list[Coding],
               case_codings: list[CaseCoding], notes: list[Note]) -> refiqda.TextSource:
        turns = list(interview.turns.order_by("position"))
        pieces, turn_map, offsets, pos = [], [], {}, 0
        for turn in turns:
            prefix = f"{_speaker_label(turn, interview.participant)}: "
            if pieces:
                pieces.append("\n\n")
                pos += 2
            pieces.append(prefix + turn.text)
            offsets[turn.pk] = pos + len(prefix)
            turn_map.append({"speaker": turn.speaker, "start": offsets[turn.pk],
                             "end": offsets[turn.pk] + len(turn.text), **_turn_facts(turn, interview)})
            pos += len(prefix) + len(turn.text)
        src = refiqda.TextSource(
            guid=str(interview.uuid), name=interview.title, text="".join(pieces),
            description=_provenance_description(interview, turns),
            creating_user=self.user_guid(interview.created_by),
            # The date the interview was conducted, absent when it has none: an import must not date it at export time.
            created=interview.conducted_at,
            variable_values=[refiqda.VariableValue(_guid("variable", TURNS_VARIABLE), json.dumps(turn_map))],
        )
        selections: dict[tuple[int, int], refiqda.Selection] = {}
        for run in _coding_runs(codings, self.coder_guid):
            first, last = run[0].segment, run[-1].segment
            start, end = offsets[first.turn_id] + first.start, offsets[first.turn_id] + last.end
            guid = _guid("segment", first.pk) if len(run) == 1 else _guid("segments", first.pk, last.pk)
            sel = selections.setdefault((start, end), refiqda.Selection(guid=guid, start=start, end=end))
            created = min(c.created_at for c in run)
            sel.created = min(sel.created, created) if sel.created else created
            coding = refiqda.Coding(guid=_guid("coding", run[0].pk), code_guid=code_guids[run[0].code_id],
                                    creating_user=self.coder_guid(run[0]), created=created)
            if run[0].origin == Coding.Origin.SUGGESTION:
                # REFI-QDA has no origin for a coding: a note on it says so, in words any tool shows.
                note = refiqda.Note(guid=_guid("coding-origin", run[0].pk), name=ACCEPTED_SUGGESTION_NOTE,
                                    text=ACCEPTED_SUGGESTION_NOTE, creating_user=coding.creating_user, created=created)
                self.notes.append(note)
                coding.note_refs.append(note.guid)
            if run[0].note.strip():  # every coding of a run has this note (_coding_runs)
                note = refiqda.Note(guid=_guid("coding-note", run[0].pk), name=f"Note on {run[0].segment.text[:40]}",
                                    text=run[0].note, creating_user=coding.creating_user, created=created)
                self.notes.append(note)
                coding.note_refs.append(note.guid)
            sel.codings.append(coding)
        src.selections.extend(selections.values())
        self.familiarisation_notes(src, notes, {t.pk: t for t in turns}, offsets)
        self.case_codings(src, interview, case_codings, code_guids)
        src.selections.sort(key=lambda s: (s.start, s.end))
        return src

    def familiarisation_notes(self, src: refiqda.TextSource, notes: list[Note], turns: dict[int, Turn],
                              offsets: dict[int, int]) -> None:
        """Each note → a Note on the source (interview) or on its own selection of the turn's text.

        A turn's note never shares a selection with codings: our import would take it for a coding's note.
        """
        for n in notes:
            author = self.user_guid(n.author, self.kept.get(("coding.note", n.pk, "author_id"), ""))
            turn = turns[n.turn_id] if n.turn_id else None
            note = refiqda.Note(guid=_guid("familiarisation-note", n.pk),
                                name=f"Familiarisation note{f' on turn {turn.number}' if turn else ''}",
                                text=note_text(n.text, FAMILIARISATION_NOTE), creating_user=author,
                                created=n.created_at, modified=n.updated_at)
            self.notes.append(note)
            if turn is None:
                src.note_refs.append(note.guid)
            else:
                start = offsets[turn.pk]
                src.selections.append(refiqda.Selection(
                    guid=_guid("turn-note", n.pk), start=start, end=start + len(turn.text), creating_user=author,
                    created=n.created_at, note_refs=[note.guid]))

    def case_codings(self, src: refiqda.TextSource, interview: Interview, rows: list[CaseCoding],
                     code_guids: dict[int, str]) -> None:
        """The interview's case codings as Codings on one selection of the whole text, marked by a note.

        REFI-QDA cases are our participants and carry no coder, so a whole-text selection is what every tool reads
        as "this interview has this code"; the note tells our import to restore case codings, not sentence codings.
        """
        if not rows:
            return
        note = refiqda.Note(guid=_guid("case-codings", interview.pk), name=CASE_CODING_NOTE, text=CASE_CODING_NOTE,
                            created=min(cc.created_at for cc in rows))
        self.notes.append(note)
        sel = refiqda.Selection(guid=_guid("case-selection", interview.pk), start=0, end=len(src.text or ""),
                                created=note.created, note_refs=[note.guid])
        for cc in rows:
            coder = self.user_guid(cc.coder, self.kept.get(("coding.casecoding", cc.pk, "coder_id"), ""))
            sel.codings.append(refiqda.Coding(guid=_guid("case-coding", cc.pk), code_guid=code_guids[cc.code_id],
                                              creating_user=coder, created=cc.created_at))
        src.selections.append(sel)


def _coding_runs(codings: list[Coding], coder_of) -> list[list[Coding]]:
    """One code by one coder on consecutive segments of one turn, grouped: each group is one selection.

    A passage coded in another tool comes in split at sentence ends; written back as one
    selection, it leaves as it came (an NVivo selection over five sentences stays one).
    `coder_of` names the coder as the file will (a person kept as a name is not the account holding the coding).
    A run holds one note: a coding's note is the run's note on import, so a different note ends the run.
    """
    by_pair: dict[tuple[int, str | None, str], list[Coding]] = defaultdict(list)
    for c in codings:  # an accepted AI suggestion is never one selection with a hand-made coding
        by_pair[(c.code_id, coder_of(c), c.origin)].append(c)
    runs: list[list[Coding]] = []
    for group in by_pair.values():
        group.sort(key=lambda c: c.segment.position)
        run = [group[0]]
        for c in group[1:]:
            prev = run[-1].segment
            if (c.segment.turn_id == prev.turn_id and c.segment.position == prev.position + 1
                    and c.note == run[-1].note):
                run.append(c)
            else:
                runs.append(run)
                run = [c]
        runs.append(run)
    return sorted(runs, key=lambda run: run[0].pk)


def _citation(turn: Turn, interview: Interview) -> str:
    p = interview.participant
    via = ", ".join(filter(None, [p.provider, p.get_interface_display()]))
    return "; ".join(turn_citation(
        live=(turn.metadata or {}).get("provenance") if isinstance(turn.metadata, dict) else None,
        model_slug=turn.model_slug, timestamp=turn.timestamp, via=via, source_format=interview.source_format,
        source_filename=interview.source_filename, source_sha256=interview.source_sha256))


def _turn_facts(turn: Turn, interview: Interview) -> dict[str, str]:
    """What our own import restores on the turn besides its text: model slug, time, provenance."""
    facts = {"model": turn.model_slug, "time": turn.timestamp.isoformat() if turn.timestamp else "",
             "provenance": _citation(turn, interview)}
    return {k: v for k, v in facts.items() if v}


def _provenance_description(interview: Interview, turns: list[Turn]) -> str:
    """The interview's provenance panel and each turn's citation, as text any QDA tool shows.

    The full records (request, raw response) are in the project backup; this keeps what
    a reader of the .qdpx needs to cite the data.
    """
    lines = [f"{label}: {value}" for label, value in interview_provenance(interview, turns)]
    cited = [(t, _citation(t, interview)) for t in turns]
    if any(c for _, c in cited):
        lines += ["", "Provenance per turn:"]
        lines += [f"Turn {t.number} ({Speaker(t.speaker).label.lower()}): {c}" for t, c in cited if c]
    return "\n".join(lines)


EXPORT_INTERVIEWS_AT_ONCE = 50


def project_to_refiqda(project: Project) -> refiqda.Project:
    """The whole project as REFI-QDA dataclasses (positions in code points)."""
    ex = _Exporter(project)
    roots, code_guids = ex.codes()
    interviews = list(Interview.objects.for_project(project).select_related("participant", "created_by")
                      .order_by("conducted_at", "created_at", "pk"))
    sources = []
    # A batch of interviews at a time: the rows read for a source are let go once it is built. Reading all of a
    # 50× project's codings at once, with their segments and coders, peaked at 675 MB here; 50 interviews, 206 MB.
    for at in range(0, len(interviews), EXPORT_INTERVIEWS_AT_ONCE):
        batch = interviews[at:at + EXPORT_INTERVIEWS_AT_ONCE]
        codings_by_interview: dict[int, list[Coding]] = defaultdict(list)
        for c in (Coding.objects.filter(interview__in=batch, code_id__in=code_guids)
                  .select_related("segment", "coder").order_by("pk")):
            codings_by_interview[c.interview_id].append(c)
        case_codings: dict[int, list[CaseCoding]] = defaultdict(list)
        for cc in (CaseCoding.objects.filter(interview__in=batch, code_id__in=code_guids)
                   .select_related("coder").order_by("pk")):
            case_codings[cc.interview_id].append(cc)
        notes: dict[int, list[Note]] = defaultdict(list)
        for n in Note.objects.filter(interview__in=batch).select_related("author").order_by("created_at", "pk"):
            notes[n.interview_id].append(n)
        sources += [ex.source(i, code_guids, codings_by_interview[i.pk], case_codings[i.pk], notes[i.pk])
                    for i in batch]
    variables = [refiqda.Variable(guid=_guid("variable", name), name=name) for name in CASE_VARIABLES]
    variables.append(refiqda.Variable(guid=_guid("variable", TURNS_VARIABLE), name=TURNS_VARIABLE,
                                      description="Where each turn's text lies in this source (code points, JSON)."))
    variables.append(refiqda.Variable(guid=_guid("variable", SNAPSHOT_VARIABLE), name=SNAPSHOT_VARIABLE, type="Date",
                                      description="The date of the model snapshot interviewed."))
    participants = list(Participant.objects.filter(project=project).order_by("label"))
    attribute_variables, attribute_value = _attribute_variables(participants)
    variables += attribute_variables
    cases = []
    for p in participants:
        values = [p.provider, p.model_id, p.interface]
        cases.append(refiqda.Case(
            guid=str(p.uuid), name=p.label,
            variable_values=[
                *(refiqda.VariableValue(_guid("variable", n), v) for n, v in zip(CASE_VARIABLES, values, strict=True)),
                # Absent values are left out, so they come back absent (not as an empty date or attribute).
                *([refiqda.VariableValue(_guid("variable", SNAPSHOT_VARIABLE), p.snapshot_date)] if p.snapshot_date else []),
                *(refiqda.VariableValue(_guid("attribute", key), attribute_value(key, value))
                  for key, value in sorted((p.attributes or {}).items()))],
            source_refs=[str(i.uuid) for i in interviews if i.participant_id == p.pk]))
    sets = theme_sets(project, code_guids)
    qp = refiqda.Project(
        name=project.name, description=project.description, created=project.created_at,
        creating_user=ex.user_guid(project.created_by), codes=roots, variables=variables, cases=cases,
        sources=sources, notes=ex.notes, sets=list(sets.values()),
    )
    _export_memos(ex, qp, project, sources={i.pk: s for i, s in zip(interviews, sources, strict=True)},
                  sets=sets)
    qp.users = list(ex.users.values())
    return qp


def _attribute_variables(participants: list[Participant]) -> tuple[list[refiqda.Variable], Callable[[str, object], object]]:
    """A case variable per free participant attribute, typed by its values (Text when they differ in type), and
    how to write one value: as itself, or as text (JSON for a list or an object) in a Text variable."""
    kinds: dict[str, set[type]] = defaultdict(set)
    for p in participants:
        for key, value in (p.attributes or {}).items():
            if value is not None:
                kinds[key].add(type(value))
    types = {key: _VARIABLE_TYPES.get(next(iter(k)), "Text") if len(k) == 1 else "Text" for key, k in kinds.items()}
    reserved = {*CASE_VARIABLES, TURNS_VARIABLE.lower(), SNAPSHOT_VARIABLE}
    variables = [refiqda.Variable(guid=_guid("attribute", key), type=types.get(key, "Text"),
                                  name=f"{ATTRIBUTE_PREFIX}{key}" if key.strip().lower() in reserved else key)
                 for key in sorted({key for p in participants for key in (p.attributes or {})})]

    def value(key: str, v: object) -> object:
        if v is None or isinstance(v, str) or types[key] != "Text":
            return v
        return json.dumps(v, ensure_ascii=False)

    return variables, value


def _attribute(value: object) -> object:
    """A case variable's value as a participant attribute (JSON): a decimal as a number, a date as its ISO text."""
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, dt.date):
        return value.isoformat()
    return value


def _export_memos(ex: _Exporter, qp: refiqda.Project, project: Project, *, sources: dict[int, refiqda.TextSource],
                  sets: dict[int, refiqda.Set]) -> None:
    """Memos become Notes, referenced from what they are about (a memo on something not exported: the project)."""
    for memo in (Memo.objects.filter(project=project, deleted_at__isnull=True).select_related("author")
                 .order_by("created_at", "pk")):
        author = ex.user_guid(memo.author, ex.kept.get(("themes.memo", memo.pk, "author_id"), ""))
        note = refiqda.Note(guid=str(memo.uuid), name=memo.title, text=note_text(memo.body, memo.kind),
                            creating_user=author, created=memo.created_at, modified=memo.updated_at)
        ex.notes.append(note)
        if memo.interview_id in sources:
            sources[memo.interview_id].note_refs.append(note.guid)
        elif memo.code_id in ex.code_objs:
            ex.code_objs[memo.code_id].note_refs.append(note.guid)
        elif memo.theme_id in sets:
            sets[memo.theme_id].member_notes.append(note.guid)
        else:
            qp.note_refs.append(note.guid)


def theme_sets(project: Project, code_guids: dict[int, str]) -> dict[int, refiqda.Set]:
    """The project's themes (by id, in board order) as sets of their codes, with definition, status and parent in
    the description."""
    themes = list(Theme.objects.for_project(project).prefetch_related("theme_codes").order_by("position", "name"))
    names = {t.pk: t.name for t in themes}  # a parent in the trash is not exported: its sub-theme leaves top-level
    return {t.pk: refiqda.Set(guid=str(t.uuid), name=t.name,
                              description=theme_description(definition=t.definition, status=t.status,
                                                            parent=names.get(t.parent_id, "")),
                              member_codes=[code_guids[tc.code_id] for tc in t.theme_codes.all() if tc.code_id in code_guids])
            for t in themes}


def project_export_qdpx(*, project: Project, out: BinaryIO, positions: str = "codepoints") -> None:
    """Write the project as a .qdpx to `out`; positions 'codepoints' (standard) or 'utf16' (NVivo)."""
    refiqda.write_qdpx(project_to_refiqda(project), out, positions=positions)


# --- import ----------------------------------------------------------------------------


@dataclass
class ImportResult:
    project: Project
    interviews: int = 0
    codes: int = 0
    codings: int = 0
    themes: int = 0
    memos: int = 0
    notes: int = 0  # familiarisation notes
    case_codings: int = 0
    warnings: list[str] = field(default_factory=list)

    @property
    def summary(self) -> str:
        """What was imported, in words: "3 interviews, 1 code, … and 2 memos" (familiarisation notes and whole-interview
        codings only when there were any)."""
        counts = [(self.interviews, "interview"), (self.codes, "code"), (self.codings, "coding"), (self.themes, "theme"),
                  (self.memos, "memo"), *([(self.notes, "familiarisation note")] if self.notes else []),
                  *([(self.case_codings, "whole-interview coding")] if self.case_codings else [])]
        said = [f"{n} {what}{'' if n == 1 else 's'}" for n, what in counts]
        return ", ".join(said[:-1]) + " and " + said[-1]


_unique = unique_name  # shared with the .qdc codebook import, so both name repeated codes alike


def _unique_name(name: str, taken: set[str], limit: int, hint: str = "") -> str:
    """A code's, theme's or participant's name as every name is stored (projects/names.py), made unique as _unique."""
    return _unique(normalised_name(name), taken, limit, normalised_name(hint))


def _turns_from_map(src: refiqda.TextSource, variables: dict[str, str]) -> list[tuple[str, int, int]] | None:
    """(speaker, start, end) per turn from our own export's turn map, or None."""
    var_guid = variables.get(TURNS_VARIABLE.lower())
    raw = next((vv.value for vv in src.variable_values if refiqda.norm_guid(vv.variable_guid) == var_guid), None)
    if not isinstance(raw, str):
        return None
    try:
        spans = [(t["speaker"], int(t["start"]), int(t["end"])) for t in safejson.loads(raw)]
    except (ValueError, TypeError, KeyError):
        return None
    text_len, last = len(src.text or ""), 0
    for speaker, start, end in spans:
        if speaker not in Speaker.values or not last <= start <= end <= text_len:
            return None
        last = end
    return spans


def _turn_facts_from_map(src: refiqda.TextSource, variables: dict[str, str], count: int) -> list[dict[str, object]]:
    """Model slug, time and provenance per turn from our own export's turn map (empty dicts when absent)."""
    var_guid = variables.get(TURNS_VARIABLE.lower())
    raw = next((vv.value for vv in src.variable_values if refiqda.norm_guid(vv.variable_guid) == var_guid), "")
    try:
        entries = safejson.loads(raw)
    except (ValueError, TypeError):
        entries = []
    facts = []
    for entry in [*entries, *[{}] * count][:count]:
        entry = entry if isinstance(entry, dict) else {}
        try:
            at = dt.datetime.fromisoformat(entry["time"]) if isinstance(entry.get("time"), str) else None
        except ValueError:
            at = None
        facts.append({"model_slug": str(entry.get("model") or "")[:200], "timestamp": at,
                      "metadata": {"provenance_in_file": entry["provenance"]}
                      if isinstance(entry.get("provenance"), str) and entry["provenance"] else {}})
    return facts


def _turns_from_labels(text: str) -> list[tuple[str, int, int]] | None:
    """Turns of a transcript with speaker labels ("Interviewer:", "GPT-4o:"), as exact spans of the text.

    Uses the plain-text importer's label rules; the labels themselves stay outside the
    turns. A short opening before the first label (a recording notice, a title) is a system
    turn of its own. None when there are fewer than two distinct speakers, or a long text
    before the first label, so an ordinary document is kept whole rather than cut at a chance "Note:".
    """
    lines = text.splitlines(keepends=True)
    labels = find_label_lines(lines)
    if len({lab.label for lab in labels}) < 2:
        return None
    starts, pos = [], 0
    for line in lines:
        starts.append(pos)
        pos += len(line)
    opening = _trimmed_span(text, 0, starts[labels[0].index])
    if opening and (opening[1] - opening[0] > OPENING_MAX_CHARS or len(labels) < OPENING_NEEDS_TURNS):
        return None
    speakers = guess_labels([lab.label for lab in labels])
    spans = [(Speaker.SYSTEM, *opening)] if opening else []
    for n, lab in enumerate(labels):
        end = starts[labels[n + 1].index] if n + 1 < len(labels) else len(text)
        if span := _trimmed_span(text, starts[lab.index] + lab.rest, end):
            spans.append((speakers[lab.label], *span))
    return spans or None


# What may come before a transcript's first speaker label and still be a transcript: a recording notice or a title
# line ("Automation: This call is now being recorded."), in a transcript of a few turns at least.
OPENING_MAX_CHARS = 300
OPENING_NEEDS_TURNS = 4


def _trimmed_span(text: str, start: int, end: int) -> tuple[int, int] | None:
    """[start, end) without the spaces at its ends; None when nothing else is left."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if start < end else None


def _person_name(fu: refiqda.User) -> str:
    return (fu.name.strip() or fu.id.strip() or "Unnamed coder")[:150]


def qdpx_people(qp: refiqda.Project, filename: str = "") -> list[BackupPerson]:
    """The people a .qdpx names as coders or note authors, for the importer to map to accounts (by user GUID).

    Refuses a file naming more than MAX_PEOPLE: that is not a real team, and the mapping step lists everyone.
    """
    users = qp.users_by_guid()
    people: dict[str, BackupPerson] = {}

    def count(guid: str | None, what: str) -> None:
        key = refiqda.norm_guid(guid) if guid else ""
        if (fu := users.get(key)) is not None:
            person = people.setdefault(key, BackupPerson(_person_name(fu), key=key, aliases=(fu.id,) if fu.id else ()))
            person.counts[what] = person.counts.get(what, 0) + 1

    for src in qp.sources:
        for sel in src.selections:
            for coding in sel.codings:
                # A passage the file codes becomes a coding of each sentence it spans: counted as passages here.
                count(coding.creating_user or sel.creating_user, "coded passages")
    for note in qp.notes:
        count(note.creating_user, "notes")
    if len(people) > MAX_PEOPLE:
        raise refiqda.QdpxError(f"the file names more than {MAX_PEOPLE} coders; that is not a real team, so it is "
                                "not imported", where=filename or qp.name or "project")
    return sorted(people.values(), key=lambda p: (p.username.lower(), p.key))


class _Importer:
    def __init__(self, qp: refiqda.Project, *, owner, project: Project, filename: str,
                 accounts: dict[str, object]) -> None:
        self.qp, self.owner, self.project, self.filename = qp, owner, project, filename
        self.result = ImportResult(project=project, warnings=list(qp.warnings))
        self.file_users = qp.users_by_guid()
        self.accounts = accounts  # user GUID → the account the importer chose
        self.codes: dict[str, Code] = {}
        self.variables = {v.name.strip().lower(): refiqda.norm_guid(v.guid) for v in qp.variables}
        self.notes = qp.notes_by_guid()
        self.interviews: dict[str, Interview] = {}
        # Source GUID → its turns and their (speaker, start, end) in the source text, to place notes on turns.
        self.turns: dict[str, tuple[list[Turn], list[tuple[str, int, int]]]] = {}
        self.themes: dict[str, Theme] = {}
        # (row, user field, name) of people kept as names only, written once the rows have their keys.
        self.kept: list[tuple[models.Model, str, str]] = []

    def warn(self, message: str) -> None:
        self.result.warnings.append(message)

    def person(self, guid: str | None) -> tuple[object | None, str]:
        """(account, "") for someone mapped to an account (nobody named: the importer), (None, name) for a name only."""
        key = refiqda.norm_guid(guid) if guid else ""
        fu = self.file_users.get(key)
        if fu is None:
            return self.owner, ""
        account = self.accounts.get(key)
        return (account, "") if account is not None else (None, _person_name(fu))

    def keep_names(self) -> None:
        PersonName.objects.bulk_create([
            PersonName(project=self.project, model=row._meta.label_lower, row_id=row.pk, field=attname, name=name)
            for row, attname, name in self.kept], batch_size=1000)

    def import_codes(self) -> None:
        taken: set[str] = set()
        events = []
        for fcode, parent, _ in self.qp.iter_codes():
            fields = parse_code_description(fcode.description)
            name = _unique_name(fcode.name, taken, 200, parent.name if parent else "")
            if name != normalised_name(fcode.name)[:200]:
                self.warn(f"Code {fcode.name!r} appears more than once; imported as {name!r}.")
            code = Code.objects.create(
                project=self.project, name=name, colour=_colour(fcode.color) or PALETTE[len(self.codes) % len(PALETTE)],
                parent=self.codes.get(refiqda.norm_guid(parent.guid)) if parent else None,
                position=len(self.codes), created_by=self.owner, **fields)
            self.codes[refiqda.norm_guid(fcode.guid)] = code
            events.append(CodeEvent(project=self.project, code=code, actor=self.owner, action=CodeEvent.Action.IMPORTED,
                                    reason=f"Imported from {self.filename or 'a REFI-QDA project'}",
                                    data={"qdpx_guid": fcode.guid, "origin": self.qp.origin or ""}))
        CodeEvent.objects.bulk_create(events)
        self.result.codes = len(self.codes)

    def participants(self) -> dict[str, Participant]:
        """Participant per source guid, from the cases that name the sources."""
        by_source: dict[str, Participant] = {}
        taken: set[str] = set()
        var_names = {refiqda.norm_guid(v.guid): v.name.strip() for v in self.qp.variables}  # attributes keep their case
        ours = {*CASE_VARIABLES, SNAPSHOT_VARIABLE}
        for case in self.qp.cases:
            named = {var_names.get(refiqda.norm_guid(vv.variable_guid), ""): vv.value for vv in case.variable_values}
            values = {k.lower(): v for k, v in named.items() if k.lower() in ours}
            attrs = {k.removeprefix(ATTRIBUTE_PREFIX): _attribute(v) for k, v in named.items()
                     if k and k.lower() not in ours and k.lower() != TURNS_VARIABLE.lower()}
            interface = str(values.get("interface") or "web").lower()
            snapshot = values.get(SNAPSHOT_VARIABLE)
            p = Participant.objects.create(
                project=self.project, label=_unique_name(case.name or "Case", taken, 100),
                provider=str(values.get("provider") or "")[:100], model_id=str(values.get("model") or "")[:200],
                interface=interface if interface in Participant.Interface.values else Participant.Interface.WEB,
                snapshot_date=snapshot.date() if isinstance(snapshot, dt.datetime) else
                snapshot if isinstance(snapshot, dt.date) else None,
                attributes=attrs)
            for ref in case.source_refs:
                by_source.setdefault(refiqda.norm_guid(ref), p)
        self._taken_labels = taken
        return by_source

    def default_participant(self) -> Participant:
        if not hasattr(self, "_default"):
            self._default = Participant.objects.create(
                project=self.project, label=_unique_name("Imported source", self._taken_labels, 100))
        return self._default

    def import_sources(self, progress: Progress) -> None:
        participants = self.participants()
        titles: set[str] = set()
        progress(0, len(self.qp.sources), "interviews")
        for done, src in enumerate(self.qp.sources, start=1):
            if src.text is None:
                self.warn(f"Source {src.name!r} has no text in the file; not imported.")
                continue
            participant = participants.get(refiqda.norm_guid(src.guid)) or self.default_participant()
            title = _unique(src.name, titles, 300)
            if title != src.name.strip()[:300]:
                self.warn(f"Two sources are called {src.name!r}; the second is imported as {title!r}.")
            self.import_source(src, participant, title)
            self.result.interviews += 1
            progress(done, len(self.qp.sources), "interviews")

    def import_source(self, src: refiqda.TextSource, participant: Participant, title: str) -> None:
        text = src.text or ""
        spans, how = _turns_from_map(src, self.variables), "turn map"
        if spans is None:
            spans, how = _turns_from_labels(text), "speaker labels"
        if spans is None:
            spans, how = [(Speaker.PARTICIPANT, 0, len(text))], "whole text"
        facts = _turn_facts_from_map(src, self.variables, len(spans)) if how == "turn map" else [{}] * len(spans)
        interview = Interview.objects.create(
            project=self.project, participant=participant, title=title, conducted_at=src.created,
            origin=Interview.Origin.IMPORTED, source_format="qdpx", source_filename=self.filename[:500],
            source_sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(), source_conversation_id=src.guid[:200],
            metadata={"qdpx": {"origin": self.qp.origin or "", "counting": self.qp.counting, "source_guid": src.guid,
                               "turns_from": how, **({"description": src.description} if src.description else {})}},
            created_by=self.owner)
        self.interviews[refiqda.norm_guid(src.guid)] = interview
        turns = [
            Turn(interview=interview, position=i, speaker=speaker, text=text[s:e],
                 model_slug=fact.get("model_slug", ""), timestamp=fact.get("timestamp"),
                 metadata={"imported_from": "qdpx", "source_guid": src.guid, "source_start": s, **fact.get("metadata", {})})
            for i, ((speaker, s, e), fact) in enumerate(zip(spans, facts, strict=True))]
        insert_all(Turn, turns)
        self.turns[refiqda.norm_guid(src.guid)] = (turns, spans)
        # Selections in turn coordinates: [(turn index, start, end, selection)].
        placed = self.place_selections(src, spans)
        cuts: dict[int, set[int]] = defaultdict(set)
        for ti, s, e, _ in placed:
            cuts[ti].update((s, e))
        segments, per_turn = [], []
        for ti, turn in enumerate(turns):
            rows = [Segment(interview=interview, turn=turn, position=len(segments) + k, start=s, end=e,
                            text=turn.text[s:e], kind=kind, speaker=turn.speaker)
                    for k, (s, e, kind) in enumerate(split_spans(turn.text, cuts[ti]))]
            segments.extend(rows)
            per_turn.append(rows)
        insert_all(Segment, segments)
        self.import_codings(interview, placed, per_turn)
        self.import_case_codings(interview, src)

    def place_selections(self, src: refiqda.TextSource, spans: list[tuple[str, int, int]]):
        placed = []
        starts = [s for _, s, _ in spans]
        for sel in src.selections:
            if not sel.codings:
                continue  # a note-only selection becomes a memo on the interview (import_memos)
            if self.is_case_selection(sel):
                continue  # its codings are the interview's case codings (import_case_codings)
            if sel.start == sel.end:
                self.warn(f"{src.name!r}: a zero-length selection at {sel.start} has no text to code; skipped.")
                continue
            hit = False
            for ti in range(max(bisect.bisect_right(starts, sel.start) - 1, 0), len(spans)):
                _, ts, te = spans[ti]
                if ts >= sel.end:
                    break
                s, e = max(sel.start, ts) - ts, min(sel.end, te) - ts
                if s < e:
                    placed.append((ti, s, e, sel))
                    hit = True
            if not hit:
                self.warn(f"{src.name!r}: the selection {src.selected_text(sel)[:40]!r} lies outside every turn's "
                          "text (a speaker label?); skipped.")
        return placed

    def import_codings(self, interview: Interview, placed, per_turn: list[list[Segment]]) -> None:
        rows, names, seen, merged = [], [], set(), 0
        for ti, s, e, sel in placed:
            segs = [seg for seg in per_turn[ti] if s <= seg.start and seg.end <= e]
            note = self.note_text(sel.note_refs)
            for fc in sel.codings:
                code = self.codes.get(refiqda.norm_guid(fc.code_guid))
                if code is None:
                    continue
                account, name = self.person(fc.creating_user or sel.creating_user)
                coder = account or self.owner  # a coding needs an account: a name-only coder's is the importer's
                notes = [r for r in fc.note_refs if not self.says_accepted_suggestion(r)]
                origin = Coding.Origin.SUGGESTION if len(notes) < len(fc.note_refs) else Coding.Origin.HUMAN
                text = "\n\n".join(t for t in (self.note_text(notes), note) if t)
                for seg in segs:
                    key = (seg.pk, code.pk, coder.pk)
                    if key in seen:
                        merged += name != ""
                        continue
                    seen.add(key)
                    rows.append(Coding(segment=seg, code=code, coder=coder, interview=interview, note=text, origin=origin))
                    names.append(name)
        insert_all(Coding, rows)
        self.kept.extend((row, "coder_id", name) for row, name in zip(rows, names, strict=True) if name)
        self.result.codings += len(rows)
        if merged:
            self.warn(f"{interview.title!r}: {merged} codings by people kept as names repeat a code you (or another "
                      "of them) applied to the same passage; each is kept once.")

    def import_case_codings(self, interview: Interview, src: refiqda.TextSource) -> None:
        """The codings of a selection our export marks as the whole interview's become its case codings."""
        rows, names, seen, merged = [], [], set(), 0
        for sel in filter(self.is_case_selection, src.selections):
            for fc in sel.codings:
                code = self.codes.get(refiqda.norm_guid(fc.code_guid))
                if code is None:
                    continue
                account, name = self.person(fc.creating_user or sel.creating_user)
                coder = account or self.owner  # as for a coding: a name-only coder's is the importer's
                if (code.pk, coder.pk) in seen:
                    merged += 1
                    continue
                seen.add((code.pk, coder.pk))
                rows.append(CaseCoding(interview=interview, code=code, coder=coder))
                names.append(name)
        CaseCoding.objects.bulk_create(rows)
        self.kept.extend((row, "coder_id", name) for row, name in zip(rows, names, strict=True) if name)
        self.result.case_codings += len(rows)
        if merged:
            self.warn(f"{interview.title!r}: {merged} whole-interview codings by people kept as names repeat a code "
                      "you (or another of them) applied to the whole interview; each is kept once.")

    def says(self, ref: str, marker: str) -> bool:
        """Whether a note is the one our export writes to say `marker` (an accepted suggestion, case codings)."""
        found = self.notes.get(refiqda.norm_guid(ref))
        return found is not None and found.text.strip() == marker

    def says_accepted_suggestion(self, ref: str) -> bool:
        return self.says(ref, ACCEPTED_SUGGESTION_NOTE)

    def is_case_selection(self, sel: refiqda.Selection) -> bool:
        return any(self.says(r, CASE_CODING_NOTE) for r in sel.note_refs)

    def note_text(self, refs: Iterable[str]) -> str:
        return "\n\n".join(n.text for r in refs if (n := self.notes.get(refiqda.norm_guid(r))) and n.text.strip())

    def import_sets(self) -> None:
        """Sets of codes become themes; our export's Description also gives each its status and parent theme."""
        taken: set[str] = set()
        by_name: dict[str, list[Theme]] = defaultdict(list)  # by the name in the file, which a sub-theme's parent names
        parents: dict[Theme, str] = {}
        for position, fset in enumerate(self.qp.sets):
            codes = [c for g in fset.member_codes if (c := self.codes.get(refiqda.norm_guid(g)))]
            if fset.member_codes and not codes or not fset.member_codes and (fset.member_sources or fset.member_notes):
                self.warn(f"Set {fset.name!r} groups no codes; not imported as a theme.")
                continue
            name = _unique_name(fset.name, taken, 200)  # live theme names are unique, whatever their case
            if name != normalised_name(fset.name)[:200]:
                self.warn(f"Two sets are called {fset.name!r}; the second is imported as the theme {name!r}.")
            fields = parse_theme_description(fset.description)
            theme = Theme.objects.create(project=self.project, name=name, definition=fields["definition"],
                                         status=fields.get("status", Theme.Status.CANDIDATE), position=position,
                                         created_by=self.owner)
            ThemeCode.objects.bulk_create([ThemeCode(theme=theme, code=c, position=i) for i, c in enumerate(dict.fromkeys(codes))])
            self.themes[refiqda.norm_guid(fset.guid)] = theme
            by_name[fset.name.strip()].append(theme)
            if "parent" in fields:
                parents[theme] = fields["parent"]
            self.result.themes += 1
        # Each theme's history starts where the file leaves it, as theme_create starts a new one.
        ThemeStatusChange.objects.bulk_create([
            ThemeStatusChange(theme=t, from_status="", to_status=t.status, actor=self.owner,
                              reason=f"Imported from {self.filename or 'a REFI-QDA project'}")
            for t in self.themes.values()])
        self.place_subthemes(parents, by_name)

    def place_subthemes(self, parents: dict[Theme, str], by_name: dict[str, list[Theme]]) -> None:
        """Put each sub-theme under the one set called as its Description says; otherwise it stays top-level."""
        for theme, name in parents.items():
            found = by_name.get(name, [])
            if len(found) != 1:
                self.warn(f"Theme {theme.name!r} is a sub-theme of {name!r}, but {'no' if not found else 'more than one'} "
                          "set is called that; imported as a top-level theme.")
                continue
            parent = node = found[0]
            while node is not None and node != theme:
                node = node.parent
            if node == theme:
                self.warn(f"Theme {theme.name!r} is a sub-theme of {name!r}, which would put it under itself; "
                          "imported as a top-level theme.")
                continue
            theme.parent = parent
            theme.save(update_fields=["parent"])

    def import_memos(self) -> None:
        """Notes become memos on what refers to them, or our export's familiarisation notes on interviews and turns.

        Notes on codings were already kept as coding notes.
        """
        targets: dict[str, dict] = {}

        def attach(refs: Iterable[str], **target) -> None:
            for ref in refs:
                targets.setdefault(refiqda.norm_guid(ref), target)

        attach(self.qp.note_refs)
        for src in self.qp.sources:
            attach(src.note_refs, interview=self.interviews.get(refiqda.norm_guid(src.guid)))
        for fcode, _, _ in self.qp.iter_codes():
            attach(fcode.note_refs, code=self.codes.get(refiqda.norm_guid(fcode.guid)))
        for fset in self.qp.sets:
            attach(fset.member_notes, theme=self.themes.get(refiqda.norm_guid(fset.guid)))
        consumed, quotes = set(), {}
        for src in self.qp.sources:
            for sel in src.selections:
                if sel.codings:  # its notes went into the codings' notes
                    consumed.update(refiqda.norm_guid(r) for r in [*sel.note_refs, *(n for c in sel.codings for n in c.note_refs)])
                elif src.text is not None:
                    # A note on a passage nobody coded: a memo on the interview that quotes the passage
                    # (a familiarisation note: on the turn that holds the passage).
                    attach(sel.note_refs, interview=self.interviews.get(refiqda.norm_guid(src.guid)),
                           turn=self.turn_holding(src, sel))
                    quotes.update({refiqda.norm_guid(r): src.selected_text(sel) for r in sel.note_refs})
        familiarisation = []
        for note in self.qp.notes:
            key = refiqda.norm_guid(note.guid)
            if key in consumed and key not in targets:
                continue
            target = targets.get(key, {})
            on = {k: v for k in ("interview", "code", "theme") if (v := target.get(k)) is not None}
            text, kind = parse_note_text(note.text)
            quote = quotes.get(key, "").strip()
            if kind == FAMILIARISATION_NOTE and "interview" in on:
                if "turn" not in target or target["turn"] is not None:  # on the source, or on one turn's text
                    familiarisation.append((note, text, on["interview"], target.get("turn"), quote))
                    continue
                self.warn(f"{on['interview'].title!r}: the familiarisation note {note.name!r} is on text outside "
                          "every turn; kept as a familiarisation memo on the interview.")
            self.import_memo(note, text, kind, on, quote)
        self.import_familiarisation_notes(familiarisation)

    def turn_holding(self, src: refiqda.TextSource, sel: refiqda.Selection) -> Turn | None:
        """The turn whose text holds the whole selection, or None."""
        turns, spans = self.turns.get(refiqda.norm_guid(src.guid), ([], []))
        ti = bisect.bisect_right([s for _, s, _ in spans], sel.start) - 1
        return turns[ti] if ti >= 0 and sel.end <= spans[ti][2] else None

    def import_memo(self, note: refiqda.Note, text: str, kind: str, target: dict, quote: str = "") -> None:
        title = (note.name.strip() or text.strip().split("\n", 1)[0] or "Imported note")[:200]
        body = ("> " + quote.replace("\n", "\n> ") + "\n\n" if quote else "") + text
        # A familiarisation note that cannot be one (not on an interview, or its place taken) is a memo of that kind.
        kind = Memo.Kind.FAMILIARISATION if kind == FAMILIARISATION_NOTE else kind or Memo.Kind.REFLEXIVE
        author, name = self.person(note.creating_user)
        memo = Memo.objects.create(project=self.project, title=title, body=body, kind=kind, author=author,
                                   updated_by=author, **target)
        revision = MemoRevision.objects.create(memo=memo, number=1, title=memo.title, body=memo.body,
                                               kind=memo.kind, author=author)
        if name:
            self.kept += [(memo, "author_id", name), (memo, "updated_by_id", name), (revision, "author_id", name)]
        if dates := _note_dates(note):
            Memo.objects.filter(pk=memo.pk).update(**dates)
            MemoRevision.objects.filter(pk=revision.pk).update(created_at=dates["updated_at"])
        self.result.memos += 1

    def import_familiarisation_notes(self, found: list[tuple[refiqda.Note, str, Interview, Turn | None, str]]) -> None:
        """Familiarisation notes, one per author and place, people with an account first.

        A note whose place its author already has (people kept as names all write as the importer) becomes a
        familiarisation memo on the interview, so no note is lost.
        """
        rows, names, file_notes, taken = [], [], [], set()
        for note, text, interview, turn, quote in sorted(found, key=lambda f: self.person(f[0].creating_user)[0] is None):
            account, name = self.person(note.creating_user)
            author = account or self.owner  # a note needs an account: a name-only author's is the importer's
            place = (interview.pk, turn.pk if turn else None, author.pk)
            if place in taken:
                where = f"turn {turn.number} of {interview.title!r}" if turn else repr(interview.title)
                self.warn(f"{name or author.username} has two familiarisation notes on {where} here (people kept as "
                          f"names write as you); {note.name or 'the second'!r} is kept as a familiarisation memo.")
                self.import_memo(note, text, FAMILIARISATION_NOTE, {"interview": interview}, quote)
                continue
            taken.add(place)
            rows.append(Note(interview=interview, turn=turn, author=author, text=text))
            names.append(name)
            file_notes.append(note)
        Note.objects.bulk_create(rows)
        for row, note in zip(rows, file_notes, strict=True):
            if dates := _note_dates(note):
                Note.objects.filter(pk=row.pk).update(**dates)
        self.kept.extend((row, "author_id", name) for row, name in zip(rows, names, strict=True) if name)
        self.result.notes += len(rows)


def _note_dates(note: refiqda.Note) -> dict[str, dt.datetime]:
    """A note's written and last changed times as the file has them (a date the file leaves out: the import's own);
    saving stamps the import time, so they are set after."""
    written = note.created or note.modified
    return {"created_at": written, "updated_at": note.modified or written} if written else {}


def split_spans(text: str, cuts: Iterable[int]) -> list[tuple[int, int, str]]:
    """Segment `text` as usual, then split segments at every cut (selection boundary)."""
    points = sorted(set(cuts))
    out = []
    for span in segment_text(text):
        lo, hi = bisect.bisect_right(points, span.start), bisect.bisect_left(points, span.end)
        for a, b in pairwise([span.start, *points[lo:hi], span.end]):
            while a < b and text[a].isspace():
                a += 1
            while b > a and text[b - 1].isspace():
                b -= 1
            if a < b:
                out.append((a, b, str(span.kind)))
    return out


def _refuse_nul_characters(qp: refiqda.Project, filename: str) -> None:
    """PostgreSQL text cannot hold NUL; stripping it would shift every selection after it, so name it instead."""
    for kind, item in [*(("source", s) for s in qp.sources), *(("note", n) for n in qp.notes)]:
        at = (item.text or "").find("\x00")
        if at >= 0:
            raise refiqda.QdpxError(f"{kind} {item.name!r} holds a NUL character (at character {at}), which cannot be "
                                    "stored; remove it from the text and export again", where=filename or "archive")


def qdpx_read(source: refiqda.Project | bytes | BinaryIO | str, *, filename: str = "") -> refiqda.Project:
    """Read and check a .qdpx (limits, NUL characters); refiqda.QdpxError says what is wrong."""
    limits = refiqda.Limits(max_total_bytes=settings.RTA_MAX_UNCOMPRESSED_BYTES, max_codes=MAX_CODES,
                            max_nodes=settings.RTA_QDPX_MAX_NODES)
    qp = source if isinstance(source, refiqda.Project) else refiqda.read_project(source, name=filename, limits=limits)
    _refuse_nul_characters(qp, filename)
    return qp


def _accounts(in_file: list[BackupPerson], owner, people: Mapping[str, object], filename: str) -> dict[str, object]:
    """User GUID → account: the importer for the file's entries under their username, then the importer's choices."""
    chosen = {p.key: owner for p in in_file if p.is_named(owner.username)}
    chosen |= {refiqda.norm_guid(k): v for k, v in people.items() if v is not None}
    by_account: dict[int, list[str]] = defaultdict(list)
    names = {p.key: p.username for p in in_file}
    for key, account in chosen.items():
        by_account[account.pk].append(names.get(key, key))
    for account_names in by_account.values():
        if len(account_names) > 1:
            raise refiqda.QdpxError(f"{' and '.join(account_names)} are mapped to the same account; each account "
                                    "can stand for one person of the file", where=filename or "project")
    return chosen


@transaction.atomic
def project_import_qdpx(*, source: refiqda.Project | bytes | BinaryIO | str, owner, name: str = "",
                        filename: str = "", people: Mapping[str, object] | None = None,
                        members: str = "me", progress: Progress | None = None) -> ImportResult:
    """Create a new project owned by `owner` from a .qdpx; lands whole or not at all, and never creates accounts.

    `people` maps a user GUID of the file to the existing account that person is here (chosen by the importer);
    everyone else is kept as a name only. `members="all"` also makes the mapped people analysts of the project.
    `progress(done, total, "interviews")` is told how far the import is as it goes.
    """
    if members not in ("me", "all"):
        raise ValueError("members must be 'me' or 'all'")
    qp = qdpx_read(source, filename=filename)
    in_file = qdpx_people(qp, filename)
    accounts = _accounts(in_file, owner, people or {}, filename)
    project = project_create(owner=owner, name=(name or qp.name or "Imported project")[:200],
                             description=qp.description)
    importer = _Importer(qp, owner=owner, project=project, filename=filename, accounts=accounts)
    importer.import_codes()
    importer.import_sources(progress or no_progress)
    importer.import_sets()
    importer.import_memos()
    importer.keep_names()
    if members == "all":
        Membership.objects.bulk_create([Membership(project=project, user=a, role=Role.ANALYST)
                                        for a in {a.pk: a for a in accounts.values() if a.pk != owner.pk}.values()])
    r = importer.result
    kept = sorted({p.username for p in in_file if p.key not in accounts})
    if kept:
        r.warnings.append(f"Kept as names only (no account here; their codings are yours, with their name kept): "
                          f"{', '.join(kept[:20])}{f' and {len(kept) - 20} more' if len(kept) > 20 else ''}.")
    audit_record(project=project, actor=owner, action=AuditEvent.Action.CREATED, target=project,
                 summary=f"Imported from the REFI-QDA project {filename or qp.name!r}: {r.interviews} interviews, "
                         f"{r.codes} codes, {r.codings} codings",
                 data={"origin": qp.origin or "", "counting": qp.counting, "warnings": len(r.warnings)})
    return r

