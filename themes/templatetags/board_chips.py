"""{% code_chip %}: one code on the themes board, in the code list or in a theme's column.

Built in Python like the coding page's chips (coding/render.py): the board shows each code once in its
list and again in every theme holding it, and the template include cost ~0.4 ms a chip, most of the
board's time with 60 codes in 24 themes.
"""

from __future__ import annotations

from html import escape

from django import template
from django.utils.safestring import SafeString, mark_safe

register = template.Library()


@register.simple_tag(takes_context=True)
def code_chip(context, code, source=None) -> SafeString:
    """`code` in the code list (no `source`; it carries `depth`, `parent_uuid`, `theme_count`, `hidden`, `context`
    from themes.queries.code_tree) or in the column of the theme `source`."""
    can_write = context["membership"].can_write
    name = escape(code.name)
    if source is None:
        classes = "code-chip" + (" context" if code.context else "") + ("" if code.theme_count else " unassigned")
        attrs = (f' id="code-{code.uuid}" class="{classes}" data-code="{code.uuid}" data-code-name="{name}"'
                 f' data-parent="{code.parent_uuid}" data-themes="{code.theme_count}" style="--depth: {code.depth}"'
                 + (" hidden" if code.hidden else ""))
        count = code.theme_count
        where = (f'<span class="in-themes" title="in {count} theme{"s" if count != 1 else ""}">in {count}</span>' if count
                 else '<span class="visually-hidden">(in no theme)</span>')
        move_label = f"Move “{name}”…"
        move_source = ""
    else:
        attrs = f' class="code-chip" data-code="{code.uuid}" data-code-name="{name}" data-source="{source.uuid}"'
        where = ""
        move_label = f"Move “{name}” in {escape(source.name)}…"
        move_source = f' data-source="{source.uuid}"'
    draggable = ' draggable="true"' if can_write else ""
    move = (f'<button type="button" class="move-btn link" data-code="{code.uuid}"{move_source} aria-label="{move_label}">Move…</button>'
            if can_write else "")
    return mark_safe(  # noqa: S308 - every value above is escaped or a number/UUID
        f'<li{attrs}{draggable}><span class="swatch" style="background: {escape(code.colour)}"></span>'
        f'<span class="code-name">{name}</span>{where}<span class="count" title="coded segments">{code.segment_count}</span>{move}</li>'
    )
