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

Notes and sets follow the same pattern. A memo's kind is a last paragraph of its Note
("Kind: analytic"), and a researcher's familiarisation note says "Kind: familiarisation note"
so our import restores it as such rather than as a memo. A theme's status and parent theme
are labelled paragraphs after its definition in the Set's Description:

    What the theme is about.

    Status: defined

    Sub-theme of: Neutrality that takes sides
"""

from __future__ import annotations

import re

SECTIONS = {"include when": "include_when", "exclude when": "exclude_when", "example": "example"}
KINDS = ("semantic", "latent")
_SECTION = re.compile(r"\n\n(Include when|Exclude when|Example|Kind|Archived): ", re.IGNORECASE)
# themes.Memo.Kind and themes.Theme.Status values (this library knows no Django; a test keeps them in step).
MEMO_KINDS = ("reflexive", "analytic", "methodological", "familiarisation")
FAMILIARISATION_NOTE = "familiarisation note"
THEME_STATUSES = ("candidate", "reviewed", "defined", "final", "discarded")
# Only a last paragraph counts, so a memo may quote "Kind: ..." anywhere above it; another tool may end it in CRLF.
_NOTE_KIND = re.compile(r"(?:\A|\r?\n\r?\n)Kind: ([A-Za-z ]+?)[ \t]*(?:\r?\n)*\Z")
_THEME_SECTION = re.compile(r"(?:\A|\n\n)(Status|Sub-theme of): ", re.IGNORECASE)


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


def note_text(text: str, kind: str) -> str:
    """A Note's text: the memo or note as written, then its kind as a last paragraph (even the default kind, so a
    text that itself ends in "Kind: ..." comes back whole)."""
    return f"{text}\n\nKind: {kind}" if text else f"Kind: {kind}"


def parse_note_text(text: str) -> tuple[str, str]:
    """(text, kind) from a Note; kind is one of MEMO_KINDS or FAMILIARISATION_NOTE, or "" when the Note names none.

    Other tools' notes have no such paragraph and come back whole, as does a paragraph naming a kind we do not have.
    """
    found = _NOTE_KIND.search(text)
    kind = found.group(1).strip().lower() if found else ""
    if kind not in (*MEMO_KINDS, FAMILIARISATION_NOTE):
        return text, ""
    return text[:found.start()], kind


def theme_description(*, definition: str = "", status: str = "candidate", parent: str = "") -> str:
    """A Set's Description for a theme: the definition as written, then status (left out when candidate, the
    default) and the parent theme's name (for a sub-theme)."""
    parts = [(label, value) for label, value in (("Status", "" if status == "candidate" else status),
                                                 ("Sub-theme of", parent.strip())) if value]
    paragraphs = [definition] if definition else []
    return "\n\n".join(paragraphs + [f"{label}: {value}" for label, value in parts])


def parse_theme_description(text: str) -> dict[str, str]:
    """Fields from a Set's Description: always `definition`, plus `status` and `parent` (a theme's name) when found.

    Free text from other tools has no labels and comes back whole as the definition.
    """
    chunks = _THEME_SECTION.split(text)
    out = {"definition": chunks[0]}
    for label, value in zip(chunks[1::2], chunks[2::2], strict=False):
        key = label.lower()
        if key == "status" and value.strip().lower() in THEME_STATUSES:
            out["status"] = value.strip().lower()
        elif key == "sub-theme of" and value.strip():
            out["parent"] = value.strip()
        else:  # not one of ours after all: keep the paragraph as written
            out["definition"] += ("\n\n" if out["definition"] else "") + f"{label}: {value}"
    return out
