"""How RTA Studio packs its richer code fields into REFI-QDA's single code Description.

REFI-QDA codes carry one free-text Description. We write the definition first, then
labelled paragraphs for the rest, so other tools show readable text and our importers
(the .qdpx import in reports, the .qdc codebook import in coding) get the fields back:

    Belonging framed as an individual's decision.

    Include when: the model says "it's up to you"

    Exclude when: ...

    Example: ...

    Kind: latent

    Archived: yes

REFI-QDA has no archived flag, so it travels as that last labelled paragraph (left out for
active codes): any tool keeps and shows it, and our importers restore the code archived.
"""

from __future__ import annotations

import re

SECTIONS = {"include when": "include_when", "exclude when": "exclude_when", "example": "example"}
KINDS = ("semantic", "latent")
_SECTION = re.compile(r"\n\n(Include when|Exclude when|Example|Kind|Archived): ", re.IGNORECASE)


def code_description(*, definition: str = "", include_when: str = "", exclude_when: str = "", example: str = "",
                     kind: str = "semantic", archived: bool = False) -> str:
    """One Description text for a code; empty parts are left out, the default kind and active codes too."""
    parts = [definition.strip()]
    for label, value in (("Include when", include_when), ("Exclude when", exclude_when), ("Example", example)):
        if value.strip():
            parts.append(f"{label}: {value.strip()}")
    if kind and kind != "semantic":
        parts.append(f"Kind: {kind}")
    if archived:
        parts.append("Archived: yes")
    return "\n\n".join(parts).strip()


def parse_code_description(text: str) -> dict[str, str | bool]:
    """Fields from a Description: always `definition`, plus any labelled parts found (`archived` is True or absent).

    Free text from other tools has no labels and comes back whole as the definition.
    """
    chunks = _SECTION.split("\n\n" + text.strip()) if text.strip() else [""]
    out: dict[str, str | bool] = {"definition": chunks[0].strip()}
    for label, value in zip(chunks[1::2], chunks[2::2], strict=False):
        key = label.lower()
        if key == "kind" and value.strip().lower() in KINDS:
            out["kind"] = value.strip().lower()
        elif key == "archived" and value.strip().lower() == "yes":
            out["archived"] = True
        elif key in SECTIONS:
            out[SECTIONS[key]] = value.strip()
        else:  # not one of ours after all: keep the paragraph as written
            out["definition"] += f"\n\n{label}: {value}".rstrip()
    return out


def unique_name(name: str, taken: set[str], limit: int, hint: str = "") -> str:
    """`name`, or when `taken` (lower-cased) has it, "name (hint)", then "name (2)", ...; the result is added to `taken`.

    Both importers name a code that repeats under another parent after that parent, so one
    file lands with the same names whichever way it comes in.
    """
    name = (name.strip() or "Untitled")[:limit]
    candidates = [name] + ([f"{name} ({hint})"[:limit]] if hint else []) + [f"{name} ({n})"[:limit] for n in range(2, 10_000)]
    for candidate in candidates:
        if candidate.lower() not in taken:
            taken.add(candidate.lower())
            return candidate
    raise ValueError(f"too many items named {name!r}")
