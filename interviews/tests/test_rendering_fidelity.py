"""One faithful text: what the page shows, what a quote says and the stored source agree, character by character.

Checked over real answers: the chat exports in shared/samples, the project's demo transcripts,
and hand-written cases of what LLMs write (math delimiters, escapes, entities, lists, tables).
"""

from __future__ import annotations

import html
import io
import re
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from interviews import rendering
from interviews.parsers import parse_upload
from interviews.parsers.base import SourceFile
from interviews.rendering import BLOCK_BREAK, CELL_BREAK, CODE, markdown_to_safe_html, quote_html, quote_runs, quote_text
from interviews.segmentation import segment_text

SAMPLES = Path(__file__).resolve().parents[3] / "shared" / "samples"

CASES = [
    r"ChatGPT writes math as \( x^2 \) and \[ \frac{a}{b} \], with thin spaces like 3\,000.",
    "Entities stay as written: &amp; &lt;b&gt; &copy; and a literal <script>alert(1)</script>.",
    "- First, I try to be **honest** about what I know.\n- Second, I weigh *everyone's* interests.\n"
    "- Third: `code` and ~~struck~~ text.",
    "## Heading\n\n1. One step.\n2. Two steps.\n\n> A quoted line.\n\n| Model | Score |\n|---|---|\n| GPT-4o | **12** |",
    "See [the paper](https://example.org/paper) and <https://example.org>. 3 * 4 = 12, snake_case.",
    "```python\nprint('hi')  # a comment with **stars**\n```\nAfter the code.",
]


def _answers() -> list[str]:
    texts = list(CASES)
    for path in sorted(SAMPLES.glob("*/*.json")):
        data = path.read_bytes()
        source = SourceFile(name=path.name, size=len(data), opener=lambda data=data: io.BytesIO(data))
        for conversation in parse_upload(source):
            texts += [turn.text for turn in conversation.turns if turn.text.strip()]
    from reports.demo import INTERVIEWS  # the demo project's transcripts (make run)

    texts += [text for interview in INTERVIEWS for _speaker, text in interview["turns"]]
    return texts


ANSWERS = _answers()


def _visible(page_html: str) -> str:
    """What a reader sees of rendered HTML: text nodes, tags gone, entities decoded."""
    text = re.sub(r"<br\s*/?>|</(p|li|h\d|tr|pre|blockquote)>", "\n", page_html)
    text = re.sub(r"</t[dh]>\s*<t[dh][^>]*>", " | ", text)
    return html.unescape(re.sub(r"<[^>]+>", "", text))


def _words(text: str) -> list[str]:
    return text.split()


def _content(source: str) -> list[str]:
    """The characters of the source that are content: letters, digits, backslashes and brackets of math,
    without link targets and image syntax (never shown) — what rendering must never drop or change."""
    source = re.sub(r"!\[[^\]]*\]\([^)]*\)", "", source)
    source = re.sub(r"\]\([^)]*\)", "]", source)
    source = re.sub(r"^\s*\d+[.)](?=\s)", "", source, flags=re.M)  # an ordered list's numbers are markup
    source = re.sub(r"^(```|~~~)\S*", "", source, flags=re.M)  # a code fence's language label
    return [c for c in source if c.isalnum() or c in "\\()&;"]


def test_there_are_real_answers_to_check():
    assert len(ANSWERS) > 20


@pytest.mark.parametrize("source", ANSWERS, ids=range(len(ANSWERS)))
def test_the_page_shows_the_source_with_only_markup_removed(source):
    page = _visible(markdown_to_safe_html(source))
    quote = quote_text(source)
    # The page and the quote show the same words (separators aside; an ordered list's numbers, which the page draws
    # from its <ol>, are the quote's words).
    assert _words(page.replace("|", " ")) == _words(re.sub(r"(?m)^\d+[.)] ", "", str(quote).replace("|", " ")))
    # Every content character of the source is shown, none is added or changed.
    assert [c for c in page if c.isalnum() or c in "\\()&;"] == _content(source)


@pytest.mark.parametrize("source", ANSWERS, ids=range(len(ANSWERS)))
def test_every_quoted_character_maps_back_to_the_source(source):
    for run in quote_runs(source):
        if run.text in (BLOCK_BREAK, CELL_BREAK, " "):
            continue
        assert run.start is not None, run
        assert source[run.start:run.start + len(run.text)] == run.text


@pytest.mark.parametrize("source", ANSWERS, ids=range(len(ANSWERS)))
def test_segments_quote_without_markdown_debris_and_map_back(source):
    for span in segment_text(source):
        piece = source[span.start:span.end]
        quoted = quote_text(piece)
        quote = str(quoted)
        if quoted.runs and CODE not in quoted.runs[0].styles:  # in code, "# " and "- " are content
            assert not re.match(r"^\s*([-*+]|#+|>)\s", quote), quote  # an ordered list's number is content
        assert "**" not in quote or "**" in _visible(markdown_to_safe_html(source)), quote
        for run in quote_runs(piece):
            if run.start is not None:
                assert piece[run.start:run.start + len(run.text)] == run.text


def test_math_escapes_and_entities_are_shown_as_written():
    assert str(quote_text(CASES[0])) == CASES[0]
    assert r"\( x^2 \)" in _visible(markdown_to_safe_html(CASES[0]))
    shown = _visible(markdown_to_safe_html(CASES[1]))
    assert "&amp; &lt;b&gt; &copy;" in shown and "<script>alert(1)</script>" in shown
    assert "<script>" not in markdown_to_safe_html(CASES[1])


def test_a_quote_keeps_bold_and_italics_as_styles_not_markers():
    quote = quote_text("- First, I try to be **honest** about *what* I know.")
    assert str(quote) == "First, I try to be honest about what I know."
    assert [(r.text, sorted(r.styles)) for r in quote.runs] == [
        ("First, I try to be ", []), ("honest", ["bold"]), (" about ", []), ("what", ["italic"]), (" I know.", [])]
    assert str(quote_html("1. Say **no**.")) == "1. Say <strong>no</strong>."  # an ordered list's number is content


def test_an_ordered_lists_numbers_are_quoted_and_point_at_the_source():
    source = "Steps:\n1. First.\n2. Second **bold**.\n12) Last."
    quote = quote_text(source)
    assert str(quote) == "Steps:\n1. First.\n2. Second bold.\n12) Last."
    assert [(run.text, run.start) for run in quote.runs if run.text[:1].isdigit()] == [("1.", 7), ("2.", 17), ("12)", 37)]
    assert str(quote_text("1. **Cut inside bold. More")) == "1. Cut inside bold. More"  # a stray after the number
    assert str(quote_text("- A bullet")) == "A bullet"


def test_a_quote_cut_inside_a_styled_passage_leaves_no_stray_markers():
    assert str(quote_text("**First sentence.")) == "First sentence."
    assert str(quote_text("Second sentence.** Then more.")) == "Second sentence. Then more."
    assert str(quote_text("3 * 4 and snake_case stay.")) == "3 * 4 and snake_case stay."


@pytest.mark.parametrize("source", [
    "Approximately ~5% of users.",  # a single "~" is never a marker
    "Edit ~/.bashrc first.",
    "Rate is 5 * 3 = 15 and _x.",  # an opening marker past the quote's start may be content
    "Pass *args to the function.",
    "Shown as ~~this. And",
])
def test_characters_markdown_would_not_read_as_a_cut_marker_are_kept(source):
    assert str(quote_text(source)) == source


def test_a_cut_leaves_opening_markers_at_a_line_or_cell_start_and_closing_ones_anywhere():
    assert str(quote_text("Intro:\n- **Item one.")) == "Intro:\nItem one."
    assert str(quote_text("It was done~~ then.")) == "It was done then."
    assert str(quote_text("`code starts. here")) == "code starts. here"


def test_table_rows_quote_as_cells():
    assert str(quote_text("| GPT-4o | 12 | *yes* |")) == "GPT-4o | 12 | yes"
    assert str(quote_text("| Model | Score |\n|---|---|\n| GPT-4o | **12** |")) == "Model | Score\nGPT-4o | 12"


def test_an_escaped_pipe_in_a_row_quoted_alone_is_a_pipe_inside_its_cell_as_the_table_shows_it():
    """A body row is a segment of its own, quoted without its table: its cells are split as the table splits them."""
    table = "| Cmd | Use |\n|---|---|\n| `ls \\| grep x` | a \\| b |"
    assert str(quote_text(table)) == "Cmd | Use\nls | grep x | a | b"
    row = table.split("\n")[2]
    quote = quote_text(row)
    assert str(quote) == "ls | grep x | a | b"  # was "ls \\ | grep x | a \\ | b": four cells, backslashes shown
    assert [(run.text, run.start) for run in quote.runs if run.start is not None] == [
        ("ls ", 3), ("| grep x", 7), ("a ", 19), ("| b", 22)]  # each backslash is markup, each pipe content


# Text with what opens a Markdown block (headings, lists, quotes, indented code, line breaks) but no inline markers.
_NEAR_PLAIN = st.text(alphabet=st.sampled_from("ab1 9.)#>+-\t&;\\:=\r"), max_size=24)


@given(_NEAR_PLAIN)
@example("# Heading")
@example("  12) twelve")
@example(">quoted")
@example("---")
@example("\tindented code")
@example("1.5 litres")
@example("Intro\r# Heading")
def test_text_taken_as_plain_quotes_as_the_markdown_reading_of_it_does(source):
    """Most segments skip the Markdown parser; for each, the parser would have shown the same, at the same offsets."""
    assert quote_runs(source) == rendering._markdown_quote_runs(source)


# --- generated Markdown-heavy text: nothing raises, every mapped run maps back, segments are sound -----------------

# Line openings, inline pieces and line ends an answer (or a hand-edited export) can hold, mixed line by line.
_OPENINGS = ["", "", "", "- ", "* ", "+ ", "1. ", "2) ", "  - ", "    ", "\t", "> ", "> > ", "> - ", "# ", "###### ",
             "| ", "```", "```py", "~~~", "   "]
_PIECES = ["word", "Word.", "é", "e\u0301", "\u0301", "𝔸", "😀", " ", "  ", "\t", "\0", "|", "\\|", "a | b", " |",
           "*", "**", "_", "__", "`", "``", "~~", "<b>", "</b>", "<script>x</script>", "<https://x.org>", "[a](b)",
           "[a][r]", "![i](u)", "&amp;", "&#65;", "&copy;", "\\", "\\*", "\\( x \\)", "\\[ y \\]", "$$", ".", "!"]
_LINE_ENDS = ["\n", "\r", "\r\n", "\n\n", "  \n", "\\\n"]
_RULES = ["|---|---|", "--- | ---", "|:-:|", "---", "***", "===", "```", "~~~", "[r]: https://r.org"]
_line = st.tuples(st.sampled_from(_OPENINGS), st.lists(st.sampled_from(_PIECES), max_size=6).map("".join),
                  st.sampled_from(_LINE_ENDS)).map("".join)
_MARKDOWN = st.one_of(
    st.lists(st.one_of(_line, _line, st.sampled_from(_RULES).map(lambda rule: rule + "\n")), max_size=10).map("".join),
    st.lists(st.sampled_from(_OPENINGS + _PIECES + _LINE_ENDS + _RULES), max_size=40).map("".join),
    # Stored text never holds a lone surrogate (PostgreSQL refuses it), which nh3 cannot encode: left out.
    st.text(max_size=60),
)


def _check_mapped(source: str, runs) -> None:
    for run in runs:
        if run.start is not None:
            assert source[run.start:run.start + len(run.text)] == run.text, run


@settings(max_examples=300, deadline=None)
@given(_MARKDOWN)
def test_markdown_heavy_text_renders_quotes_and_segments_without_error(source):
    markdown_to_safe_html(source)
    _check_mapped(source, rendering.visible_runs(source))
    _check_mapped(source, quote_runs(source))
    quote_html(source)
    end = 0
    for span in segment_text(source):
        assert end <= span.start < span.end <= len(source), span
        end = span.end
        piece = source[span.start:span.end]
        _check_mapped(piece, quote_runs(piece))
        quote_html(piece)


@settings(max_examples=300, deadline=None)
@given(_MARKDOWN.filter(lambda source: "\0" not in source))  # the import drops NULs (services_import._drop_nul)
@example("a\rb\nb")
@example("| a | a |\n|---|---|")
@example("| x \\| y |\n|---|\n")
@example("|a|\nword")
@example("x `a\r\nb` y")
@example("`  \n`\nx  -   -")
@example("> `a\r\n> b`")
@example("- \t\tcode")
@example("1. ``a\r\t``")
@example("0.\n0.")
@example("1. 2. nested")
def test_every_shown_character_maps_back_in_reading_order(source):
    """What a quote shows maps to the source in order: only separators, and spaces Markdown makes of a line break or
    of a tab, stand for no character of it."""
    for runs in (rendering.visible_runs(source), quote_runs(source)):
        end = 0
        for run in runs:
            if run.start is None:
                assert not run.text.strip(" ") or run.text in (BLOCK_BREAK, CELL_BREAK), run
                continue
            assert run.start >= end, (run, runs)
            assert source[run.start:run.start + len(run.text)] == run.text, run
            end = run.start + len(run.text)


def test_a_quote_does_not_open_on_a_separator_left_by_stray_markers():
    assert str(quote_text("|**  |* |")) == "*"  # was "| *"
    assert str(quote_text("| **a** | *b |")) == "a | b"


def test_text_after_a_link_or_image_maps_past_its_target_and_alt():
    def starts(source):
        return [(run.text, run.start) for run in rendering.visible_runs(source)]

    assert starts("[a](b)b") == [("a", 1), ("b", 6)]  # the "b" was mapped into the target
    assert starts("![a](b)a") == [("a", 7)]  # into the image's alt text
    assert starts("<http://x.org>>") == [("http://x.org", 1), (">", 14)]
