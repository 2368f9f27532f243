"""One faithful text from import to paper, over a nasty corpus (interviews/tests/nasty_corpus.py).

The same interview is imported from every transcript format; its segments are coded; then every place a researcher
reads, codes or quotes a segment is compared with it, character for character: the stored turns, the coding
workspace, code and theme pages, every excerpt table format, the .qdpx (its plain text source and selections, and a
re-import) and a backup restored.
"""

from __future__ import annotations

import csv
import io
import re
import zipfile
from collections import defaultdict

import openpyxl
import pytest
from django.http import QueryDict
from lxml import etree

import refiqda
from coding.models import Code, Coding
from interviews.models import Interview, Segment, Speaker, Turn
from interviews.rendering import quote_html, quote_runs, quote_text, visible_runs
from interviews.segmentation import segment_text
from interviews.services_import import ImportOptions, import_paths
from interviews.tests import nasty_corpus
from projects.text import formula_unguarded
from reports.backup import project_backup, project_restore
from reports.excerpts import excerpt_options, excerpt_rows, spec_from_query
from reports.exchange import project_export_qdpx, project_import_qdpx
from reports.writers import FORMULA_START, Table, iter_table, write_table

pytestmark = pytest.mark.django_db
FORMATS = list(nasty_corpus.interview_files())


@pytest.fixture
def imported(project, owner, tmp_path):
    """The nasty interview imported once from each format (the interview's title is its format)."""
    for fmt, (name, data) in nasty_corpus.interview_files().items():
        path = tmp_path / name
        path.write_bytes(data)
        before = set(Interview.objects.filter(project=project).values_list("pk", flat=True))
        import_paths(project=project, user=owner, paths=[str(path)],
                     options=ImportOptions(allow_duplicates=True, participant="new:Nasty bot"))
        new = Interview.objects.filter(project=project).exclude(pk__in=before)
        assert new.count() == 1, fmt
        new.update(title=fmt)
    return project


@pytest.fixture
def coded(imported, owner):
    """Every participant segment coded: "Odd" and "Even" alternate (so each excerpt is one segment), "Whole" on all
    (so each answer is one excerpt of many segments)."""
    odd, even, whole = (Code.objects.create(project=imported, name=n) for n in ("Odd", "Even", "Whole"))
    rows = []
    for seg in Segment.objects.filter(interview__project=imported, speaker=Speaker.PARTICIPANT).select_related("interview"):
        rows += [Coding(segment=seg, code=odd if seg.position % 2 else even, coder=owner, interview=seg.interview),
                 Coding(segment=seg, code=whole, coder=owner, interview=seg.interview)]
    Coding.objects.bulk_create(rows)
    return imported


def _turns(project) -> dict[str, list[tuple[str, str]]]:
    return {iv.title: [(t.speaker, t.text) for t in iv.turns.order_by("position")]
            for iv in Interview.objects.filter(project=project)}


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_importer_keeps_every_answer_exactly(imported, fmt):
    assert _turns(imported)[fmt] == nasty_corpus.expected_turns(fmt)


def test_every_segment_is_its_turns_text_between_its_offsets(imported):
    for seg in Segment.objects.filter(interview__project=imported).select_related("turn"):
        assert seg.text == seg.turn.text[seg.start:seg.end]


def _shown(runs, offset: int = 0) -> str:
    """The characters of the source a quote shows (separators left out), in order."""
    return "".join(run.text for run in runs if run.start is not None).strip()


@pytest.mark.parametrize("answer", nasty_corpus.ANSWERS, ids=range(len(nasty_corpus.ANSWERS)))
def test_each_segment_alone_shows_what_it_shows_in_its_turn(answer):
    """The coding workspace shows each segment alone (quote_html); the Read view the whole turn: one renderer, one
    reading, so a coded sentence says what the researcher read."""
    whole = [(run.start + i, char) for run in visible_runs(answer) if run.start is not None
             for i, char in enumerate(run.text)]
    for span in segment_text(answer):
        within = "".join(char for at, char in whole if span.start <= at < span.end).strip()
        assert _shown(quote_runs(answer[span.start:span.end])) == within, answer[span.start:span.end]


# --- excerpt tables ------------------------------------------------------------------------------------------------


def _excerpts(project, code: str):
    """(expected quote, turn number, offsets, row) for each excerpt of `code` in the excerpt table."""
    spec = spec_from_query(excerpt_options(project), QueryDict(
        f"columns=interview&columns=turn&columns=quote&columns=offsets&codes={Code.objects.get(project=project, name=code).uuid}"))
    rows = list(excerpt_rows(project, spec))
    return spec, rows


def _expected_quotes(project, code: str) -> list[tuple[str, int, str]]:
    """What each excerpt of `code` must say: the quote of its turn's text between its first and last segment."""
    runs: dict[tuple, list[Segment]] = defaultdict(list)
    for c in Coding.objects.filter(code__name=code, code__project=project).select_related("segment__turn", "interview"):
        runs[(c.interview.title, c.segment.turn.position)].append(c.segment)
    out = []
    for (title, _), segs in runs.items():
        segs.sort(key=lambda s: s.position)
        groups = [[segs[0]]]
        for s in segs[1:]:
            (groups[-1].append(s) if s.position == groups[-1][-1].position + 1 else groups.append([s]))
        for g in groups:
            turn = g[0].turn
            out.append((title, turn.number, f"{g[0].start}–{g[-1].end}", str(quote_text(turn.text[g[0].start:g[-1].end]))))
    return out


@pytest.mark.parametrize("code", ["Odd", "Whole"])
def test_the_excerpt_rows_quote_the_coded_text(coded, code):
    spec, rows = _excerpts(coded, code)
    got = sorted((r.interview, r.turn, r.offsets, str(r.quote)) for r in rows)
    assert got == sorted(_expected_quotes(coded, code))


# XML 1.0 cannot carry control characters but tab, line feed and carriage return, even escaped: Excel and Word files
# leave them out, a .qdpx's project file (selection names) shows U+FFFD; its plain text source keeps them.
_NOT_IN_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f]")


def _in_xml(text: str, lost: str = "") -> str:
    return _NOT_IN_XML.sub(lost, text)


def _table(project, code):
    spec, rows = _excerpts(project, code)
    return Table(caption="Quotes", headers=spec.headers, rows=[r.values(spec.columns) for r in rows]), rows


def test_quotes_that_start_like_formulas_are_coded(coded):
    starts = {str(r.quote)[:1] for code in ("Odd", "Even") for r in _excerpts(coded, code)[1]}
    assert starts >= {"=", "+", "-", "@"}


@pytest.mark.parametrize("code", ["Odd", "Even", "Whole"])
def test_csv_and_xlsx_cells_hold_the_quotes_guarded_alike(coded, code):
    """The quotes, with the one documented change: an apostrophe before a quote a spreadsheet would run as a formula,
    the same in both formats, which our own imports take off."""
    table, rows = _table(coded, code)
    quotes = [str(r.quote) for r in rows]
    text = b"".join(iter_table("csv", table)).decode("utf-8-sig")
    in_csv = [row[2] for row in csv.reader(io.StringIO(text, newline=""))][1:]
    out = io.BytesIO()
    write_table("xlsx", _table(coded, code)[0], out)
    sheet = openpyxl.load_workbook(io.BytesIO(out.getvalue())).active
    in_xlsx = [row[2].value for row in sheet.iter_rows(min_row=2)]
    guarded = [("'" + q if q.startswith(FORMULA_START) else q) for q in quotes]
    assert in_csv == guarded and in_xlsx == [_in_xml(q) for q in guarded]
    assert [formula_unguarded(cell) for cell in in_csv] == quotes


_MD_ESCAPE = re.compile(r"\\([\\`*_\[\]<>|~#&$])")


@pytest.mark.parametrize("code", ["Odd", "Whole"])
def test_markdown_cells_read_back_as_the_quotes(coded, code):
    table, rows = _table(coded, code)
    lines = b"".join(iter_table("md", table)).decode().split("\n")[4:]
    cells = [re.split(r"(?<!\\)\|", line)[3].strip() for line in lines if line.startswith("| ")]
    back = [_MD_ESCAPE.sub(r"\1", c).replace("<br>", "\n") for c in cells]
    assert back == [str(r.quote).strip() for r in rows]


@pytest.mark.parametrize("code", ["Odd", "Even", "Whole"])
def test_the_markdown_table_rendered_by_a_markdown_renderer_shows_the_quotes(coded, code):
    """The .md goes into a paper or a README: a CommonMark renderer must show each quote as it is, entities
    ("&amp;") and all."""
    import html as html_lib

    from markdown_it import MarkdownIt

    table, rows = _table(coded, code)
    rendered = MarkdownIt("commonmark").enable("table").render(b"".join(iter_table("md", table)).decode())
    cells = re.findall(r"<tr>\n<td>.*?</td>\n<td>.*?</td>\n<td>(.*?)</td>", rendered, re.S)
    shown = [html_lib.unescape(re.sub(r"<(?!br)[^>]*>", "", c).replace("<br />", "\n").replace("<br>", "\n"))
             for c in cells]
    assert shown == [str(r.quote).strip() for r in rows]


@pytest.mark.parametrize("code", ["Odd", "Whole"])
def test_docx_cells_hold_the_quotes(coded, code):
    import docx

    table, rows = _table(coded, code)
    out = io.BytesIO()
    write_table("docx", table, out)
    document = docx.Document(io.BytesIO(out.getvalue()))
    cells = [row.cells[2].text for row in document.tables[0].rows[1:]]
    assert cells == [_in_xml(str(r.quote)) for r in rows]


# --- pages ---------------------------------------------------------------------------------------------------------


def test_the_coding_workspace_shows_each_segment_as_quoted(coded, client_for, owner):
    from django.urls import reverse

    client = client_for(owner)
    for iv in Interview.objects.filter(project=coded):
        page = client.get(reverse("coding:workspace", args=[coded.uuid, iv.uuid])).content.decode()
        for seg in Segment.objects.filter(interview=iv):
            assert f'<span class="st">{quote_html(seg.text)}</span>' in page


# --- REFI-QDA ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("positions", ["codepoints", "utf16"])
def test_qdpx_selections_point_at_the_coded_characters(coded, positions):
    out = io.BytesIO()
    project_export_qdpx(project=coded, out=out, positions=positions)
    with zipfile.ZipFile(io.BytesIO(out.getvalue())) as zf:
        root = etree.fromstring(zf.read("project.qde"))
        texts = {name.split("/")[-1][:-4]: zf.read(name).decode("utf-8") for name in zf.namelist()
                 if name.startswith("sources/")}
    ns = {"q": "urn:QDA-XML:project:1.0"}
    coded_texts = set()
    for c in Coding.objects.filter(interview__project=coded).select_related("segment"):
        coded_texts.add(c.segment.text)
    checked = 0
    for src in root.iterfind(".//q:TextSource", ns):
        text = texts[src.get("plainTextPath").split("/")[-1][:-4]]
        assert "\r" in text
        units = text.encode("utf-16-le") if positions == "utf16" else None
        for sel in src.iterfind("q:PlainTextSelection", ns):
            start, end = int(sel.get("startPosition")), int(sel.get("endPosition"))
            chosen = units[2 * start:2 * end].decode("utf-16-le") if units is not None else text[start:end]
            assert _in_xml(chosen, lost="\ufffd") == sel.get("name")  # the .txt holds them, the name says where
            checked += 1
    assert checked


def _codings(project) -> list[tuple]:
    return sorted((c.interview.title, c.segment.turn.position, c.segment.text, c.code.name)
                  for c in Coding.objects.filter(interview__project=project).select_related("interview", "segment__turn", "code"))


@pytest.mark.parametrize("positions", ["codepoints", "utf16"])
def test_a_qdpx_export_reimported_gives_the_same_texts_and_codings(coded, owner, positions):
    out = io.BytesIO()
    project_export_qdpx(project=coded, out=out, positions=positions)
    result = project_import_qdpx(source=out.getvalue(), owner=owner, name="Back")
    assert _turns(result.project) == _turns(coded)
    assert _codings(result.project) == _codings(coded)
    assert _segments(result.project) == _segments(coded)  # the same coding units, at the same offsets
    again = io.BytesIO()
    project_export_qdpx(project=result.project, out=again, positions=positions)
    assert _sources_and_selections(again.getvalue()) == _sources_and_selections(out.getvalue())


def _segments(project) -> list[tuple]:
    return sorted(Segment.objects.filter(interview__project=project).values_list(
        "interview__title", "turn__position", "start", "end", "kind", "text"))


def _sources_and_selections(data: bytes) -> list[tuple]:
    """Each source's plain text and its coded selections (positions, name, code names): what another tool reads."""
    parsed = refiqda.read_project(data)
    codes = {guid: code.name for guid, code in parsed.codes_by_guid().items()}
    return sorted((src.name, src.text, tuple(sorted(
        (sel.start, sel.end, sel.name or "", tuple(sorted(codes.get(refiqda.norm_guid(c.code_guid), "") for c in sel.codings)))
        for sel in src.selections if sel.codings))) for src in parsed.sources)


def test_a_backup_restored_gives_the_same_texts_and_codings(coded, owner):
    out = io.BytesIO()
    project_backup(project=coded, out=out)
    result = project_restore(source=out.getvalue(), owner=owner, name="Restored", people={owner.username: owner})
    assert _turns(result.project) == _turns(coded)
    assert _codings(result.project) == _codings(coded)
    assert sorted(Segment.objects.filter(interview__project=result.project).values_list("start", "end", "text", "kind")) == \
        sorted(Segment.objects.filter(interview__project=coded).values_list("start", "end", "text", "kind"))
    assert Turn.objects.filter(interview__project=result.project).count() == Turn.objects.filter(interview__project=coded).count()


# Every page that shows a segment shows it through the one renderer: what the researcher coded, as it read.
MARKDOWN_ITEM = "- Answer **questions**"


def _item(project) -> Segment:
    return Segment.objects.get(interview__project=project, interview__title="chatgpt", text=MARKDOWN_ITEM)


def _page(client, name: str, *args, **query) -> str:
    from django.urls import reverse

    response = client.get(reverse(name, args=args), query)
    assert response.status_code == 200, (name, response.status_code)
    return response.content.decode()


def _shows_the_quote(page: str, segment: Segment) -> None:
    assert str(quote_html(segment.text)) in page  # "Answer <strong>questions</strong>"
    assert segment.text not in page  # not the Markdown source, "- Answer **questions**"


def test_the_coder_comparison_shows_segments_as_quoted(coded, client_for, owner, analyst):
    item = _item(coded)
    Coding.objects.create(segment=item, code=Code.objects.get(project=coded, name="Odd"), coder=analyst,
                          interview=item.interview)
    page = _page(client_for(owner), "coding:compare", coded.uuid, item.interview.uuid, a=owner.pk, b=analyst.pk)
    _shows_the_quote(page, item)


def test_the_split_forms_excerpts_are_shown_as_quoted(coded, client_for, owner):
    item = _item(coded)
    code = Coding.objects.exclude(code__name="Whole").get(segment=item).code
    _shows_the_quote(_page(client_for(owner), "coding:code_split_excerpts", coded.uuid, code.uuid), item)


def _reader_run(project, segment: Segment, code: Code):
    from coding.models import ReaderStep, Suggestion, SuggestionRun

    run = SuggestionRun.objects.create(project=project, model="m", endpoint_url="http://x", prompt_version="1",
                                       codebook=[{"id": code.pk, "name": code.name}], windows=[[segment.pk]])
    ReaderStep.objects.create(run=run, window=0, agent=ReaderStep.Agent.CODER, ok=True, request={},
                              provenance={"dropped": []})
    Suggestion.objects.create(run=run, segment=segment, interview=segment.interview, code=code, rationale="Asked.")
    return run


def test_the_second_readers_suggestions_and_differences_show_segments_as_quoted(coded, client_for, owner):
    item = _item(coded)
    run = _reader_run(coded, item, Code.objects.create(project=coded, name="Questions"))
    client = client_for(owner)
    _shows_the_quote(_page(client, "coding:reader_run", coded.uuid, run.uuid), item)
    _shows_the_quote(_page(client, "coding:reader_differ", coded.uuid, run.uuid), item)


def test_a_themes_exemplars_are_shown_as_quoted(coded, client_for, owner):
    from themes.models import Exemplar, Theme, ThemeCode
    from themes.services import exemplar_pin

    item = _item(coded)
    theme = Theme.objects.create(project=coded, name="Service")
    ThemeCode.objects.create(theme=theme, code=Code.objects.get(project=coded, name="Whole"))
    exemplar_pin(theme=theme, actor=owner, segment=item)
    assert Exemplar.objects.get(theme=theme).quote == item.text  # the source, checked word for word
    page = _page(client_for(owner), "themes:detail", coded.uuid, theme.uuid)
    shown = page.split('id="exemplars"', 1)[1].split("</section>", 1)[0]
    assert f"<blockquote>“{quote_html(item.text)}”</blockquote>" in shown


def test_the_excerpt_page_says_how_spreadsheet_cells_are_guarded(coded, client_for, owner):
    page = _page(client_for(owner), "reports:excerpts", coded.uuid)
    assert 'id="formula-guard"' in page and "gets an apostrophe (') before it" in page


@pytest.mark.parametrize("engine", ["pdflatex", "lualatex"])
def test_the_latex_table_compiles_and_prints_the_quotes_characters(coded, tmp_path, engine):
    """Both engines compile the corpus; LuaLaTeX prints it (pdfLaTeX prints code points for what its fonts lack, and
    pdftotext cannot tell its quotes apart). Compared without spacing: lines break anywhere in a narrow column."""
    import shutil
    import subprocess

    if not shutil.which(engine) or not shutil.which("pdftotext"):
        pytest.skip(f"{engine} and pdftotext are needed (scripts/ensure-tex installs them)")
    table, _ = _table(coded, "Whole")
    (tmp_path / "t.tex").write_bytes(b"".join(iter_table("tex", table)))
    result = subprocess.run([engine, "-interaction=nonstopmode", "-halt-on-error", "t.tex"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=1800)
    assert result.returncode == 0, result.stdout[-3000:]
    if engine == "pdflatex":
        return
    printed = "".join(subprocess.run(["pdftotext", "t.pdf", "-"], cwd=tmp_path, capture_output=True, text=True,
                                     check=True).stdout.split())
    for shown in ["<!-- comment -->", "alert('x')</script>", "$x_1 + x_2$", "\\( a_i^2 \\)", "&lt;b&gt; shows <b>.",
                  "“it’s fine” — really…", "‘Single’ quotes, «guillemets» and „low“ quotes – en dash.",
                  "=HYPERLINK(\"http://evil.example\",\"x\")", "-5 °C is cold.", "snake_case_name and file__name__here"]:
        assert "".join(shown.split()) in printed, shown


@pytest.mark.parametrize("fmt", ["csv", "xlsx", "docx", "md"])
def test_quotes_kept_as_markdown_source_are_the_source_in_every_format(coded, fmt):
    """"Keep the Markdown source in quotes": the coded characters as stored, CRLF, tabs and trailing spaces included."""
    import docx

    spec = spec_from_query(excerpt_options(coded), QueryDict(
        f"columns=interview&columns=turn&columns=quote&quotes=markdown&codes={Code.objects.get(project=coded, name='Whole').uuid}"))
    rows = list(excerpt_rows(coded, spec))
    expected = [r.quote for r in rows]
    assert any("\r\n" in q for q in expected) and any("\r" in q.replace("\r\n", "") for q in expected)
    table = Table(caption="Quotes", headers=spec.headers, rows=[r.values(spec.columns) for r in rows])
    out = io.BytesIO()
    write_table(fmt, table, out)
    data = out.getvalue()
    if fmt == "csv":
        got = [formula_unguarded(row[2]) for row in csv.reader(io.StringIO(data.decode("utf-8-sig"), newline=""))][1:]
    elif fmt == "xlsx":
        got = [formula_unguarded(row[2].value) for row in openpyxl.load_workbook(io.BytesIO(data)).active.iter_rows(min_row=2)]
        expected = [_in_xml(q) for q in expected]
    elif fmt == "docx":
        got = [row.cells[2].text for row in docx.Document(io.BytesIO(data)).tables[0].rows[1:]]
        expected = [_in_xml(q).replace("\r\n", "\n").replace("\r", "\n") for q in expected]  # one kind of line break
    else:
        lines = data.decode().split("\n")[4:]
        got = [_MD_ESCAPE.sub(r"\1", re.split(r"(?<!\\)\|", line)[3].strip()).replace("<br>", "\n")
               for line in lines if line.startswith("| ")]
        expected = [q.replace("\r\n", "\n").replace("\r", "\n").strip() for q in expected]
    assert got == expected


@pytest.mark.parametrize("code", ["Odd", "Whole"])
def test_a_codes_excerpts_page_shows_each_excerpt_as_quoted(coded, client_for, owner, code):
    c = Code.objects.get(project=coded, name=code)
    page = _page(client_for(owner), "coding:excerpts", coded.uuid, c.uuid)
    shown = re.findall(r'<blockquote class="excerpt"><p>(.*?)</p>', page, re.S)
    by_turn: dict[int, list[Segment]] = defaultdict(list)
    for coding in Coding.objects.filter(code=c).select_related("segment__turn"):
        by_turn[coding.segment.turn_id].append(coding.segment)
    expected = set()
    for segs in by_turn.values():
        segs.sort(key=lambda s: s.position)
        runs = [[segs[0]]]
        for s in segs[1:]:
            (runs[-1].append(s) if s.position == runs[-1][-1].position + 1 else runs.append([s]))
        expected |= {str(quote_html(run[0].turn.text[run[0].start:run[-1].end])) for run in runs}
    assert shown and set(shown) <= expected  # the page shows a few interviews at a time


def test_a_themes_excerpts_are_shown_as_quoted(coded, client_for, owner):
    from themes.models import Theme, ThemeCode

    theme = Theme.objects.create(project=coded, name="All of it")
    ThemeCode.objects.create(theme=theme, code=Code.objects.get(project=coded, name="Whole"))
    page = _page(client_for(owner), "themes:detail", coded.uuid, theme.uuid)
    shown = re.findall(r"<blockquote>(.*?)</blockquote>", page, re.S)
    answers = {str(quote_html(t.text[s.start:e.end])) for t in Turn.objects.filter(interview__project=coded,
                                                                                    speaker=Speaker.PARTICIPANT)
               for s, e in [(t.segments.order_by("position").first(), t.segments.order_by("position").last())]}
    assert shown and set(shown) <= answers


def test_the_read_view_and_the_segments_view_show_every_turn_and_segment_through_the_one_renderer(coded, client_for,
                                                                                                   owner):
    from interviews.rendering import markdown_to_safe_html

    client = client_for(owner)
    interview = Interview.objects.get(project=coded, title="chatgpt")
    read = _page(client, "interviews:interview_detail", coded.uuid, interview.uuid, view="read")
    for turn in interview.turns.all():
        assert markdown_to_safe_html(turn.text) in read
        assert f"#{turn.number}</span>" in read  # the number excerpt tables cite
    segments = _page(client, "interviews:interview_detail", coded.uuid, interview.uuid, view="segments")
    for seg in interview.segments.all():
        assert f'<span class="segment-text">{quote_html(seg.text)}</span>' in segments


def test_the_excerpt_preview_shows_the_quotes_as_exported(coded, client_for, owner):
    code = Code.objects.get(project=coded, name="Odd")
    page = _page(client_for(owner), "reports:excerpts", coded.uuid, columns=["interview", "turn", "quote"],
                 codes=str(code.uuid))
    _, rows = _excerpts(coded, "Odd")
    from interviews.rendering import runs_html

    shown = [r for r in rows if f"<td>{runs_html(r.quote.runs)}</td>" in page]
    assert shown and len(shown) >= min(len(rows), 20)


def test_evidence_quoting_the_sentence_as_shown_or_as_written_is_a_quote(coded):
    """The suggestions page shows the sentence rendered: evidence in its shown words ("Answer questions") is as much
    a quote as evidence in its Markdown ("**questions**")."""
    from coding.models import Suggestion

    item = _item(coded)
    run = _reader_run(coded, item, Code.objects.create(project=coded, name="Questions"))
    suggestion = Suggestion.objects.get(run=run)
    for evidence, quoted in [("Answer questions", True), ("**questions**", True), ("Answer all questions", False)]:
        suggestion.evidence = evidence
        assert suggestion.evidence_is_quote is quoted, evidence
