"""The codes and codings API: the pages' permissions, services underneath, optimistic locking."""

from __future__ import annotations

import pytest

from coding.models import Code, CodeEvent, Coding
from projects import live

pytestmark = pytest.mark.django_db


def _codes(project):
    return f"/api/projects/{project.uuid}/codes/"


def _codings(project):
    return f"/api/projects/{project.uuid}/codings/"


def test_members_list_and_analysts_create_codes(client_for, analyst, viewer, outsider, project, make_code):
    make_code("Trust")
    assert client_for(outsider).get(_codes(project)).status_code == 404
    r = client_for(viewer).get(_codes(project))
    assert r.status_code == 200 and [c["name"] for c in r.json()["results"]] == ["Trust"]
    assert client_for(viewer).post(_codes(project), {"name": "Home"}).status_code == 403
    assert client_for(outsider).post(_codes(project), {"name": "Home"}).status_code == 404
    r = client_for(analyst).post(_codes(project), {"name": "Home", "kind": "latent"}, content_type="application/json")
    assert r.status_code == 201 and r.json()["kind"] == "latent"
    assert CodeEvent.objects.filter(code__name="Home", action="created").exists()
    r = client_for(analyst).post(_codes(project), {"name": "home"}, content_type="application/json")
    assert r.status_code == 400 and "already a code" in str(r.json())


def test_patch_uses_optimistic_locking(client_for, owner, analyst, project, make_code):
    code = make_code("Trust")
    url = f"{_codes(project)}{code.uuid}/"
    r = client_for(owner).patch(url, {"definition": "Owner", "version": 1}, content_type="application/json")
    assert r.status_code == 200 and r.json()["version"] == 2
    r = client_for(analyst).patch(url, {"definition": "Analyst", "version": 1}, content_type="application/json")
    assert r.status_code == 409 and r.json()["current"]["definition"] == "Owner"
    assert client_for(analyst).patch(url, {"definition": "x"}, content_type="application/json").status_code == 400
    r = client_for(analyst).patch(url, {"archived": True, "version": 2, "reason": "done"}, content_type="application/json")
    assert r.status_code == 200 and r.json()["archived"] is True
    assert Code.objects.get(pk=code.pk).definition == "Owner"


def test_a_split_refuses_a_segment_assigned_twice_or_not_coded_with_the_code(client_for, analyst, owner, project, interview,
                                                                             participant_segments, make_code):
    code = make_code("Belonging")
    first, second, uncoded = participant_segments[:3]
    Coding.objects.bulk_create([Coding(segment=s, code=code, coder=owner, interview=interview) for s in (first, second)])
    url = f"{_codes(project)}{code.uuid}/split/"

    def split(*assignments) -> dict:
        body = {"names": ["Place", "People"], "assignments": [{"segment": s, "into": i} for s, i in assignments]}
        r = client_for(analyst).post(url, body, content_type="application/json")
        assert r.status_code == 400, r.content
        return r.json()

    assert split((first.pk, 0), (first.pk, 1)) == {"assignments": [f"Segment {first.pk} is assigned twice; give each one code."]}
    assert split((first.pk, 0), (uncoded.pk, 1)) == {
        "assignments": [f"Not coded with “Belonging”, so there is nothing to move: segment {uncoded.pk}."]}
    assert not Code.objects.filter(name__in=["Place", "People"]).exists()
    assert Coding.objects.filter(code=code).count() == 2


def test_a_refused_patch_changes_nothing_of_what_it_asked(client_for, analyst, project, make_code):
    home, code = make_code("Home"), make_code("Trust")
    url = f"{_codes(project)}{code.uuid}/"
    make_code("Taken")
    events = CodeEvent.objects.filter(code=code).count()
    stale = {"version": 0, "parent": str(home.uuid), "archived": True, "name": "Trust renamed"}
    r = client_for(analyst).patch(url, stale, content_type="application/json")
    assert r.status_code == 409 and "now version 1" in r.json()["detail"]
    duplicate = {"version": 1, "parent": str(home.uuid), "archived": True, "name": "Taken"}
    r = client_for(analyst).patch(url, duplicate, content_type="application/json")
    assert r.status_code == 400 and "already a code named “Taken”" in str(r.json())
    code.refresh_from_db()
    assert (code.parent, code.archived, code.name, code.version) == (None, False, "Trust", 1)
    assert CodeEvent.objects.filter(code=code).count() == events
    everything = {"version": 1, "parent": str(home.uuid), "archived": True, "name": "Trust in people"}
    r = client_for(analyst).patch(url, everything, content_type="application/json")
    assert r.status_code == 200 and r.json()["name"] == "Trust in people" and r.json()["archived"] is True
    code.refresh_from_db()
    assert (code.parent, code.archived, code.version) == (home, True, 4)  # moved, archived, renamed: one version each


def test_a_merged_code_stays_archived_so_merges_cannot_go_round(client_for, analyst, project, make_code):
    source, target = make_code("Advice list"), make_code("Deference")
    client_for(analyst).post(f"{_codes(project)}{source.uuid}/merge/", {"target": str(target.uuid)},
                             content_type="application/json")
    r = client_for(analyst).post(f"{_codes(project)}{source.uuid}/archive/", {"archived": False},
                                 content_type="application/json")
    assert r.status_code == 400 and "was merged into “Deference”" in str(r.json())
    source.refresh_from_db()
    r = client_for(analyst).patch(f"{_codes(project)}{source.uuid}/", {"version": source.version, "archived": False},
                                  content_type="application/json")
    assert r.status_code == 400 and "a merged code stays archived" in str(r.json())
    r = client_for(analyst).post(f"{_codes(project)}{target.uuid}/merge/", {"target": str(source.uuid)},
                                 content_type="application/json")
    assert r.status_code == 400 and "“Advice list” was merged into “Deference” (by arjun at " in str(r.json())
    assert "; nothing to merge." in str(r.json())
    source.refresh_from_db()
    target.refresh_from_db()
    assert source.archived and source.merged_into == target and target.merged_into is None


def test_a_coding_that_cannot_be_made_says_which_field_is_wrong_and_why(client_for, analyst, project, interview,
                                                                        participant_segments, make_code, make_interview):
    from coding.services import code_archive, code_merge
    from interviews.models import Speaker

    code, archived, merged = make_code("Trust"), make_code("Old idea"), make_code("Faith")
    code_archive(code=archived, actor=analyst)
    code_merge(source=merged, target=code, actor=analyst)
    other = make_interview(title="Another")
    asked = interview.segments.filter(speaker=Speaker.INTERVIEWER).first()

    def refused(**changes) -> dict:
        body = {"interview": str(interview.uuid), "code": str(code.uuid), "segments": [participant_segments[0].pk], **changes}
        r = client_for(analyst).post(_codings(project), body, content_type="application/json")
        assert r.status_code == 400, r.content
        return r.json()

    unknown = "00000000-0000-0000-0000-000000000000"
    assert refused(code=unknown) == {"code": ["No code with this id in this project."]}
    assert refused(interview=unknown) == {"interview": ["No interview with this id in this project."]}
    assert refused(code=str(archived.uuid)) == {"code": ["“Old idea” is archived; bring it back to code with it."]}
    assert refused(code=str(merged.uuid)) == {"code": ["“Faith” was merged into “Trust”; code with that instead."]}
    elsewhere = other.segments.first().pk
    assert refused(segments=[elsewhere]) == {"segments": [f"Not segments of “{interview.title}”: {elsewhere}."]}
    assert "send any_speaker: true" in refused(segments=[asked.pk])["segments"][0]
    assert not Coding.objects.exists()


def test_codings_apply_list_and_delete_own_only(client_for, owner, analyst, viewer, outsider, project, interview,
                                                participant_segments, make_code):
    code = make_code("Trust")
    body = {"interview": str(interview.uuid), "code": str(code.uuid), "segments": [participant_segments[0].pk]}
    assert client_for(outsider).post(_codings(project), body, content_type="application/json").status_code == 404
    assert client_for(viewer).post(_codings(project), body, content_type="application/json").status_code == 403
    r = client_for(analyst).post(_codings(project), body, content_type="application/json")
    assert r.status_code == 201 and r.json()["created"] == [participant_segments[0].pk]
    assert client_for(analyst).post(_codings(project), body, content_type="application/json").status_code == 200
    client_for(owner).post(_codings(project), body, content_type="application/json")
    r = client_for(viewer).get(_codings(project), {"interview": str(interview.uuid)})
    assert r.status_code == 200 and {c["coder"] for c in r.json()["results"]} == {"arjun", "olivia"}
    owners = Coding.objects.get(coder=owner)
    assert client_for(analyst).delete(f"{_codings(project)}{owners.pk}/").status_code == 404
    mine = Coding.objects.get(coder=analyst)
    assert client_for(analyst).delete(f"{_codings(project)}{mine.pk}/").status_code == 204
    assert list(Coding.objects.values_list("coder_id", flat=True)) == [owner.pk]


def test_codes_come_with_their_uses_overall_and_per_participant(client_for, viewer, owner, project, make_interview, make_code):
    from interviews.models import Speaker

    gpt = make_interview()
    claude = make_interview(title="Claude on belonging", label="Claude")
    trust, home = make_code("Trust"), make_code("Home")
    for interview, n in ((gpt, 2), (claude, 1)):
        segments = interview.segments.filter(speaker=Speaker.PARTICIPANT).order_by("position")[:n]
        Coding.objects.bulk_create([Coding(segment=s, code=trust, coder=owner, interview=interview) for s in segments])
    listed = {c["name"]: c for c in client_for(viewer).get(_codes(project)).json()["results"]}
    assert listed["Trust"]["uses"] == 3 and listed["Home"]["uses"] == 0
    assert [(p["label"], p["uses"]) for p in listed["Trust"]["uses_by_participant"]] == [("Claude", 1), ("GPT-4o", 2)]
    assert listed["Trust"]["uses_by_participant"][0]["participant"] == str(claude.participant.uuid)
    detail = client_for(viewer).get(f"{_codes(project)}{trust.uuid}/").json()
    assert detail["uses"] == 3
    assert client_for(viewer).get(f"{_codes(project)}{home.uuid}/").json()["uses_by_participant"] == [
        {"participant": str(claude.participant.uuid), "label": "Claude", "uses": 0},
        {"participant": str(gpt.participant.uuid), "label": "GPT-4o", "uses": 0}]


def test_code_list_queries_do_not_grow(client_for, owner, project, interview, participant_segments, make_code,
                                       django_assert_num_queries):
    client = client_for(owner)
    make_code("Trust")
    # session, user, membership (+project), count, page of codes (+parent, merged_into),
    # then the codebook's usage counts: participants, live interviews, counts per code and participant
    with django_assert_num_queries(8):
        assert len(client.get(_codes(project)).json()["results"]) == 1
    for i in range(5):
        code = make_code(f"Code {i}")
        Coding.objects.create(segment=participant_segments[0], code=code, coder=owner, interview=interview)
    live.publish(project.uuid, "coding")  # as coding.services does after every coding write
    with django_assert_num_queries(8):
        assert len(client.get(_codes(project)).json()["results"]) == 6
    with django_assert_num_queries(7):  # the counts are kept until the next coding write
        assert len(client.get(_codes(project)).json()["results"]) == 6


def test_code_list_filters_by_kind_archived_and_words(client_for, viewer, project, make_code):
    make_code("Trust", definition="Relying on others")
    make_code("Home", kind="latent")
    archived = make_code("Old")
    Code.objects.filter(pk=archived.pk).update(archived=True)

    def names(**params) -> list[str]:
        response = client_for(viewer).get(_codes(project), params)
        assert response.status_code == 200, response.content
        return sorted(c["name"] for c in response.json()["results"])

    assert names(kind="latent") == ["Home"]
    assert names(archived="true") == ["Old"] and names(archived="false") == ["Home", "Trust"]
    assert names(q="relying") == ["Trust"]
    bad = client_for(viewer).get(_codes(project), {"kind": "manifest", "archived": "perhaps"})
    assert bad.status_code == 400 and {"kind", "archived"} <= set(bad.json())


def test_merge_moves_codings_to_the_target_and_archives_the_source(client_for, analyst, owner, project, interview,
                                                                   participant_segments, make_code):
    source, target = make_code("Faith"), make_code("Trust")
    Coding.objects.create(segment=participant_segments[0], code=source, coder=owner, interview=interview)
    url = f"{_codes(project)}{source.uuid}/merge/"
    response = client_for(analyst).post(url, {"target": str(target.uuid), "reason": "same idea"}, content_type="application/json")
    assert response.status_code == 200 and response.json()["name"] == "Trust" and response.json()["uses"] == 1
    source.refresh_from_db()
    assert source.archived and source.merged_into == target
    assert CodeEvent.objects.filter(code=source, action="merged", reason="same idea").exists()
    onto_itself = client_for(analyst).post(f"{_codes(project)}{target.uuid}/merge/", {"target": str(target.uuid)},
                                           content_type="application/json")
    assert onto_itself.status_code == 400 and "target" in onto_itself.json()
    unknown = client_for(analyst).post(url, {"target": "00000000-0000-0000-0000-000000000000"}, content_type="application/json")
    assert unknown.status_code == 400 and "no such code" in unknown.json()["target"][0]


def test_split_creates_siblings_and_moves_the_assigned_codings(client_for, analyst, owner, project, interview,
                                                              participant_segments, make_code):
    code = make_code("Belonging")
    first, second = participant_segments[:2]
    Coding.objects.bulk_create([Coding(segment=s, code=code, coder=owner, interview=interview) for s in (first, second)])
    body = {"names": ["Place", "People"], "assignments": [{"segment": second.pk, "into": 1}], "archive_original": True,
            "reason": "two ideas"}
    response = client_for(analyst).post(f"{_codes(project)}{code.uuid}/split/", body, content_type="application/json")
    assert response.status_code == 201, response.content
    assert [(c["name"], c["uses"]) for c in response.json()] == [("Place", 0), ("People", 1)]
    assert list(Coding.objects.filter(code=code).values_list("segment_id", flat=True)) == [first.pk]
    assert Code.objects.get(pk=code.pk).archived
    one_name = client_for(analyst).post(f"{_codes(project)}{code.uuid}/split/", {"names": ["Only"]}, content_type="application/json")
    assert one_name.status_code == 400 and "names" in one_name.json()
    bad_index = client_for(analyst).post(f"{_codes(project)}{code.uuid}/split/",
                                         {"names": ["A", "B"], "assignments": [{"segment": first.pk, "into": 5}]},
                                         content_type="application/json")
    assert bad_index.status_code == 400 and "assignments" in bad_index.json()
    assert not Code.objects.filter(name__in=["A", "B"]).exists()  # a refused split leaves no new codes behind


def test_archive_and_bring_back(client_for, analyst, project, make_code):
    code = make_code("Trust")
    url = f"{_codes(project)}{code.uuid}/archive/"
    response = client_for(analyst).post(url, {"reason": "unused"}, content_type="application/json")
    assert response.status_code == 200 and response.json()["archived"] is True
    assert CodeEvent.objects.filter(code=code, action="archived", reason="unused").exists()
    response = client_for(analyst).post(url, {"archived": False}, content_type="application/json")
    assert response.status_code == 200 and response.json()["archived"] is False


@pytest.mark.parametrize("action,body", [
    ("merge", {"target": "{other}"}),
    ("split", {"names": ["A", "B"]}),
    ("archive", {}),
])
def test_codebook_actions_are_403_for_viewers_and_404_for_outsiders(action, body, client_for, viewer, outsider, project,
                                                                    make_code):
    from django.test import Client

    code, other = make_code("Trust"), make_code("Faith")
    data = {k: str(other.uuid) if v == "{other}" else v for k, v in body.items()}
    url = f"{_codes(project)}{code.uuid}/{action}/"
    assert client_for(outsider).post(url, data, content_type="application/json").status_code == 404
    assert client_for(viewer).post(url, data, content_type="application/json").status_code == 403
    assert Client().post(url, data, content_type="application/json").status_code == 401
    assert sorted(Code.objects.filter(project=project, archived=False).values_list("name", flat=True)) == ["Faith", "Trust"]


def test_interviewer_turns_are_coded_only_when_asked(client_for, analyst, project, interview, make_code):
    from interviews.models import Speaker

    code = make_code("Trust")
    question = interview.segments.filter(speaker=Speaker.INTERVIEWER).first()
    body = {"interview": str(interview.uuid), "code": str(code.uuid), "segments": [question.pk]}
    refused = client_for(analyst).post(_codings(project), body, content_type="application/json")
    assert refused.status_code == 400 and "any_speaker" in refused.json()["segments"][0]
    response = client_for(analyst).post(_codings(project), {**body, "any_speaker": True}, content_type="application/json")
    assert response.status_code == 201 and response.json()["created"] == [question.pk]
    assert Coding.objects.filter(segment=question, code=code).exists()


def test_coding_list_filters_are_validated(client_for, viewer, project, interview):
    for name in ("interview", "code"):
        response = client_for(viewer).get(_codings(project), {name: "not-a-uuid"})
        assert response.status_code == 400 and name in response.json()
    assert client_for(viewer).get(_codings(project), {"interview": str(interview.uuid), "coder": "nobody"}).json()["results"] == []


def test_applying_through_the_api_reports_the_interviews_progress(client_for, analyst, owner, project, interview,
                                                                   participant_segments, make_code):
    trust, home = make_code("Trust"), make_code("Home")
    first, second = participant_segments[0].pk, participant_segments[1].pk

    def apply(user, code, segments):
        body = {"interview": str(interview.uuid), "code": str(code.uuid), "segments": segments}
        answer = client_for(user).post(_codings(project), body, content_type="application/json").json()
        return answer["coded"], answer["codable"]

    assert apply(analyst, trust, [first]) == (1, len(participant_segments))
    assert apply(owner, home, [first]) == (1, len(participant_segments))  # a segment counts once, whoever coded it
    assert apply(owner, trust, [first, second]) == (2, len(participant_segments))
