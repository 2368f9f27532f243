"""Benchmark phases, run in this order by bench/run.py.

Each entry names a module in this package that defines:
    TITLE: str
    NEEDS_DJANGO: bool = False   # run.py sets up a throw-away migrated test database first
    PEERS_ONLY: bool = False     # skipped unless PEERS=1
    def run(ctx: bench.common.Context) -> bench.common.Section
See bench/README.md, "Adding a phase".
"""

from __future__ import annotations

PHASES: list[str] = [
    "peers",  # first, so later phases can quote the peers' numbers from the same run
    "segmentation",
    "import_corpus",
    "reading",  # transcript page and statistics page, heaviest and 10× interview
    "import_memory",  # peak RSS of a fresh process importing a generated 1,000-conversation export
    "exchange",
    "conduct",  # streamed live answers: first words visible, save cadence, poll cost, 1 vs 5 models
    "exports",  # excerpt tables: all codings as CSV/XLSX/DOCX, memory and queries vs rows
    "coding",  # apply a code (1 and 8 clients), open the heaviest and a 10× interview, worker memory
    "reader",  # AI second reader: suggestions for a 440-segment interview at 800 ms per request; review vs apply
    "probes",  # a probe run against a 500 ms endpoint: wall time vs sequential
    "themes",  # themes board, one drag, map data, theme page, journal, thread poll, presenter
    "scale",  # the daily pages and API lists at 1×, 10× and 50× the corpus: time, queries, growth
    "exchange_scale",  # a 50× project's backup and .qdpx, written and brought back: time and memory
    "browser_open",  # open the heaviest and the 10× interview in headless Chromium, vs Taguette's and doccano's views
    "ratios",  # last: the issue-20 target table, each figure from this run over the faster peer's
]
