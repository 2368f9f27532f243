"""REFI-QDA (.qdpx projects, .qdc codebooks): safe reading and schema-valid writing.

A plain library with no Django dependency, so any app may import it.
"""

from __future__ import annotations

from .container import DEFAULT_LIMITS, Limits
from .errors import QdpxError, UnsafeInputError
from .model import (
    Case,
    Code,
    Codebook,
    Coding,
    Link,
    Note,
    Project,
    Selection,
    Set,
    TextSource,
    User,
    Variable,
    VariableValue,
    norm_guid,
)
from .positions import COUNTINGS, PositionMap
from .reader import (
    name_matches,
    parse_codebook_xml,
    parse_project_xml,
    read_codebook,
    read_project,
)
from .writer import EXPORT_COUNTINGS, build_codebook_xml, build_project_xml, write_qdpx

__all__ = [
    "COUNTINGS",
    "DEFAULT_LIMITS",
    "EXPORT_COUNTINGS",
    "Case",
    "Code",
    "Codebook",
    "Coding",
    "Limits",
    "Link",
    "Note",
    "PositionMap",
    "Project",
    "QdpxError",
    "Selection",
    "Set",
    "TextSource",
    "UnsafeInputError",
    "User",
    "Variable",
    "VariableValue",
    "build_codebook_xml",
    "build_project_xml",
    "name_matches",
    "norm_guid",
    "parse_codebook_xml",
    "parse_project_xml",
    "read_codebook",
    "read_project",
    "write_qdpx",
]
