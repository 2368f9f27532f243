"""The bench harness: every registered phase is a loadable module, and a run rewrites only its own block."""

from __future__ import annotations

import importlib

from bench.common import Section
from bench.phases import PHASES
from bench.run import END, START, _write


def test_every_registered_phase_has_a_title_and_a_run_function() -> None:
    assert len(PHASES) == len(set(PHASES))
    assert PHASES[0] == "peers", "peers run first so later phases can compare within the same run"
    for name in PHASES:
        module = importlib.import_module(f"bench.phases.{name}")
        assert isinstance(module.TITLE, str) and module.TITLE
        assert callable(module.run)


def test_section_renders_a_markdown_table() -> None:
    text = Section("Import", ["metric", "value"], [["segments/s", 12345.6], ["missing", None], ["ratio", 0.4567]], "note").markdown()
    assert text.splitlines()[:5] == ["### Import", "", "| metric | value |", "|---|---|", "| segments/s | 12,346 |"]
    assert "| missing | – |" in text and "| ratio | 0.457 |" in text and text.rstrip().endswith("note")


def test_a_run_replaces_only_the_marked_block(tmp_path) -> None:
    results = tmp_path / "RESULTS.md"
    _write(f"{START}\nfirst run\n{END}", results)
    results.write_text("# Bench\n\n## Hand-written\nkept\n\n" + results.read_text().split("# Benchmark results")[-1].lstrip() + "\n## After\nalso kept\n")
    _write(f"{START}\nsecond run\n{END}", results)
    text = results.read_text()
    assert "second run" in text and "first run" not in text
    assert "## Hand-written\nkept" in text and "## After\nalso kept" in text
    assert text.count(START) == 1 and text.count(END) == 1
