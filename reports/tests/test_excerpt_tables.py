# The `world` fixture is imported from tables_world; pytest injects it by argument name.
# ruff: noqa: F811
"""Excerpt tables that go into papers: a long LaTeX table compiles with every row, provenance columns, sub-codes,
codes in no theme, one page setting for DOCX and LaTeX, and one filename scheme for every download."""

from __future__ import annotations

import io
import re
import shutil
import subprocess

import docx
import pytest
from django.http import QueryDict
from django.urls import reverse

from coding.models import Code
from interviews.models import Segment, Speaker, Turn
from reports.excerpts import NO_THEME, ExcerptSpec, excerpt_options, excerpt_rows, spec_from_query
from reports.exports import excerpt_table
from reports.tests.tables_world import _interview, code, seg, world  # noqa: F401 - fixture
from reports.writers import iter_table, page_from_query, write_table

pytestmark = pytest.mark.django_db


def rows(w, query: str, **kw):
    options = excerpt_options(w.project)
    return list(excerpt_rows(w.project, spec_from_query(options, QueryDict(query)), options=options, **kw))


def test_a_500_row_excerpt_table_compiles_to_a_multi_page_pdf_with_every_row(world, tmp_path):
    if not shutil.which("pdflatex"):
        pytest.skip("no TeX engine installed (scripts/ensure-tex installs one)")
    import pypdf

    # 500 sentences of one answer, coded alternately with two codes so no two neighbours join into one excerpt.
    text = " ".join(f"Quote Q{i:04d}Z says that home is where the heart is, in a sentence long enough to wrap." for i in range(500))
    iv = _interview(world.project, world.gpt, "Long answer", [text], world.owner)
    a, b = Code.objects.create(project=world.project, name="Odd"), Code.objects.create(project=world.project, name="Even")
    for s in Segment.objects.filter(interview=iv, speaker=Speaker.PARTICIPANT).order_by("position"):
        code(a if s.position % 2 else b, s, world.owner)
    options = excerpt_options(world.project)
    spec = spec_from_query(options, QueryDict(f"codes={a.uuid}&codes={b.uuid}&columns=code&columns=turn&columns=quote"
                                              "&columns=offsets&columns=turn_id&columns=provenance"))
    tex = b"".join(iter_table("tex", excerpt_table(world.project, spec, options=options))).decode()
    (tmp_path / "t.tex").write_text(tex, encoding="utf-8")
    for _ in range(2):  # longtable settles its column widths on the second run
        result = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "t.tex"], cwd=tmp_path,
                                capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stdout[-3000:]
    pdf = pypdf.PdfReader(tmp_path / "t.pdf")
    text = "".join(page.extract_text() for page in pdf.pages)
    assert len(pdf.pages) > 10
    assert {int(n) for n in re.findall(r"Q(\d{4})Z", text)} == set(range(500))
    assert text.count("Turn id") == len(pdf.pages)  # the header repeats on every page
    assert "Overfull \\hbox" not in (tmp_path / "t.log").read_text(errors="replace")


def test_provenance_columns_locate_the_quote(world):
    got = rows(world, "columns=turn&columns=offsets&columns=interview_id&columns=turn_id&columns=response_id&columns=quote"
                      f"&codes={world.codes['AI self'].uuid}")
    assert len(got) == 1
    row = got[0]
    turn = Turn.objects.get(uuid=row.turn_id)
    start, end = (int(x) for x in row.offsets.split("–"))
    assert turn.text[start:end] == row.quote == "I have no home."
    assert row.interview_id == str(world.interviews["claude"].uuid) and turn.interview_id == world.interviews["claude"].pk
    assert row.response_id == ""  # the fixture's imported turns name no message ids


def test_response_ids_of_live_and_imported_turns(world):
    live_turn = seg(world.interviews["gpt"], "Home is a feeling.").turn
    live_turn.metadata = {"provenance": {"response_id": "chatcmpl-42", "model_returned": "gpt-4o"}}
    live_turn.save(update_fields=["metadata"])
    imported = seg(world.interviews["claude"], "I have no home.").turn
    imported.metadata = {"message_ids": ["m-1", "m-2"]}
    imported.save(update_fields=["metadata"])
    by_quote = {r.quote: r.response_id for r in rows(world, "columns=quote&columns=response_id")}
    assert by_quote["Home is a feeling. It grows with time."] == "chatcmpl-42"
    assert by_quote["I have no home."] == "m-1, m-2"


def test_include_sub_codes(world):
    feeling, structure = world.codes["Feeling"], world.codes["Structure"]
    structure.parent = feeling
    structure.save(update_fields=["parent"])
    assert {r.code for r in rows(world, f"codes={feeling.uuid}&columns=code&columns=quote")} == {"Feeling"}
    both = rows(world, f"codes={feeling.uuid}&subcodes=1&columns=code&columns=quote")
    assert {r.code for r in both} == {"Feeling", "Structure"}
    options = excerpt_options(world.project)
    spec = spec_from_query(options, QueryDict(f"codes={feeling.uuid}&subcodes=1"))
    from reports.excerpts import spec_to_params

    assert spec_to_params(spec, options)["codes"] == [str(feeling.uuid)] and spec_to_params(spec, options)["subcodes"] == ["1"]


def test_all_coded_excerpts_include_codes_in_no_theme(world):
    loose = Code.objects.create(project=world.project, name="Loose", position=9)
    code(loose, seg(world.interviews["gpt"], "Costs rose"), world.owner)
    got = rows(world, "columns=theme&columns=code&columns=quote")
    assert ("(no theme)", "Loose") in {(r.theme, r.code) for r in got} and NO_THEME == "(no theme)"
    # Themed rows keep their theme; a theme filter still lists only that theme's codes.
    assert ("Limits", "Structure") in {(r.theme, r.code) for r in got}
    filtered = rows(world, f"columns=theme&columns=code&themes={world.themes['other'].uuid}")
    assert {r.code for r in filtered} == {"Structure"}


def test_one_page_setting_for_docx_and_latex(world):
    page = page_from_query(QueryDict("paper=letter&orientation=portrait"))
    options = excerpt_options(world.project)
    spec = ExcerptSpec(columns=("theme", "subtheme", "code", "model", "interview", "quote"))
    tex = b"".join(iter_table("tex", excerpt_table(world.project, spec, options=options, page=page))).decode()
    assert "\\usepackage[letterpaper,margin=2cm]{geometry}" in tex  # six columns, yet portrait as asked
    out = io.BytesIO()
    write_table("docx", excerpt_table(world.project, spec, options=options, page=page), out)
    section = docx.Document(io.BytesIO(out.getvalue())).sections[0]
    assert (round(section.page_width.inches, 2), round(section.page_height.inches, 2)) == (8.5, 11.0)
    landscape = page_from_query(QueryDict("paper=a4&orientation=landscape"))
    tex = b"".join(iter_table("tex", excerpt_table(world.project, ExcerptSpec(columns=("quote",)), page=landscape))).decode()
    assert "\\usepackage[a4paper,margin=2cm,landscape]{geometry}" in tex
    assert page_from_query(QueryDict("paper=tabloid")) == {"paper": "a4", "landscape": None}


def test_the_export_form_offers_the_page_and_the_job_keeps_it(world, client_for, owner, settings):
    url = reverse("reports:excerpts", args=[world.project.uuid])
    html = client_for(owner).get(url).content.decode()
    assert 'name="paper"' in html and 'name="orientation"' in html and 'name="subcodes"' in html
    from reports.exports import query_params

    assert query_params(QueryDict("paper=letter&orientation=landscape&subcodes=1")) == {
        "subcodes": ["1"], "paper": ["letter"], "orientation": ["landscape"]}


FILENAME = r'filename="Chatbots-and-identity-{what}-\d{{8}}\.{ext}"'


@pytest.mark.parametrize(("name", "method", "query", "what", "ext"), [
    ("excerpts_export", "post", {"format": "docx"}, "excerpts", "docx"),
    ("frequency_export", "get", {"format": "csv"}, "code-frequency", "csv"),
    ("frequency_export", "get", {"format": "png"}, "code-frequency", "png"),
    ("statistics_download", "get", {}, "interview-statistics", "tex"),
    ("codebook_download", "get", None, "codebook", "xlsx"),
    ("export_qdpx", "post", {}, "refi-qda", "qdpx"),
    ("trajectory_export", "get", {"format": "csv"}, "transitions", "csv"),
    ("cases_export", "get", {"format": "xlsx"}, "case-codes", "xlsx"),
])
def test_every_download_is_named_project_table_date(world, client_for, owner, name, method, query, what, ext):
    c = client_for(owner)
    args = ([world.project.uuid, "xlsx"] if name == "codebook_download"
            else [world.project.uuid, "tex"] if name == "statistics_download" else [world.project.uuid])
    response = getattr(c, method)(reverse(f"reports:{name}", args=args), query or {})
    assert response.status_code == 200
    assert re.search(FILENAME.format(what=what, ext=ext), response["Content-Disposition"]), response["Content-Disposition"]
