"""Excerpt tables quote what the reader saw: no Markdown debris in any format, bold and italics kept where the
format can, and every quote maps back to the stored source through its offsets."""

from __future__ import annotations

import csv
import io
import zipfile

import openpyxl
import pytest
from django.http import QueryDict

from coding.models import Code, Coding
from interviews.models import Interview, Participant, Segment, Speaker, Turn
from interviews.rendering import RichText
from interviews.segment_store import segments_for_turns
from reports.excerpts import excerpt_options, excerpt_rows, spec_from_query
from reports.tests.test_views import compiles
from reports.writers import Table, iter_table, write_table

pytestmark = pytest.mark.django_db

ANSWER = ("I would describe my view in three parts:\n\n"
          "- First, I try to be **honest** about what I know.\n"
          "- Second, I weigh *everyone's* interests.\n\n"
          "| Model | Verdict |\n|---|---|\n| GPT-4o | **fair** |\n\n"
          "## Math\n\nChatGPT writes \\( x^2 \\) as written.")


@pytest.fixture
def coded(project, owner):
    participant = Participant.objects.create(project=project, label="GPT-4o")
    interview = Interview.objects.create(project=project, participant=participant, title="Fairness")
    turns = Turn.objects.bulk_create([Turn(interview=interview, position=0, speaker=Speaker.INTERVIEWER, text="Why?"),
                                      Turn(interview=interview, position=1, speaker=Speaker.PARTICIPANT, text=ANSWER)])
    Segment.objects.bulk_create(segments_for_turns(interview, turns))
    code = Code.objects.create(project=project, name="Values")
    segments = Segment.objects.filter(interview=interview, speaker=Speaker.PARTICIPANT).order_by("position")
    for segment in segments:
        if any(word in segment.text for word in ("First", "Second", "GPT-4o", "ChatGPT")):
            Coding.objects.create(segment=segment, code=code, coder=owner, interview=interview)
    return project


def _rows(project, query=""):
    spec = spec_from_query(excerpt_options(project), QueryDict("columns=quote" + query))
    return spec, list(excerpt_rows(project, spec))


EXPECTED = ["First, I try to be honest about what I know.\nSecond, I weigh everyone's interests.",
            "GPT-4o | fair", "ChatGPT writes \\( x^2 \\) as written."]


def test_quotes_are_what_the_reader_saw_and_map_back_to_the_source(coded):
    _, rows = _rows(coded)
    assert [str(r.quote) for r in rows] == EXPECTED
    for row in rows:
        assert isinstance(row.quote, RichText)
        for run in row.quote.runs:
            if run.start is not None:  # offsets into the excerpt's source, itself turn.text[start:end]
                assert run.text in ANSWER
        assert "**" not in row.quote and not row.quote.startswith(("- ", "1. ", "|"))


def test_the_markdown_source_stays_available(coded):
    _, rows = _rows(coded, "&quotes=markdown")
    assert rows[0].quote.startswith("- First, I try to be **honest**")


def _table(project, query=""):
    spec, rows = _rows(project, query)
    return Table(caption="Quotes", headers=spec.headers, rows=[r.values(spec.columns) for r in rows])


def test_csv_xlsx_and_markdown_cells_are_plain_text(coded):
    table = _table(coded)
    text = b"".join(iter_table("csv", table)).decode("utf-8-sig")
    assert [row[0] for row in csv.reader(io.StringIO(text))][1:] == EXPECTED
    out = io.BytesIO()
    write_table("xlsx", _table(coded), out)
    sheet = openpyxl.load_workbook(io.BytesIO(out.getvalue())).active
    assert [row[0].value for row in sheet.iter_rows(min_row=2)] == EXPECTED
    markdown = b"".join(iter_table("md", _table(coded))).decode()
    body = markdown.split("|---|", 1)[1]  # the caption above is the writer's own bold
    assert "honest about" in body and "**" not in body and "\n| - " not in body


def test_docx_carries_bold_and_italics_as_runs(coded):
    out = io.BytesIO()
    write_table("docx", _table(coded), out)
    xml = zipfile.ZipFile(io.BytesIO(out.getvalue())).read("word/document.xml").decode()
    assert '<w:r><w:rPr><w:b/></w:rPr><w:t xml:space="preserve">honest</w:t></w:r>' in xml
    assert '<w:r><w:rPr><w:i/></w:rPr><w:t xml:space="preserve">everyone\'s</w:t></w:r>' in xml
    assert "**" not in xml


def test_latex_uses_textbf_and_emph_and_compiles(coded, tmp_path):
    tex = b"".join(iter_table("tex", _table(coded))).decode()
    assert r"\textbf{honest}" in tex and r"\emph{everyone\textquotesingle{}s}" in tex and r"\textbf{fair}" in tex
    assert r"\textbackslash{}( x\textasciicircum{}2 \textbackslash{})" in tex
    compiles(tex, tmp_path)


def test_codings_from_accepted_ai_suggestions_can_be_left_out_and_the_caption_says_so(coded, owner):
    from reports.exports import excerpt_caption

    first = Coding.objects.order_by("segment__position").first()
    Coding.objects.filter(pk=first.pk).update(origin=Coding.Origin.SUGGESTION)
    spec, with_all = _rows(coded, "&columns=provenance")
    assert "(accepted AI suggestion)" in with_all[0].provenance
    assert "left out" not in excerpt_caption(coded, spec)
    spec, human_only = _rows(coded, "&suggestions=exclude")
    assert [str(r.quote) for r in human_only] == [EXPECTED[0].split("\n")[1], *EXPECTED[1:]]
    assert excerpt_caption(coded, spec).endswith("Codings made by accepting AI suggestions are left out")


def test_the_frequency_table_can_leave_out_accepted_ai_suggestions(coded):
    from reports import frequency

    first = Coding.objects.order_by("segment__position").first()
    Coding.objects.filter(pk=first.pk).update(origin=Coding.Origin.SUGGESTION)
    population = frequency.Population.of(coded)
    with_all = frequency.frequency_table(coded, frequency.spec_from_query(population, QueryDict("")), population)
    human = frequency.frequency_table(coded, frequency.spec_from_query(population, QueryDict("suggestions=exclude")),
                                      population)
    assert with_all.rows[0].counts == [4] and human.rows[0].counts == [3]
    assert "left out" not in with_all.note() and "AI suggestions are left out" in human.note()
