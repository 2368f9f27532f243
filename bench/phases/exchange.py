"""REFI-QDA exchange and project backups on the peer corpus: export/import and backup/restore times."""

from __future__ import annotations

import io
import tracemalloc

from bench.common import Context, Section, best_of, corpus_module

TITLE = "REFI-QDA exchange and backups"
NEEDS_DJANGO = True
PEERS_ONLY = False


def _build(n_docs: int):
    """The corpus as one project: turns segmented as usual, every participant segment coded once."""
    from django.contrib.auth import get_user_model

    from coding.models import Code, Coding
    from interviews.models import Interview, Participant, Segment, Speaker, Turn
    from interviews.segment_store import segments_for_turns
    from projects.services import project_create

    corpus = corpus_module()
    user, _ = get_user_model().objects.get_or_create(username="bench-exchange")
    project = project_create(owner=user, name="Exchange bench")
    codes = [Code.objects.create(project=project, name=f"Code {i:02d}", position=i) for i in range(20)]
    participant = Participant.objects.create(project=project, label="Participant")
    for doc in corpus.make_corpus(n_docs=n_docs):
        interview = Interview.objects.create(project=project, participant=participant, title=doc["name"])
        turns = Turn.objects.bulk_create([
            Turn(interview=interview, position=i, text=" ".join(sents),
                 speaker=Speaker.INTERVIEWER if speaker == "Interviewer" else Speaker.PARTICIPANT)
            for i, (speaker, sents) in enumerate(doc["turns"])])
        segments = Segment.objects.bulk_create(segments_for_turns(interview, turns))
        coded = [s for s in segments if s.speaker == Speaker.PARTICIPANT]
        Coding.objects.bulk_create([Coding(segment=s, code=codes[k % 20], coder=user, interview=interview)
                                    for k, s in enumerate(coded)])
    return project, user


def run(ctx: Context) -> Section:
    from coding.models import Coding
    from reports.backup import project_backup, project_restore
    from reports.exchange import project_export_qdpx, project_import_qdpx

    n_docs = 5 if ctx.quick else 20
    project, user = _build(n_docs)
    codings = Coding.objects.filter(interview__project=project).count()
    repeats = 1 if ctx.quick else 3

    def export(positions: str) -> bytes:
        buf = io.BytesIO()
        project_export_qdpx(project=project, out=buf, positions=positions)
        return buf.getvalue()

    def backup() -> bytes:
        buf = io.BytesIO()
        project_backup(project=project, out=buf)
        return buf.getvalue()

    t_export, qdpx = best_of(repeats, lambda: export("codepoints"))
    t_export16, _ = best_of(repeats, lambda: export("utf16"))
    t_import, imported = best_of(1, lambda: project_import_qdpx(source=qdpx, owner=user, filename="bench.qdpx"))
    t_backup, archive = best_of(repeats, backup)
    t_restore, _ = best_of(1, lambda: project_restore(source=archive, owner=user, people={user.username: user}))
    tracemalloc.start()
    backup()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return Section(
        title=TITLE,
        columns=["operation", "seconds", "size / rows"],
        rows=[
            ["export .qdpx (code points)", t_export, f"{len(qdpx) / 1e6:.2f} MB"],
            ["export .qdpx (UTF-16 positions)", t_export16, ""],
            ["import .qdpx into a new project", t_import, f"{imported.codings:,} codings"],
            ["backup (ZIP of JSON)", t_backup, f"{len(archive) / 1e6:.2f} MB"],
            ["restore backup into a new project", t_restore, ""],
            ["backup peak Python memory (MB)", peak / 1e6, ""],
        ],
        notes=(f"Corpus: {n_docs} interviews of 40 turns from shared/peer-bench/corpus.py, {codings:,} codings "
               "(every participant segment, one code each). Export and backup best of "
               f"{repeats}; import and restore once (each creates a project). Import re-segments every turn and "
               "splits segments at selection boundaries; restore inserts every row with fresh keys and UUIDs."),
    )
