"""One name for every download: the project's name made safe, what the file holds, and the date.

"Chatbots and identity" + "excerpts" on 24 Nov 2026 → ``Chatbots-and-identity-excerpts-20261124.docx``.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any


def safe_filename(text: str, fallback: str = "export") -> str:
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")[:80]
    return stem or fallback


def download_stem(project: Any, table: str, *, on: dt.date | None = None) -> str:
    """`<project>-<table>-<YYYYMMDD>` (table: "excerpts", "code-frequency", "interview-statistics"...)."""
    return f"{safe_filename(project.name, 'project')}-{safe_filename(table)}-{(on or dt.date.today()):%Y%m%d}"


def download_filename(project: Any, table: str, ext: str, *, on: dt.date | None = None) -> str:
    return f"{download_stem(project, table, on=on)}.{ext}"
