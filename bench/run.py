"""Run the benchmark phases and write their tables into bench/RESULTS.md.

    make bench                # our phases
    make bench PEERS=1        # + Taguette and doccano on the same corpus, same run
    .venv/bin/python bench/run.py --only segmentation --quick

Phases are modules in bench/phases/, listed in bench/phases/__init__.py
(see bench/README.md, "Adding a phase"). Only the block between the
``bench:run`` markers in RESULTS.md is rewritten, and within it only the
sections of the phases just run (``--only`` updates one phase and keeps the
others as last measured, each stamped with its own time); hand-written
sections outside the block stay.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import BENCH, OUT, Context, Section, machine, today  # noqa: E402
from bench.phases import PHASES  # noqa: E402

START, END = "<!-- bench:run:start -->", "<!-- bench:run:end -->"
PHASE_CHUNK = re.compile(r"<!-- bench:phase:(\w+) -->.*?<!-- /bench:phase:\1 -->", re.S)


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
        try:
            module = importlib.import_module(f"bench.phases.{name}")
        except Exception:  # noqa: BLE001 - a phase that does not even import is reported, not fatal
            failed.append(name)
            sections.append((name, Section(f"{name}: FAILED to import", [], [], "```\n" + traceback.format_exc()[-3000:] + "```")))
            continue
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
        sections.append((name, section))
    _teardown_django(ctx)
    fresh = {name: _phase_chunk(name, section) for name, section in sections}
    print("\n".join(fresh.values()))
    if not args.no_write:
        _write(fresh, ctx, args.results)
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


def _phase_chunk(name: str, section: Section) -> str:
    """One phase's section between its own markers, stamped with when it was measured."""
    return f"<!-- bench:phase:{name} -->\n{section.markdown()}\n_Measured {today()}._\n<!-- /bench:phase:{name} -->"


def _write(fresh: dict[str, str], ctx: Context, path: Path) -> None:
    """Update the bench:run block: phases just run replace their sections, the others stay as measured."""
    old = path.read_text() if path.exists() else "# Benchmark results\n"
    before, block, after = old, "", ""
    if START in old and END in old:
        before, rest = old.split(START, 1)
        block, after = rest.split(END, 1)
    chunks = {m.group(1): m.group(0) for m in PHASE_CHUNK.finditer(block)}
    chunks.update(fresh)
    order = [p for p in PHASES if p in chunks] + sorted(set(chunks) - set(PHASES))
    head = f"## Latest `make bench` runs\n\nLast written {today()} · {machine()}" + (
        " · peers run in this run" if ctx.peers else "")
    report = "\n".join([START, head, "", *(chunks[p] + "\n" for p in order), END])
    if not before.endswith("\n\n") and block == "":
        before = before.rstrip() + "\n\n"
    path.write_text(before + report + (after if block else "\n"))
    print(f"bench: wrote {path}")


def _setup_django(ctx: Context) -> None:
    """A throw-away database (test_rta_bench_<pid>), migrated, so benches never touch real data.

    Named per process so two bench runs never drop each other's database, and
    set over any TEST_DATABASE_NAME a developer exported for their own tests.
    """
    if ctx.django_ready:
        return
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings_test")
    # Sessions and users read from Redis, as in production (config/settings_test.py keeps them in
    # the database for the test suite's query counts); web processes started by phases inherit it.
    os.environ["RTA_TEST_CACHED_AUTH"] = "true"
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
