"""LaTeX tables of quotes in Chinese, Japanese, Korean, Arabic, Persian, Hebrew and emoji, compiled with LuaLaTeX.

The PDF's text (pdftotext) must hold every character in reading order, and the log no missing glyph. pdftotext
gives Arabic letters as the presentation forms drawn, so the text is compared in NFKC (which also makes fullwidth
brackets plain ones), and it marks right-to-left runs with embedding controls, which are taken out.
"""

from __future__ import annotations

import io
import re
import shutil
import subprocess
import unicodedata
from pathlib import Path

import pytest

from reports.writers import Table, write_table
from reports.writers.latex import latex_escape

QUOTES = [
    ["Chinese", "我认为这是一个好问题。"],
    ["Japanese", "日本語のテキスト（テスト）です。"],
    ["Korean", "한국어 텍스트입니다"],
    ["Arabic", "مرحبا بالعالم"],
    ["Persian", "سلام دنیا"],
    ["Hebrew", "שלום עולם"],
    ["Mixed", "The model said: שלום עולם and left"],
    ["Emoji", "Home 😀 and 🚀 launch"],
]
TEXT_PER_ROW = {"Mixed": "The model said: שלום עולם and left", "Emoji": "Home and launch"}


def _tex(rows, caption: str = "Quotes: 中文 and עברית") -> str:
    out = io.BytesIO()
    write_table("tex", Table(caption=caption, headers=["Language", "Quote"], rows=iter(rows), widths=[1, 4]), out)
    return out.getvalue().decode("utf-8")


def _compile(engine: str, tex: str, tmp_path: Path) -> tuple[str, str]:
    """(the PDF's text, the log); the first LuaLaTeX run on a machine builds its font index, which takes minutes."""
    if not shutil.which(engine) or not shutil.which("pdftotext"):
        pytest.skip(f"{engine} or pdftotext is not installed (scripts/ensure-tex installs them)")
    (tmp_path / "t.tex").write_text(tex, encoding="utf-8")
    result = subprocess.run([engine, "-interaction=nonstopmode", "-halt-on-error", "t.tex"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=1800)
    log = (tmp_path / "t.log").read_text(encoding="utf-8", errors="replace")
    assert result.returncode == 0, log[-3000:]
    text = subprocess.run(["pdftotext", "t.pdf", "-"], cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    return text, log


def _readable(text: str) -> str:
    # pdftotext moves a space at a run's edge inside its embedding marks: a mark counts as a space.
    text = unicodedata.normalize("NFKC", text).replace("\u202b", " ").replace("\u202c", " ")
    return re.sub(r"\s+", " ", text)


def test_every_script_prints_in_reading_order_without_missing_glyphs(tmp_path):
    text, log = _compile("lualatex", _tex(QUOTES), tmp_path)
    assert "Missing character" not in log
    printed = _readable(text)
    for language, quote in QUOTES:
        assert _readable(TEXT_PER_ROW.get(language, quote)) in printed, (language, printed)
    assert "Quotes: 中文 and עברית" in printed  # the caption too
    # Emoji are drawn in colour, as one image each (which PDF text does not hold).
    images = subprocess.run(["pdfimages", "-list", "t.pdf"], cwd=tmp_path, capture_output=True, text=True).stdout
    assert [line.split()[2] for line in images.splitlines()[2:]].count("image") == 2


def test_other_scripts_print_through_the_main_fonts_fallbacks(tmp_path):
    quotes = [["Greek", "Ελληνικά κείμενα"], ["Russian", "Русский язык"], ["Vietnamese", "Tiếng Việt"],
              ["Thai", "ภาษาไทย"], ["Georgian", "ქართული"], ["Hindi", "हिन्दी भाषा"], ["Chinese", "中文"]]
    text, log = _compile("lualatex", _tex(quotes, caption="Ελληνικά"), tmp_path)
    assert "Missing character" not in log
    printed = _readable(text)
    for language, quote in quotes:  # pdftotext splits a Devanagari conjunct with a space
        assert quote.replace(" ", "") in printed.replace(" ", ""), (language, printed)


def test_a_plain_table_loads_no_other_font_and_a_missing_font_prints_code_points(tmp_path):
    _, log = _compile("lualatex", _tex([["English", "Home is a feeling."]], caption="Quotes"), tmp_path)
    assert "Noto" not in log
    without_emoji_font = _tex([["Emoji", "Home 😀"]]).replace("{Noto Color Emoji}", "{No Such Emoji Font}")
    text, log = _compile("lualatex", without_emoji_font, tmp_path)
    assert "Home <U+1F600>" in _readable(text) and "Missing character" not in log


def test_pdflatex_still_compiles_them_as_code_points(tmp_path):
    text, _ = _compile("pdflatex", _tex(QUOTES), tmp_path)
    assert "<U+6211><U+8BA4>" in text.replace("\n", "") and "said: <U+05E9>" in _readable(text)


# Punctuation TeX fonts join into another character (-- into –, '' into ”, !` into ¡), written by chance: in code, in
# literal HTML, in curly quotes next to each other.
PUNCTUATION = ["<!-- comment --> and a--b---c", "alert('x') and ''straight'' quotes", "’’curly’’ and ‘‘open‘‘",
               "Wow!‘quoted’ and ¿what?“really”", "an –- dash, a ,,low and a ‚,pair"]


@pytest.mark.parametrize("engine", ["lualatex", "pdflatex"])
def test_punctuation_prints_as_written_not_joined_into_other_characters(tmp_path, engine):
    text, log = _compile(engine, _tex([["Text", quote] for quote in PUNCTUATION], caption="Quotes"), tmp_path)
    if engine == "pdflatex":
        return  # compiles; pdftotext cannot tell its fonts' quotes apart
    printed = _readable(text)
    for quote in PUNCTUATION:  # LuaTeX joins "-{}-": an empty group broke a ligature only under pdfTeX
        assert _readable(quote) in printed, (quote, printed)


def test_a_right_to_left_run_spans_its_words_and_the_numbers_after_them_not_the_latin_around():
    escaped = latex_escape("He said מה 2 קורה, then left")
    assert escaped.startswith("He said \\rtartl{\\rtahebrew{")
    assert escaped.endswith("}, then left")  # the comma after the last Hebrew letter stays outside
    assert "\\rtaltr{2}" in escaped
    persian = latex_escape("سال ۱۴۰۳ بود")
    assert persian.startswith("\\rtartl{") and "\\rtaltr{\\rtaarabic{" in persian and persian.endswith("}}}")
    assert latex_escape("plain text") == "plain text"


def test_cjk_breaks_between_characters_but_not_before_closing_punctuation():
    escaped = latex_escape("好问题。")
    assert escaped == ("\\rtacjk{\\rtachar{597D}{好}\\allowbreak{}\\rtachar{95EE}{问}\\allowbreak{}"
                       "\\rtachar{9898}{题}\\rtachar{3002}{。}}")
