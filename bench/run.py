"""Run the benchmark phases and write their tables into bench/RESULTS.md.

    make bench                # our phases
    make bench PEERS=1        # + Taguette and doccano on the same corpus, same run
    .venv/bin/python bench/run.py --only segmentation --quick

Phases are modules in bench/phases/, listed in bench/phases/__init__.py
(see bench/README.md, "Adding a phase"). Only the block between the
``bench:run`` markers in RESULTS.md is rewritten; hand-written sections
outside it stay.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import BENCH, OUT, Context, Section, machine, today  # noqa: E402
from bench.phases import PHASES  # noqa: E402

START, END = "<!-- bench:run:start -->", "<!-- bench:run:end -->"


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    ctx = Context(quick=args.quick, peers=args.peers)
    names = [p for p in PHASES if not args.only or p in args.only]
    unknown = set(args.only or ()) - set(PHASES)
    if unknown:
        print(f"bench: unknown phase(s) {sorted(unknown)}; known: {PHASES}", file=sys.stderr)
        return 2
    sections, failed = [], []
    for name in names:
        module = importlib.import_module(f"bench.phases.{name}")
        if getattr(module, "PEERS_ONLY", False) and not ctx.peers:
            continue
        print(f"bench: {name} …", flush=True)
        started = time.perf_counter()
        try:
            if getattr(module, "NEEDS_DJANGO", False):
                _setup_django(ctx)
            section = module.run(ctx)
        except Exception:  # noqa: BLE001 - one broken phase must not hide the others' numbers
            failed.append(name)
            section = Section(f"{name}: FAILED", [], [], "```\n" + traceback.format_exc()[-3000:] + "```")
        print(f"bench: {name} done in {time.perf_counter() - started:.1f} s", flush=True)
        sections.append(section)
    _teardown_django(ctx)
    report = _render(sections, ctx)
    print(report)
    if not args.no_write:
        _write(report, args.results)
        OUT.mkdir(exist_ok=True)
        (OUT / "last-run.json").write_text(json.dumps({"peers": ctx.peer_results}, indent=1, default=str))
    return 1 if failed else 0


def _parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="*", help=f"run only these phases ({', '.join(PHASES)})")
    ap.add_argument("--quick", action="store_true", help="smaller sizes, one repeat: a smoke run")
    ap.add_argument("--peers", action="store_true", default=os.environ.get("PEERS", "") not in ("", "0"),
                    help="also set up and run Taguette and doccano (env PEERS=1)")
    ap.add_argument("--results", type=Path, default=BENCH / "RESULTS.md")
    ap.add_argument("--no-write", action="store_true", help="print only")
    return ap.parse_args(argv)


def _render(sections: list[Section], ctx: Context) -> str:
    head = f"## Latest `make bench` run\n\n{today()} · {machine()}" + (" · peers: Taguette, doccano" if ctx.peers else "")
    return "\n".join([START, head, "", *(s.markdown() for s in sections), END])


def _write(report: str, path: Path) -> None:
    old = path.read_text() if path.exists() else "# Benchmark results\n"
    if START in old and END in old:
        before, rest = old.split(START, 1)
        after = rest.split(END, 1)[1]
        new = before + report + after
    else:
        new = old.rstrip() + "\n\n" + report + "\n"
    path.write_text(new)
    print(f"bench: wrote {path}")


def _setup_django(ctx: Context) -> None:
    """A throw-away database (test_rta_bench_<pid>), migrated, so benches never touch real data.

    Named per process so two bench runs never drop each other's database, and
    set over any TEST_DATABASE_NAME a developer exported for their own tests.
    """
    if ctx.django_ready:
        return
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings_test")
    os.environ["TEST_DATABASE_NAME"] = os.environ.get("BENCH_DATABASE_NAME") or f"test_rta_bench_{os.getpid()}"
    import django
    from django.db import connection

    django.setup()
    ctx.old_db_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    ctx.django_ready = True


def _teardown_django(ctx: Context) -> None:
    if not ctx.django_ready:
        return
    from django.db import connection

    connection.creation.destroy_test_db(ctx.old_db_name, verbosity=0)
    ctx.django_ready = False


if __name__ == "__main__":
    sys.exit(main())
