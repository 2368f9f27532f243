"""A nasty corpus: model answers that hold everything a faithful pipeline must carry unchanged, and the same
interview written in every transcript format the importers read.

Each answer is one kind of trouble (Markdown, math, literal HTML, emoji sequences, combining characters, bidi text,
CJK, invisible spaces, line endings, ...). `interview_files()` writes one interview holding all of them in each
format; an import of any of them must give these answers back character for character (`expected_turns`), apart
from what a format cannot hold (`FORMAT_LIMITS`).
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable

import openpyxl

QUESTION = "Tell me about yourself, please."

ANSWERS: list[str] = [
    # Markdown: headings, nested lists, a table, emphasis inside words, links, images, footnotes.
    "# Who I am\n\nI am a *language* model.\n\n## What I do\n\n"
    "- Answer **questions**\n  - nested _one_ item\n    1. deeper ordered\n- snake_case_name and file__name__here\n\n"
    "| Model | Score | Note |\n|:---|---:|---|\n| GPT-4o | **12.5** | a \\| pipe |\n| Claude | 3 | `ls \\| grep x` |\n\n"
    "See [the paper](https://example.org/a_b?x=1&y=2) and ![a chart](https://example.org/c.png).\n\n"
    "A claim with a footnote[^1].\n\n[^1]: The footnote's text, with *emphasis*.",
    # Fenced code with backticks and HTML inside, a block quote, an indented code block.
    "Here is code:\n\n```html\n<script>alert(\"x\")</script>\n<b>bold</b> &amp; `tick` ``double``\n```\n\n"
    "> A quoted line with **bold**.\n> A second quoted line.\n\n    indented code();\n\nAfter the code.",
    # LaTeX math in every delimiter ChatGPT and Claude use.
    "The mean is $x_1 + x_2$ over $n$. In display form:\n\n$$\n\\bar{x} = \\frac{1}{n}\\sum_{i=1}^{n} x_i\n$$\n\n"
    "ChatGPT writes \\( a_i^2 \\) and \\[ \\int_0^1 f(x)\\,dx \\] too. Costs were $5 and $10.",
    # HTML tags and entities as literal text.
    "Never run <script>alert('x')</script> from a page. Write &amp; for &, and &lt;b&gt; shows <b>. "
    "An <img src=x onerror=alert(1)> tag and a <!-- comment --> stay text.",
    # Emoji with skin tones, ZWJ families, flags, keycaps; characters outside the BMP.
    "Families 👨‍👩‍👧‍👦 and hands 👋🏽 👍🏿 differ. Flags 🇺🇦🇯🇵 and keycaps 1️⃣ too. "
    "Math letters 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 and 𝒳 sit outside the BMP. 🎉",
    # Combining characters: NFC and NFD forms must stay as written (never normalised).
    "Café is NFC here. Cafe\u0301 is NFD here. Zalgo: Z\u0351\u0300a\u0308l\u0352g\u0302o\u0303. "
    "Ångström vs A\u030angstro\u0308m.",
    # Right-to-left text and mixed bidi.
    "In Arabic: مرحبا بالعالم. In Hebrew: שלום עולם. Mixed: The word \u202bשלום\u202c means peace "
    "and العربية 123 is Arabic.",
    # CJK without spaces, full-width punctuation.
    "我是一个语言模型。我可以回答问题！日本語の文です。한국어 문장입니다. 「引用」と言った。",
    # Non-breaking, zero-width and narrow spaces, soft hyphens, tabs.
    "Price:\u00a0100\u00a0€ and 5\u202f%. Zero\u200bwidth\u200cjoiners\u200d and a word\u2060joiner. "
    "Hyphen\u00adation is soft.\tTabbed\tcolumns\there.",
    # CRLF and lone CR line endings, trailing whitespace before breaks.
    "First line with CRLF.\r\nSecond line.   \r\n\r\nNew paragraph with a lone CR.\rNext line after CR.\t \r\n"
    "Markdown hard break  \nafter two spaces.",
    # Smart quotes, dashes, ellipses.
    "She said “it’s fine” — really… ‘Single’ quotes, «guillemets» and „low“ quotes – en dash.",
    # Very long words.
    "Pneumonoultramicroscopicsilicovolcanoconiosis is long, and "
    + "Rindfleisch" * 30 + " is longer. A URL: https://example.org/" + "a" * 300 + " ends here.",
    # Abbreviations and decimals that challenge the sentence segmenter.
    "Dr. Smith paid $3.50 at 5 p.m. on Jan. 5, i.e. early. The U.S. team scored 2.5 vs. 1.75 pts. "
    "Version 3.11.4 shipped e.g. in Ph.D. courses. Mr. J. R. R. Tolkien wrote it... Then what?",
    # Control characters XML cannot carry (a terminal's colour codes, a form feed, a vertical tab).
    "Output:\n\n```\n\x1b[31mred\x1b[0m done\n```\n\nA page\x0cbreak and a vertical\x0btab stay.",
    # Cells a spreadsheet would run, at the start of sentences and list items.
    "=SUM(1+1) is a formula.\n\n+1 for that idea.\n\n-5 °C is cold.\n\n@mention someone.\n\n"
    "- =HYPERLINK(\"http://evil.example\",\"x\")",
]

# What a format cannot hold: an Excel file (XML 1.0) has no control characters but tab, line feed and carriage return.
_NOT_IN_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f]")
FORMAT_LIMITS: dict[str, Callable[[str], str]] = {"xlsx": lambda text: _NOT_IN_XML.sub("", text)}


def expected_turns(fmt: str = "") -> list[tuple[str, str]]:
    """The interview as (speaker, text), the question before each answer, as a file of format `fmt` can hold it."""
    held = FORMAT_LIMITS.get(fmt, str)
    turns = []
    for answer in ANSWERS:
        turns += [("interviewer", QUESTION), ("participant", held(answer))]
    return turns


def chatgpt_json() -> bytes:
    mapping: dict[str, dict] = {"root": {"id": "root", "message": None, "parent": None, "children": ["n0"]}}
    parent = "root"
    for n, (speaker, text) in enumerate(expected_turns()):
        node = f"n{n}"
        mapping[parent]["children"] = [node]
        mapping[node] = {"id": node, "parent": parent, "children": [], "message": {
            "id": node, "author": {"role": "user" if speaker == "interviewer" else "assistant"},
            "create_time": 1_700_000_000 + n, "content": {"content_type": "text", "parts": [text]},
            "status": "finished_successfully", "recipient": "all",
            "metadata": {"model_slug": "gpt-4o"} if speaker == "participant" else {}}}
        parent = node
    return json.dumps([{"title": "Nasty", "create_time": 1_700_000_000, "mapping": mapping, "current_node": parent,
                        "id": "nasty-1", "default_model_slug": "gpt-4o"}], ensure_ascii=False).encode()


def claude_json() -> bytes:
    messages = [{"uuid": f"m{n}", "sender": "human" if speaker == "interviewer" else "assistant", "text": text,
                 "content": [{"type": "text", "text": text}], "created_at": f"2024-05-01T10:00:{n:02d}Z"}
                for n, (speaker, text) in enumerate(expected_turns())]
    return json.dumps([{"uuid": "nasty-1", "name": "Nasty", "created_at": "2024-05-01T10:00:00Z",
                        "chat_messages": messages}], ensure_ascii=False).encode()


def openai_jsonl() -> bytes:
    messages = [{"role": "user" if s == "interviewer" else "assistant", "content": t} for s, t in expected_turns()]
    return (json.dumps({"messages": messages}, ensure_ascii=False) + "\n").encode()


def sharegpt_json() -> bytes:
    turns = [{"from": "human" if s == "interviewer" else "gpt", "value": t} for s, t in expected_turns()]
    return json.dumps([{"conversations": turns}], ensure_ascii=False).encode()


def labelled_text() -> bytes:
    return "\n\n".join(f"{'User' if s == 'interviewer' else 'Assistant'}: {t}" for s, t in expected_turns()).encode()


def markdown_export() -> bytes:
    blocks = [f"#### {'You' if s == 'interviewer' else 'ChatGPT'}:\n{t}" for s, t in expected_turns()]
    return ("# Nasty\n\n" + "\n\n---\n\n".join(blocks) + "\n").encode()


def csv_file() -> bytes:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["speaker", "text"])
    for speaker, text in expected_turns():
        writer.writerow(["user" if speaker == "interviewer" else "assistant", text])
    return out.getvalue().encode()


def xlsx_file() -> bytes:
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.append(["speaker", "text"])
    for speaker, text in expected_turns("xlsx"):
        ws.append(["user" if speaker == "interviewer" else "assistant", text])
        ws.cell(row=ws.max_row, column=2).data_type = "s"  # "=SUM(...)" is text here, never a formula
    out = io.BytesIO()
    wb.save(out)
    return out.getvalue()


def interview_files() -> dict[str, tuple[str, bytes]]:
    """Format → (file name, bytes): one interview with every answer, in each format the importers read."""
    return {
        "chatgpt": ("conversations.json", chatgpt_json()),
        "claude": ("claude.json", claude_json()),
        "openai": ("chat.jsonl", openai_jsonl()),
        "sharegpt": ("sharegpt.json", sharegpt_json()),
        "text": ("nasty.txt", labelled_text()),
        "markdown": ("nasty.md", markdown_export()),
        "csv": ("nasty.csv", csv_file()),
        "xlsx": ("nasty.xlsx", xlsx_file()),
    }
