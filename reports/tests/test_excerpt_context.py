# The `world` fixture is imported from tables_world; pytest injects it by argument name.
# ruff: noqa: F811
"""Context for a quote in excerpt tables: the interviewer question it answers and N neighbouring sentences of the
same turn, as columns in CSV/XLSX/Markdown and set lighter around the quote in Word, LaTeX and the preview."""

from __future__ import annotations

import csv
import io
import shutil
import subprocess

import docx
import openpyxl
import pytest
from django.http import QueryDict
from django.urls import reverse

from coding.models import Code
from interviews.models import Participant
from reports.excerpts import ExcerptSpec, ExcerptSpecError, excerpt_options, excerpt_rows, spec_from_query
from reports.exports import excerpt_table, query_params
from reports.tests.tables_world import NASTY, _interview, code, seg, world  # noqa: F401 - fixture
from reports.writers import iter_table, write_table

pytestmark = pytest.mark.django_db

FEELING = "Home is a feeling. It grows with time."


def rows(w, query: str) -> dict[str, object]:
    """The rows by quote."""
    options = excerpt_options(w.project)
    return {r.quote: r for r in excerpt_rows(w.project, spec_from_query(options, QueryDict(query)), options=options)}


def table(w, query: str, fmt: str):
    options = excerpt_options(w.project)
    return excerpt_table(w.project, spec_from_query(options, QueryDict(query)), options=options, fmt=fmt)


def test_the_question_is_the_interviewer_turn_before_the_quoted_answer(world):
    got = rows(world, "question=1")
    assert got[FEELING].question == "Question 1?"
    assert got["Costs rose 50% & fees_2 hit $100 #1 {ok} ~ ^ back\\slash."].question == "Question 2?"
    assert got["I have no home."].question == "Question 1?"
    assert got[FEELING].context_before == got[FEELING].context_after == ""  # not asked for


def test_neighbouring_sentences_stay_inside_the_quoted_turn(world):
    one = rows(world, "context=1")
    assert (one[FEELING].context_before, one[FEELING].context_after) == ("", "Borders decide a lot.")
    assert (one["Borders decide a lot."].context_before, one["Borders decide a lot."].context_after) == ("It grows with time.", "")
    # The first sentence of the second answer: nothing before it in its turn, though the first answer is there.
    costs = one["Costs rose 50% & fees_2 hit $100 #1 {ok} ~ ^ back\\slash."]
    assert costs.context_before == "" and costs.context_after.startswith("She said “home” isn’t")
    assert costs.question == ""
    two = rows(world, "context=2")
    assert two["Borders decide a lot."].context_before == FEELING
    three = rows(world, "context=3")
    after = three["Costs rose 50% & fees_2 hit $100 #1 {ok} ~ ^ back\\slash."].context_after
    assert after.startswith("She said “home”") and after.endswith("Emoji 🏠 and 家 stay.")  # three sentences


def test_context_is_rendered_plain_by_the_one_renderer(world):
    p = Participant.objects.create(project=world.project, label="Gemini")
    iv = _interview(world.project, p, "Gemini", ["**Home** is *where* you are. The quoted one. Then `code` after."], world.owner)
    iv.turns.filter(position=0).update(text="Do you **really** feel at home?")
    code(world.codes["Unused"], seg(iv, "The quoted one."), world.owner)
    got = rows(world, "question=1&context=1")["The quoted one."]
    assert (got.question, got.context_before, got.context_after) == ("Do you really feel at home?", "Home is where you are.",
                                                                     "Then code after.")
    source = rows(world, "question=1&context=1&quotes=markdown")["The quoted one."]
    assert (source.question, source.context_before) == ("Do you **really** feel at home?", "**Home** is *where* you are.")


def test_exemplar_rows_get_context_too(world):
    got = rows(world, "rows=exemplars&question=1&context=1")["Home is a feeling."]
    assert (got.question, got.context_before, got.context_after) == ("Question 1?", "", "It grows with time.")


def test_bad_context_choices_say_what_is_wrong(world):
    options = excerpt_options(world.project)
    with pytest.raises(ExcerptSpecError, match="at most 3 neighbouring sentences"):
        spec_from_query(options, QueryDict("context=4"))
    with pytest.raises(ExcerptSpecError, match="context must be a whole number of sentences, not 'two'"):
        spec_from_query(options, QueryDict("context=two"))
    r_page = None
    from django.test import Client

    client = Client()
    client.force_login(world.owner)
    r_page = client.get(reverse("reports:excerpts", args=[world.project.uuid]) + "?context=-1")
    assert r_page.status_code == 400 and "context must be a positive number of sentences" in r_page.content.decode()


def test_csv_and_xlsx_give_the_context_its_own_columns_after_the_quote(world):
    query = "columns=code&columns=quote&columns=model&question=1&context=1&codes=" + str(world.codes["Structure"].uuid)
    text = b"".join(iter_table("csv", table(world, query, "csv"))).decode("utf-8-sig")
    got = list(csv.reader(io.StringIO(text)))
    assert got[0] == ["Code", "Quote", "Interviewer question", "Before the quote", "After the quote", "Model"]
    assert ["Structure", "Borders decide a lot.", "Question 1?", "It grows with time.", "", "GPT-4o"] in got
    out = io.BytesIO()
    write_table("xlsx", table(world, query, "xlsx"), out)
    sheet = openpyxl.load_workbook(io.BytesIO(out.getvalue())).active
    assert [c.value for c in sheet[1]] == got[0]
    assert [c.value for c in sheet[2]][:4] == ["Structure", "Borders decide a lot.", "Question 1?", "It grows with time."]


def test_word_sets_the_context_grey_around_the_quote(world):
    query = "columns=code&columns=quote&question=1&context=1&codes=" + str(world.codes["Structure"].uuid)
    out = io.BytesIO()
    write_table("docx", table(world, query, "docx"), out)
    doc = docx.Document(io.BytesIO(out.getvalue()))
    assert [c.text for c in doc.tables[0].rows[0].cells] == ["Code", "Quote"]
    cell = doc.tables[0].rows[1].cells[1]
    runs = [(r.text, str(r.font.color.rgb) if r.font.color and r.font.color.type else None) for r in cell.paragraphs[0].runs]
    assert ("Q: Question 1?", "808080") in runs and ("It grows with time.", "808080") in runs
    assert ("Borders decide a lot.", None) in runs


def test_latex_sets_the_context_grey_escaped_and_compiles(world, tmp_path):
    query = "columns=code&columns=quote&columns=provenance&question=1&context=3"
    tex = b"".join(iter_table("tex", table(world, query, "tex"))).decode()
    assert r"\textcolor{gray}{Q: Question 1?}\newline{}" in tex
    # The sentences after a quote of the nasty answer, escaped inside the grey.
    assert r"back\textbackslash{}slash. \textcolor{gray}{She said ``home'' isn't `one place' -- or ---" in tex
    if not shutil.which("pdflatex"):
        pytest.skip("no TeX engine installed (scripts/ensure-tex installs one)")
    (tmp_path / "t.tex").write_text(tex, encoding="utf-8")
    result = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "t.tex"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:]


def test_the_preview_sets_the_context_lighter_and_the_builder_keeps_the_choice(client_for, owner, world):
    url = reverse("reports:excerpts", args=[world.project.uuid])
    r = client_for(owner).get(url + f"?question=1&context=1&codes={world.codes['Structure'].uuid}")
    page = r.content.decode()
    assert '<span class="quote-context">Q: Question 1?</span><br><span class="quote-context">It grows with time.</span> Borders decide a lot.' in page
    assert '<input type="hidden" name="question" value="1">' in page and '<input type="hidden" name="context" value="1">' in page
    assert '<option value="1" selected>1</option>' in page
    plain = client_for(owner).get(url + f"?codes={world.codes['Structure'].uuid}").content.decode()
    assert "quote-context" not in plain


def test_a_worker_export_keeps_the_context_choices():
    params = query_params(QueryDict("question=1&context=2&quotes=markdown&suggestions=exclude"))
    assert params == {"question": ["1"], "context": ["2"], "quotes": ["markdown"], "suggestions": ["exclude"]}


@pytest.mark.parametrize("more", [0, 6])
def test_context_costs_one_query_per_chunk_not_per_row(world, django_assert_num_queries, more):
    p = Participant.objects.create(project=world.project, label="Many")
    for i in range(more):
        iv = _interview(world.project, p, f"Many {i}", [f"First {i}. Second {i}. Third {i}."], world.owner)
        code(world.codes["Unused"], seg(iv, f"Second {i}."), world.owner)
    options = excerpt_options(world.project)
    spec = ExcerptSpec(columns=("code", "quote"), question=True, context=2)
    # the interviews' columns, the rows, the context of the chunk (questions and sentence bounds of its turns)
    with django_assert_num_queries(3):
        got = list(excerpt_rows(world.project, spec, options=options))
    assert len(got) == 5 + more
    assert {(r.question, r.context_before, r.context_after) for r in got if r.code == "Unused"} == {
        ("Question 1?", f"First {i}.", f"Third {i}.") for i in range(more)}


def test_a_code_with_no_quote_column_still_gets_its_context_as_columns(world):
    spec_query = "columns=code&question=1"
    t = table(world, spec_query, "docx")
    assert list(t.headers) == ["Code", "Interviewer question"]
    assert Code.objects.filter(project=world.project).count() == 4


def test_the_api_gives_the_context_as_fields(world, client_for, owner):
    url = f"/api/projects/{world.project.uuid}/reports/excerpts/"
    data = client_for(owner).get(url, {"columns": ["code", "quote"], "question": "1", "context": "1",
                                       "codes": str(world.codes["Structure"].uuid)}).json()
    assert data["columns"] == ["code", "quote", "question", "context_before", "context_after"]
    assert {"code": "Structure", "quote": "Borders decide a lot.", "question": "Question 1?",
            "context_before": "It grows with time.", "context_after": ""}.items() <= data["results"][0].items()
    bad = client_for(owner).get(url, {"context": "9"})
    assert bad.status_code == 400 and "at most 3 neighbouring sentences" in bad.json()["detail"]
