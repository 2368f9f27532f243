# The `world` fixture is imported from tables_world; pytest injects it by argument name.
# ruff: noqa: F811
"""Provenance in exported files: excerpt tables in every format and the .qdpx carry what a methods appendix cites."""

from __future__ import annotations

import csv
import datetime as dt
import io
import zipfile

import docx
import openpyxl
import pytest
from django.urls import reverse
from lxml import etree

import refiqda
from interviews.models import Interview, Participant, Segment, Speaker, Turn
from interviews.provenance import turn_provenance
from interviews.segment_store import segments_for_turns
from refiqda.tests.helpers import PROJECT_XSD
from reports.excerpts import ExcerptSpec, excerpt_rows
from reports.exchange import project_export_qdpx, project_import_qdpx
from reports.exports import excerpt_table
from reports.tests.tables_world import code, seg, world  # noqa: F401 - fixture
from reports.writers import write_table
from reports.writers.latex import latex_escape
from reports.writers.markdown import md_escape

pytestmark = pytest.mark.django_db

ANSWERED = dt.datetime(2026, 3, 1, 14, 2, 33, tzinfo=dt.UTC)
LIVE_CITATION = ("gpt-4o-2024-08-06 (requested gpt-4o); OpenAI, API; 2026-03-01 14:02:33 UTC; "
                 "temperature=0.7, seed=42, max_tokens=800; finish reason stop; tokens 512 prompt, 128 completion; "
                 "system fingerprint fp_44709d6fcb; turn 2; coded by olivia")
IMPORTED_CITATION = ("chatgpt conversations_2025.json sha256:abababababab; gpt-4o-2024-08-06; OpenAI, Web chat; "
                     "2025-01-05 09:30:00 UTC; turn 2; coded by arjun, olivia")
LIVE_RECORD = {
    "provider": "openai-compatible", "base_url": "https://api.openai.com/v1",
    "request": {"model": "gpt-4o", "temperature": 0.7, "seed": 42, "max_tokens": 800, "stream": True,
                "messages": [{"role": "user", "content": "Where is home? " * 50}]},
    "model_requested": "gpt-4o", "model_returned": "gpt-4o-2024-08-06", "response_id": "chatcmpl-1",
    "system_fingerprint": "fp_44709d6fcb", "usage": {"prompt_tokens": 512, "completion_tokens": 128, "total_tokens": 640},
    "finish_reason": "stop", "latency_ms": 1834, "raw_response": {"choices": [{"message": {"content": "..."}}]},
}


@pytest.fixture
def cited(world):
    """The world's GPT interview as an imported ChatGPT export, plus one live API interview with a coded answer."""
    gpt = world.interviews["gpt"]
    gpt.source_filename = "conversations_2025.json"
    gpt.save(update_fields=["source_filename"])
    Turn.objects.filter(interview=gpt, position=1).update(timestamp=dt.datetime(2025, 1, 5, 9, 30, tzinfo=dt.UTC))
    live_bot = Participant.objects.create(project=world.project, label="GPT-4o API", provider="OpenAI",
                                          model_id="gpt-4o", interface="api", is_live=True)
    interview = Interview.objects.create(project=world.project, participant=live_bot, title="Live on home",
                                         origin=Interview.Origin.LIVE, created_by=world.owner, conducted_at=ANSWERED)
    turns = Turn.objects.bulk_create([
        Turn(interview=interview, position=0, speaker=Speaker.INTERVIEWER, text="Where is home?"),
        Turn(interview=interview, position=1, speaker=Speaker.PARTICIPANT, text="Home is where the API answers.",
             model_slug="gpt-4o-2024-08-06", timestamp=ANSWERED, metadata={"provenance": LIVE_RECORD}),
    ])
    Segment.objects.bulk_create(segments_for_turns(interview, turns))
    code(world.codes["Feeling"], seg(interview, "Home is where"), world.owner)
    return world


def _write(w, fmt: str, spec: ExcerptSpec) -> bytes:
    out = io.BytesIO()
    write_table(fmt, excerpt_table(w.project, spec), out)
    return out.getvalue()


def _provenance_cells(fmt: str, data: bytes) -> list[str]:
    if fmt == "csv":
        return [r[-1] for r in csv.reader(io.StringIO(data.decode("utf-8-sig")))][1:]
    if fmt == "xlsx":
        sheet = openpyxl.load_workbook(io.BytesIO(data)).active
        return [r[-1] for r in sheet.iter_rows(min_row=2, values_only=True)]
    return [row.cells[-1].text for row in docx.Document(io.BytesIO(data)).tables[0].rows[1:]]


def test_the_summary_rows_cite_a_live_and_an_imported_turn(cited):
    got = {r.quote: r.provenance for r in excerpt_rows(cited.project, ExcerptSpec(columns=("quote", "provenance")))}
    assert got["Home is where the API answers."] == LIVE_CITATION
    assert got["Home is a feeling. It grows with time."] == IMPORTED_CITATION


@pytest.mark.parametrize("fmt", ["csv", "xlsx", "docx"])
def test_spreadsheet_and_word_tables_keep_the_citations_exactly(cited, fmt):
    cells = _provenance_cells(fmt, _write(cited, fmt, ExcerptSpec(columns=("code", "quote", "provenance"))))
    assert LIVE_CITATION in cells and IMPORTED_CITATION in cells


@pytest.mark.parametrize("fmt, escape", [("tex", latex_escape), ("md", md_escape)])
def test_latex_and_markdown_tables_escape_the_citations(cited, fmt, escape):
    text = _write(cited, fmt, ExcerptSpec(columns=("code", "quote", "provenance"))).decode("utf-8")
    assert escape(LIVE_CITATION) in text and escape(IMPORTED_CITATION) in text
    if fmt == "tex":
        assert r"fp\_44709d6fcb" in text  # the fingerprint's underscore does not start a subscript


def test_exemplar_tables_cite_the_live_turn_too(cited):
    theme = cited.themes["sub"]
    s = seg(Interview.objects.get(title="Live on home"), "Home is where")
    theme.exemplars.create(turn=s.turn, segment=s, spans=[[s.start, s.end]], quote=s.text, position=2,
                           created_by=cited.owner)
    got = {r.quote: r.provenance for r in excerpt_rows(cited.project, ExcerptSpec(columns=("provenance",),
                                                                                    exemplars_only=True))}
    assert got[s.text].startswith(LIVE_CITATION.removesuffix("olivia") + "olivia; exemplar chosen by olivia")


def test_the_browser_preview_shows_the_citations(cited, client_for):
    path = reverse("reports:excerpts", args=[cited.project.uuid]) + "?columns=quote&columns=provenance"
    page = client_for(cited.owner).get(path).content.decode()
    assert "system fingerprint fp_44709d6fcb" in page and "conversations_2025.json sha256:abababababab" in page


def test_the_panel_still_shows_the_full_live_record(cited):
    turn = Turn.objects.get(interview__title="Live on home", position=1)
    assert turn_provenance(turn) == [
        ("Model", "gpt-4o-2024-08-06"), ("Time", "2026-03-01 14:02:33 UTC"), ("Model requested", "gpt-4o"),
        ("Parameters", "temperature=0.7, seed=42, max_tokens=800"), ("Messages sent", "1"),
        ("Tokens", "512 prompt, 128 completion, 640 total"), ("Latency", "1834 ms"), ("Finish reason", "stop"),
        ("Response id", "chatcmpl-1"), ("System fingerprint", "fp_44709d6fcb"), ("Endpoint", "https://api.openai.com/v1"),
    ]


def _qdpx(project) -> bytes:
    buf = io.BytesIO()
    project_export_qdpx(project=project, out=buf)
    return buf.getvalue()


def test_qdpx_keeps_provenance_in_the_source_description(cited):
    data = _qdpx(cited.project)
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        root = etree.fromstring(zf.read("project.qde"))
    assert PROJECT_XSD.validate(root), PROJECT_XSD.error_log
    sources = {s.name: s for s in refiqda.read_project(data).sources}
    live = sources["Live on home"].description.splitlines()
    assert "Origin: Live" in live and "Interface: API" in live
    assert "Turn 2 (participant): " + LIVE_CITATION.removesuffix("; turn 2; coded by olivia") in live
    imported = sources["GPT on home"].description.splitlines()
    assert "Source file: conversations_2025.json" in imported and f"File SHA-256: {'ab' * 32}" in imported
    assert "Turn 2 (participant): " + IMPORTED_CITATION.removesuffix("; turn 2; coded by arjun, olivia") in imported


def test_qdpx_round_trip_brings_the_provenance_back(cited):
    result = project_import_qdpx(source=_qdpx(cited.project), owner=cited.owner, name="Round trip", filename="rt.qdpx")
    assert result.warnings == ["Kept as names only (no account here; their codings are yours, with their name kept): "
                               "Arjun Analyst."]  # the other coder: nobody mapped them to an account
    interview = Interview.objects.get(project=result.project, title="Live on home")
    assert "Model id: gpt-4o" in interview.metadata["qdpx"]["description"].splitlines()
    assert "system fingerprint fp_44709d6fcb" in interview.metadata["qdpx"]["description"]
    answer = interview.turns.get(position=1)
    assert (answer.model_slug, answer.timestamp) == ("gpt-4o-2024-08-06", ANSWERED)
    assert answer.metadata["provenance_in_file"] == LIVE_CITATION.removesuffix("; turn 2; coded by olivia")
    assert ("Provenance in file", answer.metadata["provenance_in_file"]) in turn_provenance(answer)
    question = interview.turns.get(position=0)
    assert "provenance_in_file" not in question.metadata
