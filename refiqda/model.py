"""Plain dataclasses for a REFI-QDA project or codebook, independent of any app.

Positions on `Selection` are Unicode code points into `TextSource.text`
(end exclusive) after reading; the raw numbers from the file are kept too.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal

VariableValueType = str | bool | int | Decimal | dt.date | dt.datetime | None


def norm_guid(guid: str | None) -> str:
    """GUIDs compare case-insensitively and with or without braces."""
    return (guid or "").strip().strip("{}").lower()


@dataclass
class User:
    guid: str
    name: str = ""
    id: str = ""


@dataclass
class Code:
    guid: str
    name: str
    is_codable: bool = True
    color: str | None = None
    description: str = ""
    children: list[Code] = field(default_factory=list)
    note_refs: list[str] = field(default_factory=list)

    def walk(self, depth: int = 0, parent: Code | None = None) -> Iterator[tuple[Code, Code | None, int]]:
        """This code and its descendants as (code, parent, depth), parents first."""
        yield self, parent, depth
        for c in self.children:
            yield from c.walk(depth + 1, self)


@dataclass
class Variable:
    guid: str
    name: str
    type: str = "Text"  # Text | Boolean | Integer | Float | Date | DateTime
    description: str = ""


@dataclass
class VariableValue:
    variable_guid: str
    value: VariableValueType


@dataclass
class Case:
    guid: str
    name: str = ""
    description: str = ""
    code_refs: list[str] = field(default_factory=list)
    variable_values: list[VariableValue] = field(default_factory=list)
    source_refs: list[str] = field(default_factory=list)
    selection_refs: list[str] = field(default_factory=list)


@dataclass
class Coding:
    guid: str
    code_guid: str
    creating_user: str | None = None
    created: dt.datetime | None = None
    note_refs: list[str] = field(default_factory=list)


@dataclass
class Selection:
    guid: str
    start: int
    end: int
    name: str | None = None
    description: str = ""
    creating_user: str | None = None
    created: dt.datetime | None = None
    codings: list[Coding] = field(default_factory=list)
    note_refs: list[str] = field(default_factory=list)
    # As written in the file, before conversion to code points.
    raw_start: int | None = None
    raw_end: int | None = None


@dataclass
class TextSource:
    guid: str
    name: str
    text: str | None  # None when the file names an external source that is missing
    plain_text_path: str | None = None
    description: str = ""
    creating_user: str | None = None
    created: dt.datetime | None = None
    selections: list[Selection] = field(default_factory=list)
    codings: list[Coding] = field(default_factory=list)  # whole-source codings
    note_refs: list[str] = field(default_factory=list)
    variable_values: list[VariableValue] = field(default_factory=list)

    def selected_text(self, sel: Selection) -> str:
        return (self.text or "")[sel.start:sel.end]


@dataclass
class Note:
    guid: str
    name: str = ""
    text: str = ""
    creating_user: str | None = None
    created: dt.datetime | None = None
    modified: dt.datetime | None = None


@dataclass
class Set:
    guid: str
    name: str
    description: str = ""
    member_codes: list[str] = field(default_factory=list)
    member_sources: list[str] = field(default_factory=list)
    member_notes: list[str] = field(default_factory=list)


@dataclass
class Link:
    guid: str
    name: str = ""
    direction: str | None = None
    origin_guid: str | None = None
    target_guid: str | None = None
    color: str | None = None


@dataclass
class Codebook:
    codes: list[Code] = field(default_factory=list)
    sets: list[Set] = field(default_factory=list)
    origin: str | None = None

    def iter_codes(self) -> Iterator[tuple[Code, Code | None, int]]:
        for root in self.codes:
            yield from root.walk()


@dataclass
class Project:
    name: str
    origin: str | None = None
    creating_user: str | None = None
    created: dt.datetime | None = None
    modified: dt.datetime | None = None
    users: list[User] = field(default_factory=list)
    codes: list[Code] = field(default_factory=list)
    variables: list[Variable] = field(default_factory=list)
    cases: list[Case] = field(default_factory=list)
    sources: list[TextSource] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)
    sets: list[Set] = field(default_factory=list)
    description: str = ""
    note_refs: list[str] = field(default_factory=list)
    # How the file counted positions ("codepoints", "utf16" or "crlf1"), chosen on read.
    counting: str = "codepoints"
    # Things tolerated on read that a person may want to know about.
    warnings: list[str] = field(default_factory=list)
    # Non-text sources (PDF, pictures, audio, video) are named but not imported.
    skipped_sources: list[str] = field(default_factory=list)

    def iter_codes(self) -> Iterator[tuple[Code, Code | None, int]]:
        for root in self.codes:
            yield from root.walk()

    def codes_by_guid(self) -> dict[str, Code]:
        return {norm_guid(c.guid): c for c, _, _ in self.iter_codes()}

    def users_by_guid(self) -> dict[str, User]:
        return {norm_guid(u.guid): u for u in self.users}

    def notes_by_guid(self) -> dict[str, Note]:
        return {norm_guid(n.guid): n for n in self.notes}

    @property
    def codebook(self) -> Codebook:
        return Codebook(codes=self.codes, sets=self.sets, origin=self.origin)
