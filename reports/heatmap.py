"""The frequency table as a heatmap: SVG (built as escaped text, no scripts) and PNG (Pillow).

Cell colour is the share of the model's coded segments (0 → white, the table's largest
share → full blue), so a glance compares models of different answer lengths. Each cell
also prints its count and share, so the figure reads in greyscale too. A sectioned table
draws each section under its name, with its own shares, as the table does.
"""

from __future__ import annotations

import io
from xml.sax.saxutils import escape, quoteattr

from PIL import Image, ImageDraw, ImageFont

from projects.text import shortened
from reports.frequency import FrequencyRow, FrequencyTable

CELL_W, CELL_H = 96, 30
LABEL_W_MAX = 320
HEAD_H = 64
FONT_SIZE = 13
LOW, HIGH = (255, 255, 255), (47, 93, 138)  # the app's accent blue


def _colour(share: float | None, top: float) -> tuple[int, int, int]:
    if share is None or top <= 0:
        return (240, 240, 240)
    t = max(0.0, min(1.0, share / top))
    return tuple(round(lo + (hi - lo) * t) for lo, hi in zip(LOW, HIGH, strict=True))  # type: ignore[return-value]


def _ink(fill: tuple[int, int, int]) -> str:
    # Dark text on light cells, white on dark ones (luminance), for contrast.
    return "#1f2328" if 0.299 * fill[0] + 0.587 * fill[1] + 0.114 * fill[2] > 150 else "#ffffff"


def _cell_text(n: int, share: float | None, empty: str = "–") -> str:
    return f"{n} ({share:.0f}%)" if share is not None else empty


def _cell_w(table: FrequencyTable) -> int:
    longest = max((len(p.label) for p in table.columns), default=8)
    return max(CELL_W, min(220, 16 + 8 * longest))


def _label(row) -> str:
    return ("   " if row.depth else "") + row.label


def _lines(table: FrequencyTable) -> list[FrequencyRow | str]:
    """The figure's lines from the top: the rows, each section's under its name (a str) when sectioned."""
    if not table.sections:
        return list(table.rows)
    lines: list[FrequencyRow | str] = []
    for part in table.sections:
        empty = FrequencyRow(label=f"(no {table.level}s in these interviews)", uuid="", colour="", depth=0, counts=[],
                             percents=[])
        lines += [part.label, *(part.rows or [empty])]
    return lines


def _label_width(table: FrequencyTable) -> int:
    longest = max((len(line if isinstance(line, str) else _label(line)) for line in _lines(table)), default=10)
    return min(LABEL_W_MAX, 24 + 7 * longest)


def _cut(text: str, limit: int) -> str:
    return shortened(text, limit)


# On screen the columns keep their width however long the labels are: a label that does not fit
# above its column is cut and turned 45°, its full text in a <title> (the browser's tooltip).
COLUMN_LABEL_MAX, ROW_LABEL_MAX, CHAR_W = 24, 44, 7


def _column_head(table: FrequencyTable) -> tuple[bool, int, int]:
    """Whether the column labels are turned, the header's height and the room they need on the right."""
    longest = max((len(_cut(p.label, COLUMN_LABEL_MAX)) for p in table.columns), default=0)
    if CHAR_W * longest + 8 <= CELL_W:
        return False, HEAD_H, 0
    reach = round(CHAR_W * longest * 0.71)  # sin 45° = cos 45°
    return True, max(HEAD_H, reach + 24), max(0, reach - CELL_W // 2)


def heatmap_svg(table: FrequencyTable, title: str = "") -> str:
    label_w = _label_width(table)
    turned, head_h, right = _column_head(table)
    width = label_w + CELL_W * len(table.columns) + 8 + right
    lines = _lines(table)
    height = head_h + CELL_H * len(lines) + 8
    top = table.max_percent
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label={quoteattr(title or "Frequency heatmap")} font-family="system-ui, sans-serif" font-size="{FONT_SIZE}">',
        f"<title>{escape(title or 'Frequency heatmap')}</title>",
        f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
    ]
    for j, p in enumerate(table.columns):
        x, y = label_w + CELL_W * j + CELL_W / 2, head_h - 10
        shown = escape(_cut(p.label, COLUMN_LABEL_MAX))
        place = (f'x="{x - 8:.0f}" y="{y}" transform="rotate(-45 {x - 8:.0f} {y})"' if turned
                 else f'x="{x:.0f}" y="{y}" text-anchor="middle"')
        out.append(f'<text {place} font-weight="600"><title>{escape(p.label)}</title>{shown}</text>')
    for i, row in enumerate(lines):
        y = head_h + CELL_H * i
        if isinstance(row, str):  # a section's name
            out.append(f'<text x="6" y="{y + CELL_H / 2 + 4:.0f}" font-weight="700"><title>{escape(row)}</title>'
                       f"{escape(_cut(row, ROW_LABEL_MAX))}</text>")
            continue
        out.append(f'<text x="{6 + 12 * min(row.depth, 3)}" y="{y + CELL_H / 2 + 4:.0f}"><title>{escape(row.label)}</title>'
                   f"{escape(_cut(row.label, ROW_LABEL_MAX))}</text>")
        for j, (n, share) in enumerate(zip(row.counts, row.percents, strict=True)):
            fill = _colour(share, top)
            x = label_w + CELL_W * j
            out.append(f'<rect x="{x}" y="{y}" width="{CELL_W - 2}" height="{CELL_H - 2}" fill="rgb{fill}" stroke="#d9dcdf">'
                       f"<title>{escape(f'{row.label} · {table.columns[j].label}: {_cell_text(n, share)}')}</title></rect>")
            out.append(f'<text x="{x + CELL_W / 2 - 1:.0f}" y="{y + CELL_H / 2 + 4:.0f}" text-anchor="middle" '
                       f'fill="{_ink(fill)}">{escape(_cell_text(n, share))}</text>')
    out.append("</svg>")
    return "\n".join(out)


# DejaVu (Debian's fonts-dejavu-core, where installed) covers far more scripts than Pillow's bundled font.
SYSTEM_FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
SYSTEM_BOLD_FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"


def _font(size: int, path: str = SYSTEM_FONT) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    try:
        return ImageFont.truetype(path, size)
    except OSError:
        return ImageFont.load_default(size=size)


def heatmap_png(table: FrequencyTable, scale: int = 2) -> bytes:
    label_w, CELL_W = _label_width(table), _cell_w(table)  # noqa: N806 - the module constant, widened
    width = label_w + CELL_W * len(table.columns) + 8
    lines = _lines(table)
    height = HEAD_H + CELL_H * len(lines) + 8
    image = Image.new("RGB", (width * scale, height * scale), "white")
    draw = ImageDraw.Draw(image)
    font = _font(FONT_SIZE * scale)
    top = table.max_percent
    for j, p in enumerate(table.columns):
        x = (label_w + CELL_W * j + CELL_W / 2) * scale
        draw.text((x, (HEAD_H - 14) * scale), p.label[:26], fill="#1f2328", font=font, anchor="ms")
    bold = _font(FONT_SIZE * scale, SYSTEM_BOLD_FONT)
    for i, row in enumerate(lines):
        y = HEAD_H + CELL_H * i
        if isinstance(row, str):  # a section's name
            draw.text((6 * scale, (y + CELL_H / 2) * scale), row[:44], fill="#1f2328", font=bold, anchor="lm")
            continue
        draw.text((6 * scale, (y + CELL_H / 2) * scale), _label(row)[:44], fill="#1f2328", font=font, anchor="lm")
        for j, (n, share) in enumerate(zip(row.counts, row.percents, strict=True)):
            fill = _colour(share, top)
            x = label_w + CELL_W * j
            draw.rectangle([x * scale, y * scale, (x + CELL_W - 2) * scale, (y + CELL_H - 2) * scale], fill=fill,
                           outline=(217, 220, 223), width=scale)
            draw.text(((x + CELL_W / 2 - 1) * scale, (y + CELL_H / 2) * scale), _cell_text(n, share, "-"),
                      fill=_ink(fill), font=font, anchor="mm")
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=False)
    return buffer.getvalue()
