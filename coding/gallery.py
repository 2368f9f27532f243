"""Codebook templates: starting a codebook from a file kept in `coding/codebook_templates/`.

A template is a codebook CSV (the format the codebook import reads) and a JSON sidecar of the same
name with its title, description and citation. Anyone adds one by dropping the two files there; they
land through `codebook_import`, so a template and an uploaded spreadsheet obey the same rules.
Applied to a codebook that already has codes, a template adds only the codes whose names are new.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coding.codebook_import import CodebookImportError, Row, codebook_import, rows_from_csv
from coding.models import Code
from projects.models import Project

TEMPLATES_DIR = Path(__file__).resolve().parent / "codebook_templates"
REQUIRED_KEYS = ("title", "description", "citation")


@dataclass(frozen=True)
class CodebookTemplate:
    slug: str
    title: str
    description: str
    citation: str
    csv_path: Path

    def rows(self, *, cited: bool = True) -> list[Row]:
        """The template's codes as import rows, each definition ending with the template's citation (unless not `cited`)."""
        rows = rows_from_csv(self.csv_path.read_bytes(), filename=self.csv_path.name)
        for row in rows if cited else []:
            definition = row.values.get("definition", "")
            row.values["definition"] = f"{definition}\n\nSource: {self.citation}".strip()
        return rows


@dataclass(frozen=True)
class TemplateOutcome:
    created: list[Code]
    skipped: list[str]  # names the codebook already had


def _load(sidecar: Path) -> CodebookTemplate:
    try:
        meta = json.loads(sidecar.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise CodebookImportError([f"{sidecar.name}: not valid JSON ({exc})."]) from exc
    missing = [k for k in REQUIRED_KEYS if not str(meta.get(k, "")).strip()] if isinstance(meta, dict) else list(REQUIRED_KEYS)
    csv_path = sidecar.with_suffix(".csv")
    errors = [f"{sidecar.name}: “{k}” is missing or empty." for k in missing]
    if not csv_path.exists():
        errors.append(f"{sidecar.name}: no {csv_path.name} beside it.")
    if errors:
        raise CodebookImportError(errors)
    return CodebookTemplate(slug=sidecar.stem, title=meta["title"].strip(), description=meta["description"].strip(),
                            citation=meta["citation"].strip(), csv_path=csv_path)


def codebook_templates(directory: Path = TEMPLATES_DIR) -> list[CodebookTemplate]:
    """Every template in the directory, by title."""
    return sorted((_load(p) for p in directory.glob("*.json")), key=lambda t: t.title.lower())


def codebook_template(slug: str, directory: Path = TEMPLATES_DIR) -> CodebookTemplate | None:
    """The template named `slug`, or None (slugs come from URLs: only names listed in the directory count)."""
    return next((t for t in codebook_templates(directory) if t.slug == slug), None)


def existing_names(project: Project) -> set[str]:
    """The codebook's names, lower-cased, as the import compares them."""
    return {n.lower() for n in Code.objects.for_project(project).values_list("name", flat=True)}


def is_taken(row: Row, existing: set[str]) -> bool:
    """The codebook (`existing_names`) already has the row's code, by name as the import compares names."""
    return " ".join(row.name.split()).lower() in existing


def codebook_template_apply(*, project: Project, actor: Any, template: CodebookTemplate) -> TemplateOutcome:
    """Import the template's codes that the codebook lacks (by name, ignoring case); all of them land or none."""
    existing = existing_names(project)
    rows = template.rows()
    new = [row for row in rows if not is_taken(row, existing)]
    skipped = [row.name for row in rows if is_taken(row, existing)]
    created = codebook_import(project=project, actor=actor, rows=new, source=f"the template “{template.title}”") if new else []
    return TemplateOutcome(created=created, skipped=skipped)
