"""Import end to end: parse + segment + store the peer corpus, and a 1,000-conversation ChatGPT export.

Owned by the import half of issue 3 (interviews/services_import.py).
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from bench.common import Context, Section, best_of, corpus_module

TITLE = "Import (parse + segment + store)"
NEEDS_DJANGO = True
TAGUETTE_REFERENCE_S = 0.48  # the figure: Taguette imports the corpus (no segmentation)
SAMPLE = Path("/work/shared/samples/chatgpt/chatgpt2graph-conversations.json")


def run(ctx: Context) -> Section:
    from django.db import transaction

    from interviews.models import Segment
    from interviews.services_import import ImportOptions, import_paths
    from projects.models import Project

    corpus = corpus_module()
    docs = corpus.make_corpus()
    n_sentences = sum(len(corpus.doc_sentences(d)) for d in docs)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for d in docs:
            p = Path(tmp) / f"{d['name']}.txt"
            p.write_text(corpus.doc_to_text(d))
            paths.append(str(p))
        options = ImportOptions(participant="new:Participant", allow_duplicates=True)
        commits: list[float] = []

        def once():
            project = Project.objects.create(name="bench import")
            # The import's own transaction inside this one (a savepoint), to time the commit apart.
            with transaction.atomic():
                summary = import_paths(project=project, user=None, paths=paths, options=options)
                commit_started = time.perf_counter()
            commits.append(time.perf_counter() - commit_started)
            return summary

        repeats = 1 if ctx.quick else 5
        cpu_before = (time.process_time(), _backend_cpu_s())
        seconds, summary = best_of(repeats, once)
        cpu_after = (time.process_time(), _backend_cpu_s())
        rate = summary.segments / seconds
        ctx.figures["import_corpus_s"] = seconds
        taguette = _taguette_import_s(ctx)
        rows.append(["peer corpus: interviews / turns / segments", f"{len(summary.interviews)} / {summary.turns} / "
                     f"{summary.segments}", f"{len(docs)} docs, {n_sentences} sentences"])
        rows.append([f"peer corpus: import s (best of {repeats})", round(seconds, 3), taguette])
        rows.append(["peer corpus: segments/s end to end (target ≥ 10,000)", round(rate), None])
        # Deferred foreign keys: PostgreSQL checks every segment's (turn, interview) against the turns at commit.
        rows.append(["… of an import, its commit (the segments' keys checked) ms, median", round(
            statistics.median(commits) * 1000), None])
        rows.append(["ratio to Taguette's import time", f"{seconds / taguette:.2f}×", "1×"])
        if cpu_before[1] is not None and cpu_after[1] is not None:
            # CPU time is steadier than wall time on a shared machine, and says which side to speed up.
            ours, database = ((after - before) / repeats * 1000 for before, after in zip(cpu_before, cpu_after, strict=True))
            rows.append(["peer corpus: CPU ms per import, this process / its PostgreSQL backend",
                         f"{ours:.0f} / {database:.0f}", None])

        export = Path(tmp) / "conversations.json"
        n_conv = 200 if ctx.quick else 1000
        _write_export(export, n_conv)
        size_mb = export.stat().st_size / 1e6
        started = time.perf_counter()
        project = Project.objects.create(name="bench chatgpt")
        big = import_paths(project=project, user=None, paths=[str(export)])
        big_s = time.perf_counter() - started
        rows.append([f"ChatGPT export, {n_conv} conversations ({size_mb:.0f} MB): import s", round(big_s, 2), None])
        rows.append(["… interviews / turns / segments", f"{len(big.interviews)} / {big.turns} / {big.segments}", None])
        rows.append(["… segments/s", round(big.segments / big_s), None])
        Segment.objects.all().delete()
    return Section(
        title=TITLE, columns=["metric", "RTA Studio", "Taguette"], rows=rows,
        notes=("End to end through `interviews.services_import.import_paths` (the management command's path): read "
               "the files, parse speaker labels, segment every turn with `interviews.segmentation`, insert interviews "
               "with bulk_create and turns and segments with PostgreSQL COPY, all in one transaction. Each peer-corpus "
               "repeat imports into a fresh project; its CPU row averages the repeats (the backend's from /proc, when "
               "PostgreSQL runs on this machine). The ChatGPT export is the real sample conversation repeated with distinct "
               "content; it is streamed with ijson and stored in chunks (its memory is measured by the import_memory phase). "
               f"Taguette's figure is the issue's reference ({TAGUETTE_REFERENCE_S} s, no segmentation) unless PEERS=1 "
               "measured it in this run."),
    )


def _backend_cpu_s() -> float | None:
    """CPU seconds this connection's PostgreSQL backend has used, if it runs on this machine (Linux /proc)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    try:
        if b"postgres" not in Path(f"/proc/{pid}/cmdline").read_bytes():
            return None  # the database runs elsewhere (a container's pid means another process here)
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _taguette_import_s(ctx: Context) -> float:
    data = ctx.peer_results.get("taguette", {})
    for key in ("a_import", "import"):
        v = data.get(key)
        if isinstance(v, dict):
            for k in ("seconds", "total_s", "wall_s"):
                if isinstance(v.get(k), int | float):
                    return float(v[k])
    return TAGUETTE_REFERENCE_S


def _write_export(path: Path, n: int) -> None:
    conv = json.loads(SAMPLE.read_text())[0]
    user_id = next(k for k, v in conv["mapping"].items() if v["message"] and v["message"]["author"]["role"] == "user")
    with path.open("w") as f:
        f.write("[")
        for i in range(n):
            c = json.loads(json.dumps(conv))
            c["id"] = c["conversation_id"] = f"conv-{i}"
            c["title"] = f"Conversation {i}"
            c["mapping"][user_id]["message"]["content"]["parts"] = [f"Question {i}: what is the average distance?"]
            if i:
                f.write(",")
            json.dump(c, f)
        f.write("]")
