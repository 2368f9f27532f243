"""LaTeX tables with booktabs and longtable (a float cannot break across pages, so every table is a longtable:
its header repeats on each page and a table of any length compiles). Every special character is escaped.

Column widths are fractions of the line width after the column padding, so the columns always fit
the page; words longer than the column (hashes, links) may break anywhere (\\allowbreak).

The output is a complete document that compiles with pdfLaTeX, XeLaTeX or LuaLaTeX;
the table environment between the marked lines can be pasted into a paper that loads
booktabs, longtable, array and xcolor (for a quote's context, set in grey) and defines
the \\rta... commands of the preamble.

Chinese, Japanese, Korean, Arabic, Persian, Hebrew and emoji (interviews with DeepSeek and
others hold them) are set by LuaLaTeX: each run of them is wrapped (\\rtacjk, \\rtaarabic,
\\rtahebrew, \\rtaemoji) and set in a Noto font (Serif CJK SC, Naskh Arabic, Serif Hebrew,
Color Emoji) that is loaded the first time the document uses it, so a table without them
loads none. A run of Arabic or Hebrew words (with the spaces, punctuation and numbers between
them) is one \\rtartl: it reads right to left inside the left-to-right table, its numbers left
to right (\\rtaltr). Without the font, a run prints its code points, as under pdfLaTeX. Any other
character the main font lacks (Greek, Cyrillic, Devanagari, Thai, Georgian...) is set by LuaLaTeX with the
installed Noto fonts as the main font's fallbacks, loaded the first time one is used. Emoji
print as colour images, which PDF text does not hold. XeLaTeX would set the fonts but not the
direction; the tests compile with pdfLaTeX and LuaLaTeX only.

Escaping keeps the exact text: the ten specials (\\ & % $ # _ { } ~ ^) become their
text commands, typographic quotes and dashes become LaTeX's own spellings, ligatures
that would change the text (-- '' ,, !`) are broken with a kern, a backtick is \\textasciigrave
and a straight quote \\textquotesingle or \\textquotedbl (plain, TeX prints ‘ and ’), runs of
spaces and a line's indentation are kept (a tab as TAB_WIDTH spaces), and characters
pdfLaTeX cannot set (Greek, emoji, CJK...) go through \\rtachar, which prints the character
under XeLaTeX/LuaLaTeX and its code point under pdfLaTeX instead of failing.
"""

# LaTeX is all braces: %-formatting reads far better here than str.format with doubled braces.
# ruff: noqa: UP031
from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from itertools import pairwise

from interviews.rendering import BOLD, CODE, ITALIC, MUTED, STRUCK, RichText
from projects.numbers import number_text
from reports.writers import Cell, Heading, Table, unnumbered_caption

FLUSH_ROWS = 200
LONG_WORD = 21  # characters (model ids stay whole): a longer unbroken run gets break points every BREAK_EVERY characters
BREAK_EVERY = 8

_SPECIALS = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    # [ right after \\ would be read as the row's optional spacing argument.
    "[": "{[}",
    "]": "{]}",
    "\u201c": "``",  # “
    "\u201d": "''",  # ”
    "\u2018": "`",  # ‘
    "\u2019": "'",  # ’
    "\u201e": ",,",  # „
    "\u201a": r"\quotesinglbase{}",  # ‚ (a plain comma is another character)
    "\u00ab": r"\guillemotleft{}",  # «
    "\u00bb": r"\guillemotright{}",  # »
    "\u2039": r"\guilsinglleft{}",  # ‹
    "\u203a": r"\guilsinglright{}",  # ›
    "\u2013": "--",  # en dash
    "\u2014": "---",  # em dash
    "\u2212": r"\textminus{}",  # minus sign
    "\u2026": r"\ldots{}",  # …
    "\u00a0": "~",  # no-break space
    "\u2022": r"\textbullet{}",
    "\u221e": r"\ensuremath{\infty}",
    "\u00d7": r"\texttimes{}",
    "\u2192": r"\textrightarrow{}",
    "\u20ac": r"\texteuro{}",
    "\u00b0": r"\textdegree{}",
    "\r": "",
    "`": r"\textasciigrave{}",  # a plain ` would print as ‘
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
    '"': r"\textquotedbl{}",
    "'": r"\textquotesingle{}",  # a plain ' prints as ’, which is another character
}
_TRANSLATE = str.maketrans(_SPECIALS)
# Neighbours whose escapes TeX fonts would join into another character (-- `` '' ,, !` ?`): "a--b", and also "–-"
# (--- is an em dash), "’’" ('' is ”), "!‘" (!` is ¡). A kern between them keeps them apart under pdfTeX and LuaTeX
# alike; an empty group ({}) does only under pdfTeX.
_LIGATURE = re.compile(r"(?<=[-–—])(?=[-–—])|(?<=[‘“])(?=[‘“])|(?<=[’”])(?=[’”])|(?<=[,„])(?=[,„])|(?<=[!?])(?=[‘“])")
_BREAK = "\x00"
_KERN = r"\kern0pt{}"
_LINE_END = re.compile(r"\r\n?|\n")
# Controls (except newline) have no place in a document.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
# pdfLaTeX's utf8 + T1 set covers Latin-1 and Latin Extended-A; anything beyond goes through \rtachar.
_WIDE = re.compile(r"[^\x00-\u017f]")
_ALLOW_BREAK = "\x01"
_LONG_RUN = re.compile(r"\S{%d,}" % LONG_WORD)
_CHUNK = re.compile(r"(.{%d})(?=.)" % BREAK_EVERY, re.S)
# TeX makes one space of several and drops the spaces that open a line after a break: code's indentation and
# aligned columns would go. An empty box (\null) opening the line keeps the spaces after it.
# (Not at a text's own start: a quote's styled runs are escaped one by one, and a run may begin mid-line.)
_INDENT = re.compile(r"(?<=\n) +")
_SPACE_RUN = re.compile(r" {2,}")
TAB_WIDTH = 4

PREAMBLE = r"""%% Quotes in Chinese, Japanese, Korean, Arabic, Persian, Hebrew, emoji or another script (Greek, Cyrillic, Devanagari,
%% Thai...) print with LuaLaTeX (lualatex) and the Noto fonts (fonts-noto-core, fonts-noto-cjk, fonts-noto-color-emoji);
%% pdfLaTeX prints their code points.
\documentclass[11pt]{article}
\usepackage{iftex}
\newcommand{\rtacodepoint}[2]{\texttt{<U+#1>}}
\ifPDFTeX
  \usepackage[utf8]{inputenc}
  \usepackage[T1]{fontenc}
  \let\rtachar\rtacodepoint
  \DeclareRobustCommand{\rtascript}[2]{#2}
  \DeclareRobustCommand{\rtartl}[1]{#1}
  \DeclareRobustCommand{\rtaltr}[1]{#1}
\else
  \usepackage{fontspec}
  %% A script's font is looked up the first time it is used and kept (globally) for the next runs;
  %% not installed, its runs print code points.
  \makeatletter
  \DeclareRobustCommand{\rtascript}[2]{{\ifcsname rta@font@#1\endcsname\else\csname rta@before@#1\endcsname\rta@load{#1}\fi
    \let\rtachar\rta@bare\csname rta@font@#1\endcsname#2}}
  \newcommand{\rta@bare}[2]{#2}
  %% Any other character the main font lacks (Greek, Cyrillic, Devanagari, Thai...) is set in the main font with
  %% the installed Noto fonts as its fallbacks (LuaLaTeX), or printed as its code point.
  \DeclareRobustCommand{\rtachar}[2]{\rtascript{other}{#2}}
  \newcommand{\rta@spec@other}{{RTA no fallback font}{}}
  \newcommand{\rta@fallbacks}{}
  \newcommand{\rta@fallback}[1]{\IfFontExistsTF{#1}{\xdef\rta@fallbacks{\rta@fallbacks"#1:mode=harf;",}}{}}
  \newcommand{\rta@before@other}{\ifLuaTeX
    \rta@fallback{Noto Serif}\rta@fallback{Noto Serif Devanagari}\rta@fallback{Noto Serif Bengali}%%
    \rta@fallback{Noto Serif Tamil}\rta@fallback{Noto Serif Thai}\rta@fallback{Noto Serif Georgian}%%
    \rta@fallback{Noto Serif Armenian}\rta@fallback{Noto Serif Ethiopic}\rta@fallback{Noto Sans Symbols}%%
    \ifx\rta@fallbacks\@empty\else
      \directlua{luaotfload.add_fallback("rtafallback", {\rta@fallbacks})}%%
      \gdef\rta@spec@other{{Latin Modern Roman}{RawFeature={fallback=rtafallback}}}%%
    \fi\fi}
  \newcommand{\rta@load}[1]{\edef\rta@spec{\csname rta@spec@#1\endcsname}\expandafter\rta@loadfont\rta@spec{#1}}
  \newcommand{\rta@loadfont}[3]{\IfFontExistsTF{#1}%%
    {\fontspec{#1}[#2]\expandafter\xdef\csname rta@font@#3\endcsname{\noexpand\fontfamily{\f@family}\noexpand\selectfont}}%%
    {\expandafter\gdef\csname rta@font@#3\endcsname{\let\rtachar\rtacodepoint}}}
  \newcommand{\rta@spec@cjk}{{Noto Serif CJK SC}{}}
  \newcommand{\rta@spec@arabic}{{Noto Naskh Arabic}{Renderer=HarfBuzz}}
  \newcommand{\rta@spec@hebrew}{{Noto Serif Hebrew}{Renderer=HarfBuzz}}
  \newcommand{\rta@spec@emoji}{{Noto Color Emoji}{Renderer=HarfBuzz}}
  \makeatother
  \ifLuaTeX
    \DeclareRobustCommand{\rtartl}[1]{{\textdir TRT#1}}
    \DeclareRobustCommand{\rtaltr}[1]{{\textdir TLT#1}}
  \else
    \DeclareRobustCommand{\rtartl}[1]{#1}
    \DeclareRobustCommand{\rtaltr}[1]{#1}
  \fi
\fi
\newcommand{\rtacjk}[1]{\rtascript{cjk}{#1}}
\newcommand{\rtaarabic}[1]{\rtascript{arabic}{#1}}
\newcommand{\rtahebrew}[1]{\rtascript{hebrew}{#1}}
\newcommand{\rtaemoji}[1]{\rtascript{emoji}{#1}}
\usepackage[%(paper)s,margin=2cm%(landscape)s]{geometry}
\usepackage{booktabs,longtable,array,xcolor}
\newcolumntype{L}[1]{>{\raggedright\arraybackslash\hspace{0pt}}p{#1}}
\newcolumntype{R}[1]{>{\raggedleft\arraybackslash\hspace{0pt}}p{#1}}
\begin{document}
"""


# A quote's context (the question, neighbouring sentences) is set in grey: xcolor's \textcolor.
_COMMANDS = {BOLD: r"\textbf", ITALIC: r"\emph", CODE: r"\texttt", STRUCK: r"\sout", MUTED: r"\textcolor{gray}"}


def latex_escape(value: Cell) -> str:
    """Text of one cell as LaTeX that prints exactly that text; a quote's bold and italics as \\textbf and \\emph."""
    if isinstance(value, RichText):
        parts = []
        for run in value.runs:
            text = latex_escape(run.text)
            for style in sorted(run.styles - {STRUCK}):  # \sout needs ulem; struck text prints plain
                text = f"{_COMMANDS[style]}{{{text}}}"
            parts.append(text)
        return "".join(parts)
    if value is None:
        return ""
    if isinstance(value, float):
        return _number(value)
    # A lone carriage return ends a line too (old Mac line ends, some exports): dropped, it joined two lines' words.
    lines = _LINE_END.split(str(value))
    text = _CONTROL.sub("", "\n".join(line.expandtabs(TAB_WIDTH) for line in lines))
    if not _OTHER_SCRIPT.search(text):
        return _escaped(text)
    return "".join(_escaped(text[start:end]) if kind is None else _script_run(kind, text[start:end])
                   for kind, start, end in _script_runs(text))


def _escaped(text: str, *, long_words: bool = True) -> str:
    """`text` (controls already out) escaped: the specials, kept spaces, break points, \\rtachar for wide characters.

    `long_words`: break points in long unbroken runs (a CJK run has its own, where the rules allow them).
    """
    if long_words:
        text = _LONG_RUN.sub(lambda m: _CHUNK.sub(r"\1" + _ALLOW_BREAK, m.group()), text)
    text = _LIGATURE.sub(_BREAK, text)
    text = text.translate(_TRANSLATE).replace(_BREAK, _KERN)
    text = _INDENT.sub(lambda m: r"\null" + "\\ " * len(m.group()), text)
    text = _SPACE_RUN.sub(lambda m: "\\ " * len(m.group()), text)
    text = _WIDE.sub(lambda m: r"\rtachar{%04X}{%s}" % (ord(m.group()), m.group()), text)
    return text.replace("\n", r"\newline{}").replace(_ALLOW_BREAK, r"\allowbreak{}")


# Runs the main font cannot set, wrapped for LuaLaTeX (see the module's docstring). Ranges, not a font's coverage:
# the preamble's fonts cover these blocks.
_CJK = ("\u1100-\u11ff\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u3100-\u312f\u3130-\u318f\u31a0-\u31ff"
        "\u3200-\u33ff\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\ufe30-\ufe4f"
        "\uff00-\uffef\U00020000-\U0003134f")
_EMOJI_START = "\u2600-\u27bf\U0001f000-\U0001faff"
_EMOJI_JOINED = "\u200d\ufe0f\u20e3\U000e0020-\U000e007f"  # zero-width joiner, emoji presentation, keycap, tags
_DIGITS = "0-9\u0660-\u0669\u06f0-\u06f9"
_ARABIC_DIGIT = re.compile("[\u0660-\u0669\u06f0-\u06f9]")  # set in the Arabic font
_OTHER_SCRIPT = re.compile(f"[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufeff{_CJK}{_EMOJI_START}]")
_RUNS = re.compile(f"(?P<cjk>[{_CJK}]+)|(?P<emoji>[{_EMOJI_START}][{_EMOJI_START}{_EMOJI_JOINED}]*)")
# Inside a right-to-left run: numbers (with their separators) read left to right; letters by script.
_RTL_RUNS = re.compile(f"(?P<number>[{_DIGITS}]+(?:[.,:/\u066b\u066c][{_DIGITS}]+)*)"
                       f"|(?P<arabic>[\u0600-\u06ff\u0750-\u077f\u0870-\u08ff\ufb50-\ufdff\ufe70-\ufeff]+)"
                       f"|(?P<hebrew>[\u0590-\u05ff\ufb1d-\ufb4f]+)"
                       f"|(?P<emoji>[{_EMOJI_START}][{_EMOJI_START}{_EMOJI_JOINED}]*)")
# Japanese and Chinese line breaking: never before closing punctuation and small kana, never after opening brackets.
_NO_BREAK_BEFORE = set("、。，．・：；？！）」』】〕〉》〙〗｝］ー々ぁぃぅぇぉっゃゅょゎァィゥェォッャュョヮヵヶ…‥〜")
_NO_BREAK_AFTER = set("（「『【〔〈《〘〖｛［")


def _script_runs(text: str) -> Iterator[tuple[str | None, int, int]]:
    """(kind, start, end) covering `text`: "rtl", "cjk", "emoji", or None for text the main font sets.

    A right-to-left run is what the Unicode bidirectional algorithm makes one in a left-to-right paragraph: from an
    Arabic or Hebrew letter to the last one before a left-to-right letter or a line's end, with the spaces,
    punctuation and numbers between.
    """
    pos = 0
    for start, end in _rtl_spans(text):
        yield from _ltr_runs(text, pos, start)
        yield "rtl", start, end
        pos = end
    yield from _ltr_runs(text, pos, len(text))


def _rtl_spans(text: str) -> list[tuple[int, int]]:
    spans, start, last = [], None, 0
    for i, char in enumerate(text):
        bidi = unicodedata.bidirectional(char)
        if bidi in ("R", "AL") or (bidi in ("EN", "AN") and start is not None):  # a number after them reads with them
            start, last = i if start is None else start, i
        elif bidi in ("L", "B", "S") and start is not None:
            spans.append((start, last + 1))
            start = None
    if start is not None:
        spans.append((start, last + 1))
    return spans


def _ltr_runs(text: str, start: int, end: int) -> Iterator[tuple[str | None, int, int]]:
    pos = start
    for m in _RUNS.finditer(text, start, end):
        if m.start() > pos:
            yield None, pos, m.start()
        yield m.lastgroup, m.start(), m.end()
        pos = m.end()
    if pos < end:
        yield None, pos, end


def _script_run(kind: str, text: str) -> str:
    if kind == "cjk":  # no spaces between words: a break may come between any two characters, as the rules allow
        marked = "".join(c + (_ALLOW_BREAK if c not in _NO_BREAK_AFTER and n not in _NO_BREAK_BEFORE else "")
                         for c, n in pairwise(text)) + text[-1]
        return r"\rtacjk{%s}" % _escaped(marked, long_words=False)
    if kind == "emoji":
        return r"\rtaemoji{%s}" % _escaped(text)
    parts, pos = [], 0
    for m in _RTL_RUNS.finditer(text):
        parts.append(_escaped(text[pos:m.start()]))
        inner = _escaped(m.group())
        if m.lastgroup == "number":
            parts.append(r"\rtaltr{%s}" % (r"\rtaarabic{%s}" % inner if _ARABIC_DIGIT.search(m.group()) else inner))
        else:
            parts.append(r"\rta%s{%s}" % (m.lastgroup, inner))
        pos = m.end()
    parts.append(_escaped(text[pos:]))
    return r"\rtartl{%s}" % "".join(parts)


def _number(value: float) -> str:
    if value == float("inf"):
        return r"$+\infty$"
    if value == float("-inf"):
        return r"$-\infty$"
    if value != value:  # NaN: undefined
        return "--"
    return number_text(value).replace("-", r"$-$").replace("<", r"\textless{}")  # "< 0.001", a p-value


def _colspec(table: Table) -> str:
    # Each column gets its share of the line width left after the padding between columns
    # (2\tabcolsep per gap; none outside, @{}), so the columns add up to the line exactly.
    gaps = 2 * (len(table.headers) - 1)
    specs = []
    for i, w in enumerate(table.column_widths()):
        kind = "R" if i in table.numeric else "L"
        specs.append(r"%s{\dimexpr(\linewidth-%d\tabcolsep)*%d/10000\relax}" % (kind, gaps, round(w * 10000)))
    return "@{}" + "".join(specs) + "@{}"


def _group_head(table: Table) -> str:
    """The column groups' row (each heading centred over its columns, ruled under them), or nothing."""
    if not table.column_groups:
        return ""
    cells, rules, first = [], [], 1
    for heading, span in table.column_groups:
        cells.append(r"\multicolumn{%d}{c}{\textbf{%s}}" % (span, latex_escape(heading)) if heading else " & ".join([""] * span))
        if heading:
            rules.append(r"\cmidrule(lr){%d-%d}" % (first, first + span - 1))
        first += span
    return " & ".join(cells) + r" \\" + "\n" + "".join(rules) + ("\n" if rules else "")


def iter_latex(table: Table, *, standalone: bool = True) -> Iterator[bytes]:
    cols = len(table.headers)
    caption = latex_escape(unnumbered_caption(table.caption))
    label = re.sub(r"[^A-Za-z0-9:._-]", "", table.label)
    head = _group_head(table) + " & ".join(r"\textbf{%s}" % latex_escape(h) for h in table.headers) + r" \\"
    out: list[str] = []
    if standalone:
        out.append(PREAMBLE % {"paper": "letterpaper" if table.paper == "letter" else "a4paper",
                               "landscape": ",landscape" if table.is_landscape(wide_after=5) else ""})
    if standalone and cols > 8:
        out.append("\\footnotesize\n")
    out.append("% --- table starts here (needs booktabs, longtable, array, xcolor and the L/R column types above)\n")
    out.append(r"\begin{longtable}{%s}" % _colspec(table) + "\n")
    out.append(r"\caption{%s}%s\\" % (caption, r"\label{%s}" % label if label else "") + "\n")
    out.append("\\toprule\n" + head + "\n\\midrule\n\\endfirsthead\n")
    out.append(r"\multicolumn{%d}{@{}l}{\emph{(continued)}}\\" % cols + "\n\\toprule\n" + head + "\n\\midrule\n\\endhead\n")
    out.append("\\midrule\n" + r"\multicolumn{%d}{r@{}}{\emph{continued on next page}}\\" % cols + "\n\\endfoot\n")
    out.append("\\bottomrule\n" + "".join(
        r"\multicolumn{%d}{@{}p{\linewidth}@{}}{\footnotesize\emph{Note.} %s}\\" % (cols, latex_escape(note)) + "\n"
        for note in table.notes) + "\\endlastfoot\n")
    for n, row in enumerate(table.iter_rows(), start=1):
        if isinstance(row, Heading):  # a section: a rule above it (but under the header's), its name across the row
            out.append(("\\midrule\n" if n > 1 else "") + r"\multicolumn{%d}{@{}l@{}}{\textbf{%s}}\\" % (cols, latex_escape(row.text))
                       + "\n")
        else:
            out.append(" & ".join(latex_escape(v) for v in row) + " \\\\\n")
        if n % FLUSH_ROWS == 0:
            yield "".join(out).encode("utf-8")
            out = []
    out.append("\\end{longtable}\n")
    out.append("% --- table ends here\n")
    if standalone:
        out.append("\\end{document}\n")
    yield "".join(out).encode("utf-8")
