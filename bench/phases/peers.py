"""Taguette and doccano, installed from PyPI into git-ignored venvs, driven over loopback HTTP.

The drivers and report.py are the shared ones in ../shared/peer-bench/; this
phase only installs the tools, runs each driver once on the shared corpus and
merges report.py's per-tool tables into one side-by-side table. Calibre
(Taguette's .txt/.docx conversion) is optional and skipped.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from bench.common import OUT, PEERS_DIR, Context, Section, shared_peer_bench

TITLE = "Peers: Taguette and doccano"
PEERS_ONLY = True

TOOLS: dict[str, dict] = {
    "taguette": {
        "label": "Taguette 1.5.2",
        "packages": ["taguette==1.5.2", "requests==2.34.2", "psutil==7.2.2"],
        "driver": "taguette_bench.py",
        "args": lambda venv: ["--python", str(venv / "bin" / "python"), "--txt-docs", "0", "--calibre-reps", "0"],
    },
    "doccano": {
        "label": "doccano 1.8.4 (5 workers)",
        "packages": ["doccano==1.8.4", "requests==2.34.2", "psutil==7.2.2", "marshmallow==3.26.2", "numpy==1.26.4"],
        "driver": "doccano_bench.py",
        "args": lambda venv: ["--venv", str(venv), "--workers", "5"],
    },
}


def run(ctx: Context) -> Section:
    OUT.mkdir(exist_ok=True)
    tables: dict[str, list[tuple[str, str]]] = {}
    notes = []
    for name, tool in TOOLS.items():
        venv = ensure_venv(name, tool["packages"])
        result = OUT / f"peer-{name}.json"
        argv = [str(venv / "bin" / "python"), str(shared_peer_bench() / tool["driver"]), *tool["args"](venv), "--json", str(result)]
        if ctx.quick:
            argv += ["--docs", "5", "--seq", "200", "--conc-n", "200", "--big-factor", "0", "--export-reps", "1"]
        argv += ["--max-seconds", "900"]
        log = OUT / f"peer-{name}.log"
        with log.open("w") as fh:
            proc = subprocess.run(argv, stdout=fh, stderr=subprocess.STDOUT, timeout=1800, check=False)
        if proc.returncode != 0 or not result.exists():
            notes.append(f"- {tool['label']}: driver failed (exit {proc.returncode}); see {log.relative_to(OUT.parent.parent)}")
            continue
        ctx.peer_results[name] = json.loads(result.read_text())
        tables[tool["label"]] = report_rows(result)
    return Section(
        title=TITLE + " (same corpus, same run; report.py medians)",
        columns=["metric", *tables],
        rows=merge(tables),
        notes="\n".join(notes)
        + "\nOne run per tool per `make bench PEERS=1`; the machine is shared and noisy (±25 %), compare within a run.",
    )


def ensure_venv(name: str, packages: list[str]) -> Path:
    """bench/.peers/.venv-<name> with the pinned packages; created once, reused after."""
    venv = PEERS_DIR / f".venv-{name}"
    marker = venv / ".installed"
    wanted = "\n".join(packages)
    if marker.exists() and marker.read_text() == wanted:
        return venv
    python = shutil.which("python3.11") or shutil.which("python3") or sys.executable
    PEERS_DIR.mkdir(parents=True, exist_ok=True)
    print(f"bench: installing {name} into {venv} …", flush=True)
    subprocess.run([python, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet", *packages], check=True)
    marker.write_text(wanted)
    return venv


def report_rows(result: Path) -> list[tuple[str, str]]:
    out = subprocess.run(
        [sys.executable, str(shared_peer_bench() / "report.py"), str(result)], capture_output=True, text=True, check=True
    ).stdout
    rows = []
    for line in out.splitlines()[2:]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 2:
            rows.append((cells[0], cells[1]))
    return rows


def merge(tables: dict[str, list[tuple[str, str]]]) -> list[list[str]]:
    order: list[str] = []
    values: dict[str, dict[str, str]] = {}
    for label, rows in tables.items():
        for metric, value in rows:
            if metric not in values:
                order.append(metric)
                values[metric] = {}
            values[metric][label] = value
    return [[metric, *(values[metric].get(label, "–") for label in tables)] for metric in order]
