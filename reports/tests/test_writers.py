"""Every writer's output read back: python-docx, openpyxl, csv; LaTeX compiled when a TeX engine is installed."""

from __future__ import annotations

import csv
import io
import shutil
import subprocess
import tracemalloc
from pathlib import Path

import docx
import openpyxl
import pytest

from interviews.rendering import BOLD, RichText, Run
from reports.tests.tables_world import NASTY
from reports.writers import FORMULA_START, Heading, Table, iter_table, write_table
from reports.writers.csv import BOM
from reports.writers.latex import latex_escape
from reports.writers.markdown import md_escape

HEADERS = ["Theme", "Code", "Model", "Quote"]
ROWS = [
    ["Belonging", "Feeling", "GPT-4o", "Home is a feeling."],
    ["Limits & costs", "Structure", "Claude", NASTY],
    ["=cmd|' /C calc'!A0", "+1", "-2", "@SUM(1)"],
    ["Lines", "Two", "Llama", "first line\nsecond line\twith tab"],
]


def table(rows=ROWS, **kw) -> Table:
    return Table(caption="Excerpts: “home” & 50%", headers=HEADERS, rows=iter(rows), widths=[1, 1, 1, 4], **kw)


def render(fmt: str, t: Table | None = None) -> bytes:
    out = io.BytesIO()
    write_table(fmt, t or table(), out)
    return out.getvalue()


def test_docx_is_a_word_table_with_caption_and_exact_text():
    document = docx.Document(io.BytesIO(render("docx")))
    assert document.paragraphs[0].text == "Table 1: Excerpts: “home” & 50%"
    assert document.paragraphs[0].style.name == "Caption"
    [t] = document.tables
    assert [c.text for c in t.rows[0].cells] == HEADERS
    assert [[c.text for c in r.cells] for r in t.rows[1:]] == ROWS
    assert t.style.name == "Table Grid"
    assert t.rows[0]._tr.trPr.xpath("./w:tblHeader")  # header repeats on every page


@pytest.mark.parametrize("typed", ["Table 1: Home", "table 12. Home", "Tab. 3 – Home", "  Table 2 Home"])
def test_a_number_typed_before_the_caption_is_not_doubled_where_the_writer_numbers_tables(typed):
    def with_caption(fmt: str) -> bytes:
        return render(fmt, Table(caption=typed, headers=HEADERS, rows=iter(ROWS)))

    assert docx.Document(io.BytesIO(with_caption("docx"))).paragraphs[0].text == "Table 1: Home"
    assert r"\caption{Home}" in with_caption("tex").decode()
    assert typed.strip() in with_caption("md").decode()  # Markdown numbers nothing: the caption stays as typed
    untouched = Table(caption="Tables 1 and 2 compared", headers=HEADERS, rows=iter(ROWS))
    assert docx.Document(io.BytesIO(render("docx", untouched))).paragraphs[0].text == "Table 1: Tables 1 and 2 compared"


def test_docx_strips_characters_xml_forbids():
    document = docx.Document(io.BytesIO(render("docx", table([["a\x00b", "c\x0bd", "e", "f"]]))))
    assert [c.text for c in document.tables[0].rows[1].cells] == ["ab", "cd", "e", "f"]


def test_repeated_cells_keep_their_own_content_down_the_table():
    """Cells equal to the one above reuse its XML: a styled quote with the same text as a plain one above it
    stays styled, a number stays a number, a formula start stays guarded, and an emptied cell stays empty."""
    styled = RichText([Run("Home", frozenset({BOLD})), Run(" is a feeling.")])
    rows = [["=A1", "Home is a feeling.", 3, "x"], ["=A1", styled, 3, ""], ["=A1", "Home is a feeling.", 3.0, "x"]]
    t = Table(caption="c", headers=["a", "b", "c", "d"], rows=iter(rows))
    ws = openpyxl.load_workbook(io.BytesIO(render("xlsx", t))).active
    assert [[c.value for c in row] for row in ws.iter_rows(min_row=2)] == [
        ["'=A1", "Home is a feeling.", 3, "x"], ["'=A1", "Home is a feeling.", 3, None], ["'=A1", "Home is a feeling.", 3, "x"]]
    t = Table(caption="c", headers=["a", "b", "c", "d"], rows=iter(rows))
    cells = [r.cells for r in docx.Document(io.BytesIO(render("docx", t))).tables[0].rows[1:]]
    assert [[c.text for c in row] for row in cells] == [
        ["=A1", "Home is a feeling.", "3", "x"], ["=A1", "Home is a feeling.", "3", ""], ["=A1", "Home is a feeling.", "3.00", "x"]]
    assert [(r.text, bool(r.bold)) for r in cells[1][1].paragraphs[0].runs] == [("Home", True), (" is a feeling.", False)]
    assert [bool(r.bold) for r in cells[2][1].paragraphs[0].runs] == [False]


def test_xlsx_reads_back_with_text_never_turned_into_formulas():
    wb = openpyxl.load_workbook(io.BytesIO(render("xlsx")))
    ws = wb.active
    values = [[c.value for c in row] for row in ws.iter_rows()]
    assert values == [HEADERS, *ROWS[:2], ["'=cmd|' /C calc'!A0", "'+1", "'-2", "'@SUM(1)"], ROWS[3]]
    assert all(c.data_type == "s" for c in ws[4])  # "=cmd..." stays a string cell, guarded like the CSV's
    assert ws.freeze_panes == "A2"
    assert wb.properties.title == "Excerpts: “home” & 50%"


def test_xlsx_numbers_stay_numbers_and_infinity_becomes_text():
    t = Table(caption="f", headers=["a", "b", "c", "d"], rows=iter([[1, 2.5, float("inf"), float("-inf")]]))
    ws = openpyxl.load_workbook(io.BytesIO(render("xlsx", t))).active
    assert [c.value for c in ws[2]] == [1, 2.5, "∞", "\u2212∞"]  # "+∞" would start with a formula trigger


def test_csv_is_utf8_with_bom_and_formula_safe():
    data = render("csv")
    assert data.startswith(BOM.encode("utf-8"))
    text = data.decode("utf-8-sig")
    got = list(csv.reader(io.StringIO(text, newline="")))
    assert got[0] == HEADERS
    assert got[1] == ROWS[0] and got[2] == ROWS[1] and got[4] == ROWS[3]
    assert got[3] == ["'=cmd|' /C calc'!A0", "'+1", "'-2", "'@SUM(1)"]
    assert "\r\n" in text  # Excel's row separator


def test_csv_writes_infinity_as_text_no_spreadsheet_runs():
    t = Table(caption="f", headers=["a", "b", "c", "d", "e"], rows=iter([[1, 2.5, float("inf"), float("-inf"), "+∞"]]))
    got = list(csv.reader(io.StringIO(render("csv", t).decode("utf-8-sig"), newline="")))
    assert got[1] == ["1", "2.5", "∞", "\u2212∞", "'+∞"]  # typed text "+∞" is still guarded
    assert not any(cell.startswith(FORMULA_START) for cell in got[1][:4])


def test_csv_streams_in_chunks():
    rows = [["t", "c", "m", f"quote {i}"] for i in range(1200)]
    chunks = list(iter_table("csv", table(rows)))
    assert len(chunks) >= 3
    assert len(list(csv.reader(io.StringIO(b"".join(chunks).decode("utf-8-sig"))))) == 1201


def test_markdown_keeps_text_literal():
    text = render("md").decode("utf-8")
    lines = text.splitlines()
    assert lines[0] == r"**Excerpts: “home” \& 50%**"  # an entity ("&amp;") stays as written
    assert lines[2] == "| Theme | Code | Model | Quote |"
    assert "first line<br>second line" in text
    assert md_escape("a|b *c* _d_ [e](f) <g>") == r"a\|b \*c\* \_d\_ \[e\](f) \<g\>"
    assert len([ln for ln in lines if ln.startswith("| ")]) == 1 + len(ROWS)


@pytest.mark.parametrize("raw, tex", [
    ("\\", r"\textbackslash{}"), ("&", r"\&"), ("%", r"\%"), ("$", r"\$"), ("#", r"\#"), ("_", r"\_"),
    ("{", r"\{"), ("}", r"\}"), ("~", r"\textasciitilde{}"), ("^", r"\textasciicircum{}"),
    ("“q”", "``q''"), ("‘q’", "`q'"), ("a–b", "a--b"), ("a—b", "a---b"), ("wait…", r"wait\ldots{}"),
    ("a--b", r"a-\kern0pt{}-b"), ("``x''", r"\textasciigrave{}\textasciigrave{}x\textquotesingle{}\textquotesingle{}"),
    ("’’", r"'\kern0pt{}'"), ("!‘", r"!\kern0pt{}`"), ("–-", r"--\kern0pt{}-"), ("don't", r"don\textquotesingle{}t"),
    ("a  b", r"a\ \ b"), ("a\n\tx = 1", r"a\newline{}\null\ \ \ \ x = 1"), (" lead", " lead"), ("if x:\n  y", r"if x:\newline{}\null\ \ y"), ("a\tb", r"a\ \ \ b"), ("[...]", "{[}...{]}"), ("🏠", r"\rtaemoji{\rtachar{1F3E0}{🏠}}"),
    ("é ß ł", "é ß ł"), ("a\nb", r"a\newline{}b"), ("a\r\nb", r"a\newline{}b"), ("a\rb", r"a\newline{}b"), ("<<", r"\textless{}\textless{}"),
])
def test_latex_escapes_every_special_character(raw, tex):
    assert latex_escape(raw) == tex


def test_latex_is_always_a_longtable_with_booktabs():
    # A float (table + tabular) cannot break across pages: a short table of long quotes would not fit.
    short = render("tex", table(row_count=len(ROWS))).decode("utf-8")
    assert "\\begin{longtable}" in short and "\\toprule" in short and "\\bottomrule" in short
    assert "\\begin{table}" not in short and "\\begin{tabular}" not in short
    rows = [["t", "c", "m", f"quote {i}"] for i in range(40)]
    long = render("tex", table(rows, row_count=40)).decode("utf-8")
    assert "\\begin{longtable}" in long and "\\endhead" in long and long.count(" \\\\\n") >= 40


def test_csv_leaves_minus_inf_for_pandas_and_r_but_guards_anything_longer():
    t = Table(caption="f", headers=["a", "b", "c"], rows=iter([["-inf", "-inf+1", "inf"]]))
    got = list(csv.reader(io.StringIO(render("csv", t).decode("utf-8-sig"), newline="")))
    assert got[1] == ["-inf", "'-inf+1", "inf"]


SECTION = "=1+1 & <b>_{x}</b> “W”"


@pytest.mark.parametrize("fmt", ["csv", "xlsx", "docx", "tex", "md"])
def test_a_heading_row_heads_its_section_in_every_format(fmt, tmp_path):
    rows = [Heading(SECTION), ROWS[0], Heading("Men"), ROWS[1]]
    data = render(fmt, table(rows))
    if fmt == "csv":
        got = list(csv.reader(io.StringIO(data.decode("utf-8-sig"), newline="")))
        assert got[1:] == [["'" + SECTION], ROWS[0], ["Men"], ROWS[1]]
    elif fmt == "xlsx":
        got = [[c.value for c in r] for r in openpyxl.load_workbook(io.BytesIO(data)).active.iter_rows()]
        assert got[1] == ["'" + SECTION, None, None, None] and got[3][0] == "Men" and got[2] == ROWS[0]
    elif fmt == "docx":
        t = docx.Document(io.BytesIO(data)).tables[0]
        assert [c.text for c in t.rows[1].cells] == [SECTION] * 4  # one merged cell across the table
        assert t.rows[1].cells[0]._tc.xpath("./w:tcPr/w:gridSpan/@w:val") == ["4"]
        assert t.rows[1].cells[0].paragraphs[0].runs[0].bold and [c.text for c in t.rows[2].cells] == ROWS[0]
    elif fmt == "tex":
        tex = data.decode()
        heading = r"\multicolumn{4}{@{}l@{}}{\textbf{%s}}\\" % latex_escape(SECTION)  # noqa: UP031
        assert heading in tex and "\\endlastfoot\n" + heading in tex  # the first heading: no second rule
        assert "\\midrule\n" + r"\multicolumn{4}{@{}l@{}}{\textbf{Men}}" in tex
        if shutil.which("pdflatex"):
            assert "=1+1 & <b>_{x}</b>" in _compile(tex, tmp_path)
    else:
        assert "| **=1+1 \\& \\<b\\>\\_{x}\\</b\\> “W”** |  |  |  |" in data.decode()


def _compile(tex: str, tmp_path: Path) -> str:
    (tmp_path / "t.tex").write_text(tex, encoding="utf-8")
    result = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "t.tex"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout[-3000:]
    return subprocess.run(["pdftotext", "t.pdf", "-"], cwd=tmp_path, capture_output=True, text=True).stdout \
        if shutil.which("pdftotext") else ""


@pytest.mark.parametrize("rows", [ROWS, ROWS * 12], ids=["table", "longtable"])
def test_latex_compiles(rows, tmp_path):
    if not shutil.which("pdflatex"):
        pytest.skip("no TeX engine installed (scripts/ensure-tex installs one); escaping is checked above")
    tex = render("tex", table(rows, row_count=len(rows))).decode("utf-8")
    _compile(tex, tmp_path)
    assert (tmp_path / "t.pdf").stat().st_size > 1000


def test_latex_prints_code_with_its_indentation_and_backticks(tmp_path):
    if not shutil.which("pdflatex") or not shutil.which("pdftotext"):
        pytest.skip("no TeX engine or pdftotext installed (scripts/ensure-tex installs them); escaping is checked above")
    code = "```python\ndef f(x):\n    if x > 3.5:\n\treturn x"
    tex = render("tex", table([["t", "c", "m", code]], row_count=1)).decode("utf-8")
    (tmp_path / "t.tex").write_text(tex, encoding="utf-8")
    assert subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "t.tex"], cwd=tmp_path,
                          capture_output=True, timeout=120).returncode == 0
    printed = subprocess.run(["pdftotext", "-layout", "t.pdf", "-"], cwd=tmp_path, capture_output=True, text=True).stdout
    lines = [line.strip("\n") for line in printed.splitlines() if "def f" in line or "if x" in line or "return" in line]
    indent = [len(line) - len(line.lstrip()) for line in lines]
    assert indent[1] > indent[0] and indent[2] > indent[0], printed
    assert "```python" in printed and "\u2018" not in printed


def test_latex_parses_without_a_tex_engine():
    """Without TeX, check the structure: balanced braces and environments, one row per line."""
    tex = render("tex", table(row_count=len(ROWS))).decode("utf-8")
    body = tex.replace("\\{", "").replace("\\}", "")
    assert body.count("{") == body.count("}")
    for env in ("document", "longtable"):
        assert tex.count(f"\\begin{{{env}}}") == tex.count(f"\\end{{{env}}}") == 1
    row_lines = [ln for ln in tex.splitlines() if ln.endswith(" \\\\") and " & " in ln and "textbf" not in ln]
    assert len(row_lines) == len(ROWS)
    assert all(ln.count(" & ") == len(HEADERS) - 1 for ln in row_lines)


@pytest.mark.parametrize("fmt", ["csv", "xlsx", "docx", "tex", "md"])
def test_memory_stays_flat_as_rows_grow(fmt):
    def peak(n: int) -> int:
        rows = (["Theme", "Code", "Model", f"A quote of moderate length, number {i}, to fill the cells."] for i in range(n))
        tracemalloc.start()
        write_table(fmt, Table(caption="c", headers=HEADERS, rows=rows, row_count=n), io.BytesIO() if fmt in ("xlsx", "docx") else _Sink())
        _, top = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return top

    small, large = peak(1000), peak(8000)
    # 8x the rows may not cost 8x the memory (a little slack for buffers and zip bookkeeping).
    assert large < small * 2 + 2_000_000, (small, large)


class _Sink(io.RawIOBase):
    def writable(self) -> bool:
        return True

    def write(self, b) -> int:
        return len(b)


def test_every_format_prints_a_rounded_number_as_it_was_rounded():
    from projects.numbers import PValue, rounded

    # 4/3 to one decimal, a share to three, a percentage that rounds half up, a p-value far below 0.001, a plain float.
    row = [rounded(4 / 3, 1), rounded(0.5, 3), rounded(12.25, 1), PValue(0.0000123), PValue(0.0456), 0.5]
    t = lambda: Table(caption="n", headers=list("abcdef"), rows=iter([row]), numeric=frozenset(range(6)))  # noqa: E731
    printed = ["1.3", "0.500", "12.3", "< 0.001", "0.046", "0.50"]
    [_, body] = docx.Document(io.BytesIO(render("docx", t()))).tables[0].rows
    assert [c.text for c in body.cells] == printed
    assert " & ".join(printed).replace("<", r"\textless{}") in render("tex", t()).decode()
    assert "| " + " | ".join(printed).replace("<", r"\<") + " |" in render("md", t()).decode()
    # The data formats keep the numbers: the p-value to six places.
    assert list(csv.reader(io.StringIO(render("csv", t()).decode("utf-8-sig"))))[1] == \
        ["1.3", "0.5", "12.3", "1.2e-05", "0.0456", "0.5"]
    ws = openpyxl.load_workbook(io.BytesIO(render("xlsx", t()))).active
    assert [c.value for c in ws[2]] == [1.3, 0.5, 12.3, 0.000012, 0.0456, 0.5]


def test_rounding_is_half_up_keeps_no_negative_zero_and_survives_pickling():
    import pickle

    from projects.numbers import PValue, Rounded, rounded

    assert [rounded(v, d).text for v, d in ((1.25, 1), (0.125, 2), (2.675, 2), (-0.04, 1), (-1.25, 1))] == \
        ["1.3", "0.13", "2.68", "0.0", "-1.3"]
    assert rounded(None, 1) is None and rounded(float("inf"), 2) == float("inf")
    for value in (rounded(1.25, 1), PValue(0.00042)):
        back = pickle.loads(pickle.dumps(value))
        assert type(back) is type(value) and back == value and back.text == value.text
    assert isinstance(rounded(1.0, 1), Rounded) and PValue(0.5).text == "0.500"


def test_tables_of_one_shape_share_a_skeleton_but_keep_their_own_caption():
    captions = ["First <one> & only", "", "Table 4: Second"]
    written = [docx.Document(io.BytesIO(render("docx", Table(caption=c, headers=HEADERS, rows=iter(ROWS)))))
               for c in captions]
    assert [d.paragraphs[0].text for d in written] == ["Table 1: First <one> & only", "Table 1", "Table 1: Second"]
    assert all([[c.text for c in r.cells] for r in d.tables[0].rows[1:]] == ROWS for d in written)


def test_an_xlsx_cell_cut_at_excels_limit_says_so():
    from reports.writers.xlsx import CUT_MARKER, MAX_CELL

    long_answer, short = "word " * 10_000, "x" * MAX_CELL  # 50,000 characters; exactly the limit
    book = openpyxl.load_workbook(io.BytesIO(render("xlsx", Table(caption="", headers=["A", "B"],
                                                                  rows=[[long_answer, short]]))))
    cut, whole = book.active["A2"].value, book.active["B2"].value
    assert len(cut) == MAX_CELL and cut.endswith(CUT_MARKER) and cut.startswith("word word")
    assert "32,767-character cell limit" in CUT_MARKER and whole == short


def grouped(**kw) -> Table:
    """A paper's wide table: a column group per condition over its subsets."""
    return Table(caption="Wide", headers=["Ground truth", "All", "None", "All", "Emotion", "None"],
                 rows=iter([["N", "1/1", "2/2", "3/3", "4/4", "0/0"], ["woman", 0.5, 1.0, 0.25, 1.0, "–"]]),
                 column_groups=[("", 1), ("Control", 2), ("Primed & 50%", 3)], **kw)


def test_column_groups_head_their_columns_in_every_format(tmp_path):
    csv_rows = list(csv.reader(io.StringIO(render("csv", grouped()).decode("utf-8").removeprefix(BOM))))
    assert csv_rows[:3] == [["", "Control", "", "Primed & 50%", "", ""],
                            ["Ground truth", "All", "None", "All", "Emotion", "None"], ["N", "1/1", "2/2", "3/3", "4/4", "0/0"]]
    sheet = openpyxl.load_workbook(io.BytesIO(render("xlsx", grouped()))).active
    assert [c.value for c in sheet[1]] == [None, "Control", None, "Primed & 50%", None, None]
    assert [c.value for c in sheet[2]][:2] == ["Ground truth", "All"] and [c.value for c in sheet[4]][1] == 0.5
    assert {str(r) for r in sheet.merged_cells.ranges} == {"B1:C1", "D1:F1"} and sheet.freeze_panes == "A3"
    word = docx.Document(io.BytesIO(render("docx", grouped()))).tables[0]
    assert [c.text for c in word.rows[0].cells] == ["", "Control", "Control", *["Primed & 50%"] * 3]  # merged cells
    assert len({id(c._tc) for c in word.rows[0].cells}) == 3
    assert [c.text for c in word.rows[1].cells][:2] == ["Ground truth", "All"] and word.rows[3].cells[1].text == "0.50"
    assert r"| Ground truth | Control: All | Control: None | Primed \& 50%: All |" in render("md", grouped()).decode()
    tex = render("tex", grouped()).decode("utf-8")
    assert (" & \\multicolumn{2}{c}{\\textbf{Control}} & \\multicolumn{3}{c}{\\textbf{Primed \\& 50\\%}} \\\\\n"
            "\\cmidrule(lr){2-3}\\cmidrule(lr){4-6}\n\\textbf{Ground truth}") in tex
    if shutil.which("pdflatex"):
        _compile(tex, tmp_path)


def test_column_groups_must_span_the_columns():
    with pytest.raises(ValueError, match="The column groups span 5 columns; the table has 6"):
        Table(caption="", headers=list("abcdef"), rows=[], column_groups=[("", 1), ("x", 4)])
