"""Moving a large project between instances: its backup and .qdpx written and brought back, each in a fresh
process, at 50× the peer corpus (1,000 interviews, 198,500 codings): time and memory.

Owned by issue 20 (a project that grows must still move). The project is built as the scale phase builds it
(bench.phases.scale.build); each operation runs in bench/exchange_memory_probe.py, whose peak RSS above its
baseline is what the operation held.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.common import BENCH, REPO, Context, Section, database_url

TITLE = "Moving a large project: backup and .qdpx, written and brought back"
NEEDS_DJANGO = True


def _probe(*args: str) -> dict:
    env = {**os.environ, "DATABASE_URL": database_url(), "DJANGO_SETTINGS_MODULE": "config.settings_test"}
    out = subprocess.run([sys.executable, str(BENCH / "exchange_memory_probe.py"), *args], cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=1800, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def run(ctx: Context) -> Section:
    from django.contrib.auth import get_user_model

    from bench.phases.scale import build, template_project

    scale = int(os.environ.get("BENCH_EXCHANGE_SCALE", "5" if ctx.quick else "50"))
    user, _ = get_user_model().objects.get_or_create(username="bench-scale")
    built = build(template_project(user), scale, user)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for kind, export, bring_back in (("backup", "backup", "restore"), ("qdpx", "qdpx", "qdpx-import")):
            path = Path(tmp) / f"project.{'zip' if kind == 'backup' else 'qdpx'}"
            for operation, args in ((export, (str(built.project.uuid), str(path))), (bring_back, (str(path),))):
                r = _probe(operation, *args)
                held = (r["peak_kb"] - r["baseline_kb"]) / 1024
                rows.append([operation, f"{r['seconds']:.1f}", f"{held:.0f}", f"{path.stat().st_size / 1e6:.1f}",
                             "–" if r["codings"] is None else f"{r['codings']:,}"])
    return Section(
        title=f"{TITLE} ({scale}×: {built.interviews:,} interviews, {built.segments:,} segments, {built.codings:,} "
              "codings)",
        columns=["operation", "seconds", "memory held, MB (peak RSS above baseline)", "file MB", "codings back"],
        rows=rows,
        notes="Each operation in a fresh process (bench/exchange_memory_probe.py) through the service the worker runs "
              "(reports.backup, reports.exchange). The worker's memory ceiling is 2 GB (RTA_MEMORY_LIMIT_MB).")
