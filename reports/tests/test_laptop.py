"""`make run`'s laptop default (SQLite, no broker) with the demo: every page opens and a first day's work goes through.

The suite runs on PostgreSQL, where the raw SQL of the hot paths lives; SQLite, which has neither arrays, LEAST,
nor ordered or distinct-with-delimiter aggregates before 3.44, had broken the theme board, every theme page,
excerpt context and exemplars, and deciding a suggestion, without a test noticing. laptop_walk.py runs in a
process of its own on a fresh SQLite file.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_laptop_default_opens_every_page_and_does_a_first_day_without_an_error(tmp_path):
    done = subprocess.run([sys.executable, "-m", "reports.tests.laptop_walk", str(tmp_path / "laptop.sqlite3")],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    walked = json.loads(done.stdout.strip().splitlines()[-1])
    assert walked["failures"] == []
    assert {"themes:board", "themes:detail", "themes:thread", "themes:excerpt_counts", "themes:present", "themes:review",
            "reports:excerpts", "coding:reader_run", "coding:workspace"} <= set(walked["visited"])
    # The second reader's windows ran in the laptop's threads side by side, and each was kept.
    run = walked["reader_run"]
    assert run["status"] == "done" and run["windows"] > 1 and run["suggestions"] > 0
    assert run["decided"] == 3 and run["accepted_codings"] == 2
    # Its backup and its .qdpx bring every coding back, on the same sentence.
    moved = walked["moved"]
    assert len(moved["demo"]) > 10 and moved["restored"] == moved["demo"] and moved["imported"] == moved["demo"]
