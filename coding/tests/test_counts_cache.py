"""The project's code counts are read from one cached copy (coding.queries.code_participant_counts): the codebook and
the codes API show what a plain count shows, and a write shows on the next request. The codings API pages by the
project's cached codings per interview (coding.queries.interview_coding_counts) in the same way."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.db.models import Count
from django.urls import reverse

from coding.api import CodingPagination
from coding.models import Coding
from coding.queries import COUNTED_KINDS, code_participant_counts
from coding.services import code_merge, coding_apply, coding_remove
from interviews.models import Speaker
from projects import live

pytestmark = pytest.mark.django_db


@pytest.fixture
def coded(project, owner, analyst, make_interview, make_code):
    """Two participants' interviews, three codes, codings by two coders (one segment by both)."""
    codes = [make_code(name) for name in ("Home", "Trust", "Time")]
    interviews = [make_interview(title="GPT", label="GPT-4o"), make_interview(title="Claude", label="Claude")]
    for k, interview in enumerate(interviews):
        answers = list(interview.segments.filter(speaker=Speaker.PARTICIPANT).order_by("position").values_list("pk", flat=True))
        for j, code in enumerate(codes[: k + 2]):
            for user in (owner, analyst)[: 1 + (j == 0)]:
                coding_apply(project_uuid=project.uuid, interview_uuid=interview.uuid, user_id=user.pk, code_id=code.pk,
                             segment_ids=answers[j:j + 2])
    return codes, interviews


def _recount(project) -> dict[tuple[int, int], int]:
    return {(c, p): n for c, p, n in Coding.objects.filter(interview__project=project, interview__deleted_at__isnull=True)
            .values_list("code_id", "interview__participant_id").annotate(n=Count("id")).order_by()}


def _uses(client, project) -> dict[str, int]:
    return {c["name"]: c["uses"] for c in client.get(f"/api/projects/{project.uuid}/codes/").json()["results"]}


def _codebook_totals(client, project) -> dict[str, int]:
    nodes = client.get(reverse("coding:codebook", args=[project.uuid])).context["nodes"]
    return {node.code.name: node.total for node in nodes}


def test_the_shared_counts_are_a_plain_count_and_follow_every_coding_write(project, owner, coded):
    codes, interviews = coded
    assert code_participant_counts(project) == _recount(project)
    answer = interviews[0].segments.filter(speaker=Speaker.PARTICIPANT).order_by("-position").first()
    coding_apply(project_uuid=project.uuid, interview_uuid=interviews[0].uuid, user_id=owner.pk, code_id=codes[2].pk,
                 segment_ids=[answer.pk])
    assert code_participant_counts(project) == _recount(project)
    coding_remove(project_uuid=project.uuid, interview_uuid=interviews[0].uuid, user_id=owner.pk, code_id=codes[0].pk,
                  segment_ids=list(interviews[0].segments.values_list("pk", flat=True)))
    assert code_participant_counts(project) == _recount(project)
    code_merge(source=codes[1], target=codes[2], actor=owner)
    assert code_participant_counts(project) == _recount(project)


def test_a_code_applied_shows_on_the_codebook_and_in_the_api_on_the_next_request(project, owner, client_for, coded):
    codes, interviews = coded
    client = client_for(owner)
    before = _uses(client, project)
    assert before == _codebook_totals(client, project) == {"Home": 8, "Trust": 4, "Time": 2}
    answer = interviews[1].segments.filter(speaker=Speaker.PARTICIPANT).order_by("-position").first()
    response = client.post(f"/api/projects/{project.uuid}/codings/", {
        "interview": str(interviews[1].uuid), "code": str(codes[2].uuid), "segments": [answer.pk]},
        content_type="application/json")
    assert response.status_code == 201
    assert _uses(client, project) == _codebook_totals(client, project) == {**before, "Time": 3}


def test_a_trashed_interview_leaves_the_counts_on_the_next_request(project, owner, client_for, coded):
    from projects.trash import trash_move

    _, interviews = coded
    client = client_for(owner)
    assert _codebook_totals(client, project) == {"Home": 8, "Trust": 4, "Time": 2}
    trash_move(obj=interviews[1], actor=owner)
    assert _codebook_totals(client, project) == {"Home": 4, "Trust": 2, "Time": 0}
    assert code_participant_counts(project) == _recount(project)


def test_the_codings_list_counts_from_the_shared_counts_unless_filtered(project, owner, client_for, coded,
                                                                      django_assert_num_queries):
    codes, interviews = coded
    client = client_for(owner)
    url = f"/api/projects/{project.uuid}/codings/"
    everything = Coding.objects.filter(interview__project=project).count()
    assert client.get(url).json()["count"] == everything == 14
    with django_assert_num_queries(5):  # session, user, membership (+project), live interviews, a page of codings
        assert client.get(url).json()["count"] == everything
    assert client.get(url, {"page": 2}).status_code == 404  # 14 codings are one page: the count decides
    filtered = client.get(url, {"interview": str(interviews[0].uuid)}).json()
    assert filtered["count"] == Coding.objects.filter(interview=interviews[0]).count() == len(filtered["results"]) == 6
    mine = client.get(url, {"code": str(codes[0].uuid)}).json()
    assert mine["count"] == Coding.objects.filter(code=codes[0]).count() == 8
    coding = Coding.objects.filter(coder=owner).first()
    assert client.delete(f"{url}{coding.pk}/").status_code == 204
    assert client.get(url).json()["count"] == everything - 1


def _ids(response) -> list[int]:
    assert response.status_code == 200
    return [row["id"] for row in response.json()["results"]]


def test_the_codings_pages_cut_the_plainly_ordered_list_across_interviews(project, owner, client_for, coded, make_interview,
                                                                          monkeypatch):
    from projects.trash import trash_move

    _, interviews = coded
    make_interview(title="Not coded", label="Gemini")  # an interview without codings between two with
    third = make_interview(title="Later", label="GPT-4o")
    answers = list(third.segments.filter(speaker=Speaker.PARTICIPANT).values_list("pk", flat=True))
    coding_apply(project_uuid=project.uuid, interview_uuid=third.uuid, user_id=owner.pk, code_id=coded[0][0].pk,
                 segment_ids=answers[:3])
    monkeypatch.setattr(CodingPagination, "page_size", 4)  # 6 + 8 + 0 + 3 codings: pages straddle interviews
    client = client_for(owner)
    url = f"/api/projects/{project.uuid}/codings/"

    def everything() -> list[int]:
        return list(Coding.objects.filter(interview__project=project, interview__deleted_at__isnull=True)
                    .order_by("interview_id", "segment_id", "id").values_list("id", flat=True))

    pages = [client.get(url, {"page": n}).json() for n in range(1, 6)]
    assert [row["id"] for page in pages for row in page["results"]] == everything()
    assert [len(page["results"]) for page in pages] == [4, 4, 4, 4, 1]
    assert pages[0]["count"] == 17 and pages[0]["previous"] is None and pages[4]["next"] is None
    assert pages[1]["next"].endswith("page=3")
    assert client.get(url, {"page": 6}).status_code == 404
    trash_move(obj=interviews[1], actor=owner)
    assert [i for n in (1, 2, 3) for i in _ids(client.get(url, {"page": n}))] == everything()
    assert len(everything()) == 9


def test_a_code_purged_from_the_trash_takes_its_codings_out_of_the_count(project, owner, client_for, coded):
    from projects.trash import trash_move, trash_purge

    codes, _ = coded
    client = client_for(owner)
    url = f"/api/projects/{project.uuid}/codings/"
    assert client.get(url).json()["count"] == 14
    trash_move(obj=codes[1], actor=owner)
    assert client.get(url).json()["count"] == 14  # a trashed code's codings stay until it is purged
    trash_purge(project=project, actor=owner, kind="code", uuid=codes[1].uuid)
    assert client.get(url).json()["count"] == Coding.objects.filter(interview__project=project).count() == 10
    assert code_participant_counts(project) == _recount(project)


@pytest.mark.skipif(not settings.REDIS_URL, reason="the live broker is Redis only with REDIS_URL")
def test_a_committed_apply_tells_the_pages_and_the_counts_in_one_round_trip(project, owner, coded,
                                                                            django_capture_on_commit_callbacks,
                                                                            redis_round_trips):
    codes, interviews = coded
    answer = interviews[0].segments.filter(speaker=Speaker.PARTICIPANT).order_by("-position").first()
    with django_capture_on_commit_callbacks() as callbacks:
        coding_apply(project_uuid=project.uuid, interview_uuid=interviews[0].uuid, user_id=owner.pk,
                     code_id=codes[2].pk, segment_ids=[answer.pk])
    version = live.version(project.uuid, *COUNTED_KINDS)
    redis_round_trips.clear()
    for callback in callbacks:
        callback()
    assert redis_round_trips == [("XADD", "EXPIRE", "HSET", "EXPIRE")]
    assert live.version(project.uuid, *COUNTED_KINDS) != version


def test_while_the_live_broker_is_down_counts_are_counted_every_time(project, owner, coded):
    from django.test import override_settings

    codes, interviews = coded
    answer = interviews[0].segments.filter(speaker=Speaker.PARTICIPANT).order_by("-position").first()
    with override_settings(REDIS_URL="redis://127.0.0.1:1/0"):  # nothing listens there: no version, no event
        assert code_participant_counts(project) == _recount(project)
        Coding.objects.create(segment=answer, code=codes[2], coder=owner, interview=interviews[0])
        assert code_participant_counts(project) == _recount(project)
