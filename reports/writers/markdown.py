"""Markdown (pipe) tables: the caption as a line above, every cell's text kept literally."""

from __future__ import annotations

import re
from collections.abc import Iterator

from projects.numbers import number_text
from reports.writers import INFINITY_TEXT, Cell, Heading, Table

# Characters that would change the rendering (emphasis, links, HTML, cell borders, entities such as "&amp;", and the
# dollar signs GitHub, Pandoc and Obsidian read as math).
_SPECIAL = re.compile(r"([\\`*_\[\]<>|~#&$])")
FLUSH_ROWS = 500


def md_escape(value: Cell) -> str:
    if value is None or value != value:  # NaN: undefined
        return ""
    text = (INFINITY_TEXT.get(value) or number_text(value)) if isinstance(value, float) else str(value)
    text = _SPECIAL.sub(r"\\\1", text)
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "<br>")


def iter_markdown(table: Table) -> Iterator[bytes]:
    lines = []
    if table.caption:
        lines += [f"**{md_escape(table.caption)}**", ""]
    headers = [f"{group}: {h}" if group else h for group, h in zip(table.group_of_column(), table.headers, strict=True)]
    lines.append("| " + " | ".join(md_escape(h) for h in headers) + " |")
    lines.append("|" + "|".join("---:" if i in table.numeric else "---" for i in range(len(table.headers))) + "|")
    for n, row in enumerate(table.iter_rows(), start=1):
        if isinstance(row, Heading):
            lines.append("| " + " | ".join([f"**{md_escape(row.text)}**", *[""] * (len(table.headers) - 1)]) + " |")
        else:
            lines.append("| " + " | ".join(md_escape(v) for v in row) + " |")
        if n % FLUSH_ROWS == 0:
            yield ("\n".join(lines) + "\n").encode("utf-8")
            lines = []
    for note in table.notes:
        lines += ["", f"*Note.* {md_escape(note)}"]
    yield ("\n".join(lines) + "\n").encode("utf-8")
