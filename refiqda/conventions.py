"""How RTA Studio packs its richer code fields into REFI-QDA's single code Description.

REFI-QDA codes carry one free-text Description. We write the definition first, then
labelled paragraphs for the rest, so other tools show readable text and our importers
(the .qdpx import in reports, the .qdc codebook import in coding) get the fields back:

    Belonging framed as an individual's decision.

    Include when: the model says "it's up to you"

    Exclude when: ...

    Example: ...

    Kind: latent
"""

from __future__ import annotations

import re

SECTIONS = {"include when": "include_when", "exclude when": "exclude_when", "example": "example"}
KINDS = ("semantic", "latent")
_SECTION = re.compile(r"\n\n(Include when|Exclude when|Example|Kind): ", re.IGNORECASE)


def code_description(*, definition: str = "", include_when: str = "", exclude_when: str = "", example: str = "",
                     kind: str = "semantic") -> str:
    """One Description text for a code; empty parts are left out, the default kind too."""
    parts = [definition.strip()]
    for label, value in (("Include when", include_when), ("Exclude when", exclude_when), ("Example", example)):
        if value.strip():
            parts.append(f"{label}: {value.strip()}")
    if kind and kind != "semantic":
        parts.append(f"Kind: {kind}")
    return "\n\n".join(parts).strip()


def parse_code_description(text: str) -> dict[str, str]:
    """Fields from a Description: always `definition`, plus any labelled parts found.

    Free text from other tools has no labels and comes back whole as the definition.
    """
    chunks = _SECTION.split("\n\n" + text.strip()) if text.strip() else [""]
    out = {"definition": chunks[0].strip()}
    for label, value in zip(chunks[1::2], chunks[2::2], strict=False):
        key = label.lower()
        if key == "kind" and value.strip().lower() in KINDS:
            out["kind"] = value.strip().lower()
        elif key in SECTIONS:
            out[SECTIONS[key]] = value.strip()
        else:  # not one of ours after all: keep the paragraph as written
            out["definition"] += f"\n\n{label}: {value}".rstrip()
    return out
