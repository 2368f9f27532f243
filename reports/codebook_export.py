"""The codebook as a table (DOCX, CSV) and as a REFI-QDA codebook (.qdc).

Rows follow the code tree (parents before their children, depth shown by the path);
counts are coded segments, trash excluded. The .qdc comes from the refiqda writer, with
codes and themes (as sets) taken from the project the same way the .qdpx export does.
"""

from __future__ import annotations

from collections import defaultdict

from coding.models import Code
from projects.models import Project
from reports.writers import Table
from themes.excerpts import coded_segments
from themes.models import ThemeCode

HEADERS = ["Code", "Parent", "Kind", "Definition", "Include when", "Exclude when", "Example", "Colour", "Themes",
           "Coded segments", "Archived"]
WIDTHS = [1.4, 1.0, 0.7, 2.6, 1.6, 1.6, 1.6, 0.7, 1.2, 0.7, 0.6]


def codebook_rows(project: Project) -> list[list[object]]:
    """One row per live code in tree order (3 queries)."""
    codes = list(Code.objects.for_project(project).order_by("position", "name", "pk"))
    segments = coded_segments(project)
    themes: dict[int, list[str]] = defaultdict(list)
    for code_id, name in (ThemeCode.objects.filter(theme__project=project, theme__deleted_at__isnull=True)
                          .order_by("theme__position", "theme__name").values_list("code_id", "theme__name")):
        themes[code_id].append(name)
    by_id = {c.pk: c for c in codes}
    children: dict[int | None, list[Code]] = defaultdict(list)
    for c in codes:
        children[c.parent_id if c.parent_id in by_id else None].append(c)
    rows: list[list[object]] = []

    def walk(parent_id: int | None, seen: frozenset[int]) -> None:
        for c in children[parent_id]:
            if c.pk in seen:  # a cycle in bad data must not hang the export
                continue
            parent = by_id[c.parent_id].name if c.parent_id in by_id else ""
            rows.append([c.name, parent, c.get_kind_display(), c.definition, c.include_when, c.exclude_when, c.example,
                         c.colour, "; ".join(themes[c.pk]), segments.get(c.pk, 0), "yes" if c.archived else ""])
            walk(c.pk, seen | {c.pk})

    walk(None, frozenset())
    return rows


def codebook_table(project: Project) -> Table:
    rows = codebook_rows(project)
    return Table(caption=f"Codebook of {project.name}", headers=HEADERS, rows=iter(rows), row_count=len(rows),
                 widths=WIDTHS, numeric=frozenset({9}), label="tab:codebook")


def codebook_qdc(project: Project) -> bytes:
    """The codebook as REFI-QDA .qdc XML (codes with hierarchy, colours, descriptions; themes as sets)."""
    from refiqda.model import Codebook
    from refiqda.writer import build_codebook_xml
    from reports.exchange import _Exporter, theme_sets  # the .qdpx's mapping: same GUIDs and descriptions

    roots, guids = _Exporter(project).codes()
    return build_codebook_xml(Codebook(codes=roots, sets=list(theme_sets(project, guids).values())))
