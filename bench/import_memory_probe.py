"""Run in a fresh process by bench/phases/import_memory.py: import one file, print RSS figures as JSON.

Peak RSS (VmHWM, the high-water mark of this process's own memory) is compared with the RSS
after Django and the import code are loaded (the baseline), so the difference is what the
import itself held in memory. Not ru_maxrss: Linux carries it over from the parent across
fork and exec, so a large parent (the bench, after earlier phases) set the child's "peak".
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def main(path: str) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings_test")
    import django

    django.setup()
    from django.contrib.auth import get_user_model

    from interviews.services_import import ImportOptions, import_paths
    from projects.models import Membership, Project, Role

    user, _ = get_user_model().objects.get_or_create(username="bench-memory")
    project = Project.objects.create(name="bench memory", created_by=user)
    Membership.objects.create(project=project, user=user, role=Role.OWNER)
    baseline = status_kb("VmRSS")
    started = time.perf_counter()
    summary = import_paths(project=project, user=user, paths=[path], format="chatgpt", options=ImportOptions())
    seconds = time.perf_counter() - started
    peak = status_kb("VmHWM")
    print(json.dumps({"baseline_kb": baseline, "peak_kb": peak, "seconds": seconds, "interviews": len(summary.interviews),
                      "turns": summary.turns, "segments": summary.segments}))


if __name__ == "__main__":
    main(sys.argv[1])
