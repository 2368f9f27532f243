"""Memory of importing a 1,000-conversation ChatGPT export: peak RSS above baseline vs file size.

The export is generated (bench/chatgpt_export.py) and imported through the
real service in a fresh process (bench/import_memory_probe.py) against the
bench database; the target is not to hold more than ~2× the file in memory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.common import BENCH, REPO, Context, Section, database_url

TITLE = "Import memory: a generated 1,000-conversation ChatGPT export"
NEEDS_DJANGO = True


def run(ctx: Context) -> Section:
    from bench.chatgpt_export import write_export

    conversations = 100 if ctx.quick else 1000
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "conversations.json"
        size = write_export(path, conversations)
        env = {**os.environ, "DATABASE_URL": database_url(), "DJANGO_SETTINGS_MODULE": "config.settings_test"}
        out = subprocess.run([sys.executable, str(BENCH / "import_memory_probe.py"), str(path)], cwd=REPO, env=env,
                             capture_output=True, text=True, timeout=1200, check=True).stdout
    r = json.loads(out.strip().splitlines()[-1])
    delta = (r["peak_kb"] - r["baseline_kb"]) * 1024
    rows = [
        ["conversations / turns / segments", f"{r['interviews']:,} / {r['turns']:,} / {r['segments']:,}"],
        ["file size MB", f"{size / 1e6:.1f}"],
        ["process RSS before the import MB", f"{r['baseline_kb'] / 1024:.0f}"],
        ["peak RSS during the import MB", f"{r['peak_kb'] / 1024:.0f}"],
        ["peak above baseline MB", f"{delta / 1e6:.1f}"],
        ["peak above baseline / file size", f"{delta / size:.2f}×"],
        ["import time s / segments per s", f"{r['seconds']:.1f} / {r['segments'] / r['seconds']:,.0f}"],
    ]
    return Section(title=TITLE + (" (quick: 100)" if ctx.quick else ""), columns=["metric", "value"], rows=rows,
                   notes="Target: the import holds no more than ~2× the file size in memory (peak RSS above the "
                         "process's baseline after Django is loaded).")
