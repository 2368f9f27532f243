"""Pages that show a bounded amount run the same number of queries in a small and a six times larger project.

The bench's scale phase (bench/phases/scale.py) times these pages at 1×, 10× and 50× the peer corpus; these
tests pin what keeps them bounded, their query count, at two sizes built with the app's own services:
2 then 12 interviews, codes, coded passages per code, memos and comments. Themes pages are pinned the same
way in themes/tests/test_query_counts.py.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from coding import services as coding_services
from interviews.models import Speaker
from interviews.tests.factories import make_interview, make_participant
from reports.excerpts import ExcerptSpec, excerpt_options, excerpt_rows
from themes import services as theme_services

pytestmark = pytest.mark.django_db

SMALL, LARGE = 2, 12
TURNS = [
    (Speaker.INTERVIEWER, "Tell me about home. What does belonging mean to you?"),
    (Speaker.PARTICIPANT, "Home is where people know you. Belonging grows slowly. It needs time and trust."),
    (Speaker.INTERVIEWER, "And for people from migrant families?"),
    (Speaker.PARTICIPANT, "They often feel between two places. Language matters a lot. Food too. Nobody chooses alone."),
]


@pytest.fixture
def grow(project, owner):
    """grow(n) brings the project to n interviews, n codes each used in every interview, n memos and n comments."""
    state: dict = {"interviews": [], "codes": [], "theme": None, "participants": []}

    def to(n: int) -> dict:
        if state["theme"] is None:
            state["participants"] = [make_participant(project, "GPT-4o"), make_participant(project, "Claude")]
            state["theme"] = theme_services.theme_create(project=project, actor=owner, name="Belonging")
            state["review"] = theme_services.review_create(project=project, actor=owner, title="Weekly", date="2026-11-22",
                                                           attendees=[owner], themes=[state["theme"]])
        while len(state["codes"]) < n:
            code = coding_services.code_create(project=project, actor=owner, name=f"code {len(state['codes'])}")
            theme_services.theme_add_code(theme=state["theme"], actor=owner, code=code)
            state["codes"].append(code)
        while len(state["interviews"]) < n:
            k = len(state["interviews"])
            state["interviews"].append(make_interview(project, state["participants"][k % 2], TURNS, title=f"Interview {k}"))
        for interview in state["interviews"]:
            answers = list(interview.segments.filter(speaker=Speaker.PARTICIPANT).order_by("position").values_list("id", flat=True))
            for j, code in enumerate(state["codes"]):
                # Runs of two sentences, so excerpts join segments as real coding does.
                start = j % (len(answers) - 1)
                coding_services.coding_apply(project_uuid=project.uuid, interview_uuid=interview.uuid, user_id=owner.pk,
                                             code_id=code.pk, segment_ids=answers[start:start + 2])
        for m in range(n - project.memos.count()):
            theme_services.memo_create(project=project, actor=owner, title=f"Memo {m}", body="**Why** this?", kind="reflexive",
                                       code=state["codes"][m % len(state["codes"])])
        for c in range(n - state["theme"].comments.count()):
            theme_services.comment_post(theme=state["theme"], actor=owner, body=f"Point {c} @{owner.username}")
        return state

    return to


PAGES = {
    "project home": lambda p, s: reverse("project_home", args=[p.uuid]),
    "interview list": lambda p, s: reverse("interviews:list", args=[p.uuid]),
    "an interview, read view": lambda p, s: reverse("interviews:interview_detail", args=[p.uuid, s["interviews"][0].uuid]) + "?view=read",
    "an interview, coding page": lambda p, s: reverse("coding:workspace", args=[p.uuid, s["interviews"][0].uuid]),
    "participants": lambda p, s: reverse("interviews:participants", args=[p.uuid]),
    "a code's page": lambda p, s: reverse("coding:code_detail", args=[p.uuid, s["codes"][0].uuid]),
    "a code's excerpts": lambda p, s: reverse("coding:excerpts", args=[p.uuid, s["codes"][0].uuid]),
    "a code's excerpts to split": lambda p, s: reverse("coding:code_split_excerpts", args=[p.uuid, s["codes"][0].uuid]),
    "a theme page": lambda p, s: reverse("themes:detail", args=[p.uuid, s["theme"].uuid]),
    "a theme page from its first comment (every thread)": lambda p, s: reverse("themes:detail", args=[p.uuid, s["theme"].uuid])
    + f"?since={s['theme'].comments.earliest('id').id}",
    "a theme's thread": lambda p, s: reverse("themes:thread", args=[p.uuid, s["theme"].uuid]),
    "reports home": lambda p, s: reverse("reports:index", args=[p.uuid]),
    "excerpt table preview": lambda p, s: reverse("reports:excerpts", args=[p.uuid]),
    "second-reader queue": lambda p, s: reverse("coding:reader", args=[p.uuid]),
    "probes list": lambda p, s: reverse("probes:list", args=[p.uuid]),
    "API interviews": lambda p, s: f"/api/projects/{p.uuid}/interviews/",
    "API codes": lambda p, s: f"/api/projects/{p.uuid}/codes/",
    "API codings": lambda p, s: f"/api/projects/{p.uuid}/codings/",
    "API memos": lambda p, s: f"/api/projects/{p.uuid}/memos/",
    "API comments": lambda p, s: f"/api/projects/{p.uuid}/comments/",
    "API themes": lambda p, s: f"/api/projects/{p.uuid}/themes/",
    "API excerpt table, first 50 rows": lambda p, s: f"/api/projects/{p.uuid}/reports/excerpts/?limit=50",
    # Project-wide pages: what they count grows with the project, how many queries they take does not.
    "codebook with counts": lambda p, s: reverse("coding:codebook", args=[p.uuid]),
    "statistics": lambda p, s: reverse("interviews:statistics", args=[p.uuid]),
    "frequency table": lambda p, s: reverse("reports:frequency", args=[p.uuid]),
}


def _queries(client, url: str) -> list[str]:
    assert client.get(url).status_code == 200, url  # warm: counts cached for a minute are read from the cache after
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200, url
    return [q["sql"] for q in captured.captured_queries]


@pytest.mark.parametrize("name", list(PAGES))
def test_a_bounded_page_runs_the_same_queries_in_a_six_times_larger_project(name, grow, project, owner, client_for):
    client = client_for(owner)
    small = _queries(client, PAGES[name](project, grow(SMALL)))
    large = _queries(client, PAGES[name](project, grow(LARGE)))
    assert len(large) == len(small), "\n\n".join(large)


def test_the_excerpt_preview_shows_the_first_rows_of_the_full_table(grow, project):
    """The preview reads only the top of the table, with runs of codings joined as in the full export."""
    grow(LARGE)
    options = excerpt_options(project)
    spec = ExcerptSpec()
    everything = list(excerpt_rows(project, spec, options=options))
    assert len(everything) > 10
    for limit in (0, 1, 7, len(everything) - 1, len(everything), len(everything) + 5):
        first = list(excerpt_rows(project, spec, options=options, limit=limit))
        assert [r.values(spec.columns) for r in first] == [r.values(spec.columns) for r in everything[:limit]]


def test_a_long_run_cut_by_the_preview_query_is_read_whole(project, owner):
    """A run of codings longer than the preview fetches at first still comes back as one whole excerpt."""
    participant = make_participant(project)
    answer = " ".join(f"Sentence number {k} is here." for k in range(40))
    interview = make_interview(project, participant, [(Speaker.PARTICIPANT, answer)])
    code = coding_services.code_create(project=project, actor=owner, name="long")
    segments = list(interview.segments.order_by("position").values_list("id", flat=True))
    coding_services.coding_apply(project_uuid=project.uuid, interview_uuid=interview.uuid, user_id=owner.pk, code_id=code.pk,
                                 segment_ids=segments)
    options = excerpt_options(project)
    (whole,) = excerpt_rows(project, ExcerptSpec(), options=options)
    (first,) = excerpt_rows(project, ExcerptSpec(), options=options, limit=1)
    assert first.quote == whole.quote and whole.quote.startswith("Sentence number 0") and whole.quote.endswith("39 is here.")


def test_a_codes_first_excerpts_are_the_head_of_all_its_excerpts(grow, project):
    """The code page's excerpts come from a LIMITed query; they are the first of the full list, runs whole."""
    from coding.excerpts import excerpts_for_codes

    state = grow(LARGE)
    code_ids = [c.pk for c in state["codes"][:3]]
    everything = excerpts_for_codes(project, code_ids)
    assert len(everything) > 10
    for limit in (0, 1, 5, len(everything), len(everything) + 3):
        first = excerpts_for_codes(project, code_ids, limit=limit)
        assert [(e.segment_ids, e.text) for e in first] == [(e.segment_ids, e.text) for e in everything[:limit]]


def test_connections_run_without_the_jit_compiler():
    """Compiling a page's query can cost more than running it (bench/phases/scale.py: 600 ms of JIT for 90 ms)."""
    with connection.cursor() as cursor:
        cursor.execute("SHOW jit")
        assert cursor.fetchone()[0] == "off"


def test_the_interview_lists_count_each_interviews_turns_and_coded_answers(grow, project, owner, client_for):
    """The counts of the listed rows only (correlated counts) are each interview's own."""
    grow(SMALL)
    client = client_for(owner)
    listed = client.get(f"/api/projects/{project.uuid}/interviews/").json()["results"]
    assert [row["turn_count"] for row in listed] == [len(TURNS)] * SMALL
    rows = client.get(reverse("interviews:list", args=[project.uuid])).context["interviews"]
    # Two codes, each on a run of two answer sentences starting one apart: three of the seven answer sentences coded.
    assert [(row.turn_count, row.answer_segments, row.coded_segments) for row in rows] == [(4, 7, 3)] * SMALL
