"""Run in a fresh process by bench/phases/exchange_scale.py: one export or import of a whole project, its time and
its memory printed as JSON.

    exchange_memory_probe.py backup|qdpx PROJECT_UUID FILE   write the project's backup or .qdpx to FILE
    exchange_memory_probe.py restore|qdpx-import FILE         bring FILE back as a new project

Peak RSS (VmHWM) is compared with the RSS once Django and the exchange code are loaded, as in
bench/import_memory_probe.py (which says why not ru_maxrss).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.import_memory_probe import status_kb  # noqa: E402


def main(operation: str, *args: str) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings_test")
    import django

    django.setup()
    from django.contrib.auth import get_user_model

    from projects.models import Project
    from reports.backup import project_backup, project_restore
    from reports.exchange import project_export_qdpx, project_import_qdpx

    owner = get_user_model().objects.get(username="bench-scale")
    baseline = status_kb("VmRSS")
    started = time.perf_counter()
    if operation in ("backup", "qdpx"):
        project_uuid, path = args
        project = Project.objects.get(uuid=project_uuid)
        with open(path, "wb") as out:
            (project_backup if operation == "backup" else project_export_qdpx)(project=project, out=out)
        codings = None
    elif operation == "restore":
        codings = project_restore(source=args[0], owner=owner, people={owner.username: owner}).counts["coding.coding"]
    elif operation == "qdpx-import":
        codings = project_import_qdpx(source=args[0], owner=owner, filename=Path(args[0]).name).codings
    else:
        raise SystemExit(f"unknown operation {operation!r}")
    print(json.dumps({"baseline_kb": baseline, "peak_kb": status_kb("VmHWM"), "seconds": time.perf_counter() - started,
                      "codings": codings}))


if __name__ == "__main__":
    main(*sys.argv[1:])
