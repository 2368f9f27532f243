"""Shared pieces of the bench harness: context, result sections, corpus, timing.

A phase module (bench/phases/<name>.py) gets a :class:`Context` and returns a
:class:`Section`; bench/run.py renders the sections into bench/RESULTS.md.
"""

from __future__ import annotations

import datetime as dt
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "bench"
OUT = BENCH / "out"  # git-ignored scratch: JSON of each run, trained models
PEERS_DIR = BENCH / ".peers"  # git-ignored venvs of Taguette and doccano


def production_gunicorn_options() -> list[str]:
    """The options the Dockerfile's CMD starts gunicorn with (workers, threads, keep-alive, config file), less its
    app and --bind: the bench's web server is production's, read from the one place that defines it."""
    import json

    for line in (REPO / "Dockerfile").read_text().splitlines():
        if line.startswith("CMD ["):
            argv = json.loads(line[len("CMD "):])
            break
    else:
        raise SystemExit("bench: no CMD [...] line in the Dockerfile")
    if argv[0] != "gunicorn" or "--bind" not in argv:
        raise SystemExit(f"bench: the Dockerfile's CMD is not `gunicorn … --bind …`: {argv}")
    options = [a for a in argv[1:] if a != "config.wsgi:application"]
    at = options.index("--bind")
    return options[:at] + options[at + 2:]


def database_url() -> str:
    """The bench's database (set up by run.py) as a DATABASE_URL, for the web, worker and probe processes a phase starts."""
    from django.db import connection

    db = connection.settings_dict
    auth = db["USER"] + (f":{db['PASSWORD']}" if db.get("PASSWORD") else "")
    return f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def shared_peer_bench() -> Path:
    """The peer drivers: ../shared/peer-bench beside the repo (a clone in CI has shared/ beside it too)."""
    for candidate in (
        os.environ.get("PEER_BENCH_DIR", ""),
        REPO.parent / "shared" / "peer-bench",
        Path("/work/shared/peer-bench"),
    ):
        if candidate and (Path(candidate) / "corpus.py").exists():
            return Path(candidate)
    raise SystemExit("bench: cannot find shared/peer-bench/corpus.py; set PEER_BENCH_DIR")


def corpus_module() -> Any:
    """The deterministic peer corpus (shared/peer-bench/corpus.py), imported once."""
    path = str(shared_peer_bench())
    if path not in sys.path:
        sys.path.insert(0, path)
    import corpus  # noqa: PLC0415 - lives outside the repo

    return corpus


@dataclass
class Context:
    """What every phase gets: options and what earlier phases left (peer results)."""

    quick: bool = False
    peers: bool = False
    peer_results: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Our headline numbers, left by each phase for the ratios phase: {"apply_p50_ms": 3.1, ...}
    figures: dict[str, float] = field(default_factory=dict)
    django_ready: bool = False
    old_db_name: str = ""


@dataclass
class Section:
    """One phase's results: a table plus free notes (Markdown)."""

    title: str
    columns: list[str]
    rows: list[list[Any]]
    notes: str = ""

    def markdown(self) -> str:
        lines = [f"### {self.title}", ""]
        if self.rows:
            lines.append("| " + " | ".join(self.columns) + " |")
            lines.append("|" + "---|" * len(self.columns))
            lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in self.rows]
        if self.notes:
            lines += ["", self.notes.strip()]
        return "\n".join(lines) + "\n"


def _cell(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:,.3g}" if abs(value) < 100 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def best_of(repeats: int, fn: Callable[[], Any]) -> tuple[float, Any]:
    """Fastest wall time of ``repeats`` calls (the machine is shared and noisy) and the last result."""
    best, result = float("inf"), None
    for _ in range(repeats):
        started = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - started)
    return best, result


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{platform.node()} · {os.cpu_count()} cores · {cpu} · Python {platform.python_version()}"


def today() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
