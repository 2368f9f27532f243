from __future__ import annotations

import threading

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.utils import timezone

from coding.models import Code
from interviews.models import Interview
from projects.models import AuditEvent
from themes import services
from themes.excerpts import excerpt_counts, theme_excerpt_summary, theme_excerpts, theme_interviews
from themes.models import Comment, Exemplar, Memo, Theme, ThemeCode

pytestmark = pytest.mark.django_db


def codes_of(theme: Theme) -> list[str]:
    return list(ThemeCode.objects.filter(theme=theme).order_by("position").values_list("code__name", flat=True))


def test_theme_create_records_status_history_and_audit(project, owner):
    theme = services.theme_create(project=project, actor=owner, name="Performing humility")
    assert theme.status == Theme.Status.CANDIDATE
    assert list(theme.status_changes.values_list("to_status", flat=True)) == ["candidate"]
    assert AuditEvent.objects.filter(project=project, target_id=str(theme.uuid), action="created").exists()


def test_theme_create_rejects_an_empty_name(project, owner):
    with pytest.raises(ValidationError) as err:
        services.theme_create(project=project, actor=owner, name="  ")
    assert "name" in err.value.message_dict


def test_status_changes_are_kept_in_order(project, owner):
    theme = services.theme_create(project=project, actor=owner, name="T")
    services.theme_set_status(theme=theme, actor=owner, status="reviewed", reason="round 1")
    services.theme_set_status(theme=theme, actor=owner, status="defined")
    history = list(theme.status_changes.order_by("created_at", "id").values_list("from_status", "to_status", "reason"))
    assert history == [("", "candidate", "created"), ("candidate", "reviewed", "round 1"), ("reviewed", "defined", "")]
    with pytest.raises(ValidationError):
        services.theme_set_status(theme=theme, actor=owner, status="approved")


def test_a_code_may_sit_in_several_themes_and_moves_keep_order(project, owner, make_code):
    a = services.theme_create(project=project, actor=owner, name="A")
    b = services.theme_create(project=project, actor=owner, name="B")
    x, y, z = make_code("x"), make_code("y"), make_code("z")
    for code in (x, y, z):
        services.theme_add_code(theme=a, actor=owner, code=code)
    services.theme_add_code(theme=b, actor=owner, code=x)
    assert codes_of(a) == ["x", "y", "z"] and codes_of(b) == ["x"]
    services.theme_add_code(theme=a, actor=owner, code=z, before=x)  # re-placing reorders
    assert codes_of(a) == ["z", "x", "y"]
    services.theme_shift_code(theme=a, actor=owner, code=y, offset=-1)
    assert codes_of(a) == ["z", "y", "x"]
    services.theme_move_code(code=y, source=a, target=b, actor=owner, before=x)
    assert codes_of(a) == ["z", "x"] and codes_of(b) == ["y", "x"]
    services.theme_remove_code(theme=b, actor=owner, code=x)
    assert codes_of(b) == ["y"]


def test_a_code_not_in_the_source_theme_or_merged_away_is_not_placed(project, owner, make_code):
    from coding.services import code_merge

    a = services.theme_create(project=project, actor=owner, name="A")
    b = services.theme_create(project=project, actor=owner, name="B")
    x, merged, target = make_code("x"), make_code("Advice list"), make_code("Deference")
    with pytest.raises(ValidationError, match="“x” is not in theme “A” \\(any more\\); nothing to move"):
        services.theme_move_code(code=x, source=a, target=b, actor=owner)
    code_merge(source=merged, target=target, actor=owner)
    merged.refresh_from_db()
    with pytest.raises(ValidationError, match="was merged into “Deference”, which holds its codings"):
        services.theme_add_code(theme=a, actor=owner, code=merged)
    assert codes_of(a) == [] and codes_of(b) == []


@pytest.mark.django_db(transaction=True)
def test_opposite_moves_between_two_themes_at_once_both_land(project, owner, make_code):
    """Both moves lock the two themes in the same order, so they queue up rather than deadlock."""
    a = services.theme_create(project=project, actor=owner, name="A")
    b = services.theme_create(project=project, actor=owner, name="B")
    placed = {a.pk: [], b.pk: []}
    for k in range(6):
        theme = a if k % 2 else b
        placed[theme.pk].append(make_code(f"code {k}"))
        services.theme_add_code(theme=theme, actor=owner, code=placed[theme.pk][-1])
    events = AuditEvent.objects.count()
    for round_ in range(3):
        barrier, errors = threading.Barrier(2), []

        def move(code, source, target, barrier=barrier, errors=errors):
            try:
                barrier.wait()
                services.theme_move_code(code=code, source=source, target=target, actor=owner)
            except Exception as exc:  # noqa: BLE001 - reported below
                errors.append(exc)
            finally:
                connection.close()

        threads = [threading.Thread(target=move, args=(placed[a.pk][round_], a, b)),
                   threading.Thread(target=move, args=(placed[b.pk][round_], b, a))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert errors == []
    for theme in (a, b):
        assert sorted(ThemeCode.objects.filter(theme=theme).values_list("position", flat=True)) == [0, 1, 2]
    assert AuditEvent.objects.count() == events + 3 * 2 * 2  # each move: placed in one theme, taken out of the other


def test_codes_from_another_project_are_refused(project, owner, make_code):
    from projects.models import Project

    other = Project.objects.create(name="Other")
    theme = services.theme_create(project=project, actor=owner, name="A")
    with pytest.raises(ValidationError):
        services.theme_add_code(theme=theme, actor=owner, code=make_code("foreign", proj=other))


def test_sub_themes_cannot_form_cycles(project, owner):
    a = services.theme_create(project=project, actor=owner, name="A")
    b = services.theme_create(project=project, actor=owner, name="B", parent=a)
    with pytest.raises(ValidationError):
        services.theme_set_parent(theme=a, actor=owner, parent=b)
    services.theme_set_parent(theme=b, actor=owner, parent=None)
    b.refresh_from_db()
    assert b.parent is None


def test_theme_reorder_moves_among_siblings(project, owner):
    a, b, c = (services.theme_create(project=project, actor=owner, name=n) for n in "ABC")
    services.theme_reorder(theme=c, actor=owner, offset=-1)
    assert list(Theme.objects.for_project(project).values_list("name", flat=True)) == ["A", "C", "B"]


def test_place_before_reorders_and_adopts_the_parent(project, owner):
    a, b = (services.theme_create(project=project, actor=owner, name=n) for n in "AB")
    a1 = services.theme_create(project=project, actor=owner, name="A1", parent=a)
    services.theme_place_before(theme=b, actor=owner, before=a)
    assert list(Theme.objects.for_project(project).filter(parent=None).values_list("name", flat=True)) == ["B", "A"]
    services.theme_place_before(theme=b, actor=owner, before=a1)
    b.refresh_from_db()
    assert b.parent == a
    assert list(Theme.objects.for_project(project).filter(parent=a).values_list("name", flat=True)) == ["B", "A1"]
    with pytest.raises(ValidationError):
        services.theme_place_before(theme=a, actor=owner, before=a1)  # under its own sub-theme


def test_delete_is_soft_and_hides_sub_themes(project, owner):
    a = services.theme_create(project=project, actor=owner, name="A")
    services.theme_create(project=project, actor=owner, name="A1", parent=a)
    services.theme_delete(theme=a, actor=owner)
    assert Theme.objects.for_project(project).count() == 0
    assert Theme.objects.filter(project=project, deleted_at__isnull=False).count() == 2


def test_merge_moves_codes_exemplars_memos_and_thread(project, owner, make_code, make_interview, code_segment):
    a = services.theme_create(project=project, actor=owner, name="A")
    b = services.theme_create(project=project, actor=owner, name="B")
    shared, only_a = make_code("shared"), make_code("only a")
    services.theme_add_code(theme=a, actor=owner, code=shared)
    services.theme_add_code(theme=a, actor=owner, code=only_a)
    services.theme_add_code(theme=b, actor=owner, code=shared)
    _, segments = make_interview()
    code_segment(only_a, segments[0])
    services.exemplar_pin(theme=a, actor=owner, segment=segments[0])
    services.memo_create(project=project, actor=owner, title="On A", body="x", kind="analytic", theme=a)
    services.comment_post(theme=a, actor=owner, body="Is A really distinct?")
    sub = services.theme_create(project=project, actor=owner, name="A sub", parent=a)

    services.theme_merge(source=a, target=b, actor=owner)

    a.refresh_from_db()
    assert a.deleted_at is not None and a.merged_into == b
    assert codes_of(b) == ["shared", "only a"]
    assert Exemplar.objects.get().theme == b
    assert Memo.objects.get().theme == b
    assert Comment.objects.get().theme == b
    sub.refresh_from_db()
    assert sub.parent == b
    with pytest.raises(ValidationError):
        services.theme_merge(source=b, target=b, actor=owner)


def test_split_carries_the_chosen_codes(project, owner, make_code):
    theme = services.theme_create(project=project, actor=owner, name="Broad")
    x, y = make_code("x"), make_code("y")
    services.theme_add_code(theme=theme, actor=owner, code=x)
    services.theme_add_code(theme=theme, actor=owner, code=y)
    new = services.theme_split(theme=theme, actor=owner, name="Narrow", codes=[y])
    assert codes_of(theme) == ["x"] and codes_of(new) == ["y"]
    with pytest.raises(ValidationError):
        services.theme_split(theme=theme, actor=owner, name="Nothing", codes=[y])


def test_exemplar_trimming_stores_verifiable_spans(project, owner, make_interview):
    theme = services.theme_create(project=project, actor=owner, name="Honesty")
    _, segments = make_interview()
    turn = segments[0].turn
    exemplar = services.exemplar_pin(theme=theme, actor=owner, segment=segments[0], end_segment=segments[2],
                                     quote="I try to be honest [...] I would rather say I am unsure than invent a fact.")
    assert exemplar.quote == "I try to be honest [...] I would rather say I am unsure than invent a fact."
    assert [turn.text[a:b] for a, b in exemplar.spans] == ["I try to be honest", "I would rather say I am unsure than invent a fact."]
    assert exemplar.verify()
    services.exemplar_trim(exemplar=exemplar, actor=owner, quote="be honest [...] invent a fact")
    exemplar.refresh_from_db()
    assert exemplar.quote == "be honest [...] invent a fact" and exemplar.verify()


def test_exemplar_rewording_is_refused_with_the_piece_named(project, owner, make_interview):
    theme = services.theme_create(project=project, actor=owner, name="Honesty")
    _, segments = make_interview()
    with pytest.raises(ValidationError) as err:
        services.exemplar_pin(theme=theme, actor=owner, segment=segments[0], quote="I try to be honest [...] I always lie")
    assert "Piece 2" in err.value.messages[0] and "I always lie" in err.value.messages[0]
    assert not Exemplar.objects.exists()


def test_excerpts_join_contiguous_segments_and_group_by_model(project, owner, make_code, make_interview, code_segment):
    theme = services.theme_create(project=project, actor=owner, name="Honesty")
    honest, limits = make_code("honesty"), make_code("limits")
    services.theme_add_code(theme=theme, actor=owner, code=honest)
    services.theme_add_code(theme=theme, actor=owner, code=limits)
    _, gpt = make_interview("GPT-4o")
    _, claude = make_interview("Claude")
    code_segment(honest, gpt[0])
    code_segment(limits, gpt[1])  # contiguous with gpt[0]: one excerpt
    code_segment(honest, gpt[3])  # a second excerpt
    code_segment(honest, claude[2])
    groups = {g.label: g for g in theme_excerpts(theme)}
    assert sorted(groups) == ["Claude", "GPT-4o"]
    assert len(groups["GPT-4o"].excerpts) == 2
    first = groups["GPT-4o"].excerpts[0]
    assert first.text.startswith("I try to be honest") and first.text.endswith("not from lived experience.")
    assert first.code_ids == {honest.id, limits.id}
    theme_counts, code_counts = excerpt_counts(project)
    assert theme_counts[theme.id] == 3
    assert code_counts[honest.id] == 3
    # The theme page's counts per model (one SQL query) agree with the excerpts; a page of interviews shows theirs.
    summary = theme_excerpt_summary(theme)
    by_label = {p.label: summary[p.pk] for p in project.participants.all() if p.pk in summary}
    assert by_label == {"GPT-4o": (2, 1), "Claude": (1, 1)}
    claude_only = theme_interviews(theme).filter(participant__label="Claude")
    assert [g.label for g in theme_excerpts(theme, interview_ids=list(claude_only.values_list("pk", flat=True)))] == ["Claude"]
    assert [i.participant.label for i in theme_interviews(theme)] == ["Claude", "GPT-4o"]


def test_an_excerpt_of_overlapping_codes_is_cut_from_its_first_segment_to_its_last(
        project, owner, analyst, make_code, make_interview, code_segment):
    """Its bounds come from whichever code starts or ends it, however the codes overlap, and by whoever coded."""
    theme = services.theme_create(project=project, actor=owner, name="Honesty")
    outer, inner, late = make_code("outer"), make_code("inner"), make_code("late")
    for code in (outer, inner, late):
        services.theme_add_code(theme=theme, actor=owner, code=code)
    interview, segments = make_interview("GPT-4o", text="One. Two, indeed.  Three!\tFour? Five.")
    code_segment(outer, *segments[0:3])
    code_segment(inner, segments[1], coder=analyst)  # inside outer's excerpt: no bound of its own
    code_segment(late, *segments[2:4], coder=analyst)  # overlaps outer's end and goes past it
    [group] = theme_excerpts(theme)
    [excerpt] = group.excerpts
    turn = interview.turns.get(position=1)
    assert excerpt.text == turn.text[segments[0].start:segments[3].end] == "One. Two, indeed.  Three!\tFour?"
    assert (excerpt.start, excerpt.end) == (segments[0].start, segments[3].end)
    assert (excerpt.first_segment_id, excerpt.last_segment_id) == (segments[0].pk, segments[3].pk)
    assert excerpt.code_ids == {outer.pk, inner.pk, late.pk}



def test_excerpt_counts_skip_deleted_work_count_a_segment_once_and_can_be_asked_for_some_themes(
        project, owner, analyst, make_code, make_interview, code_segment):
    first = services.theme_create(project=project, actor=owner, name="First")
    second = services.theme_create(project=project, actor=owner, name="Second")
    honest, limits, gone = make_code("honesty"), make_code("limits"), make_code("gone")
    for code in (honest, limits, gone):
        services.theme_add_code(theme=first, actor=owner, code=code)
    services.theme_add_code(theme=second, actor=owner, code=limits)
    _, kept = make_interview("GPT-4o")
    deleted_interview, dropped = make_interview("Claude")
    code_segment(honest, kept[0], kept[2])
    code_segment(honest, kept[0], coder=analyst)  # a second coder on the same sentence: still one coded segment
    code_segment(limits, kept[1], kept[3])        # with honesty: kept[0..3] are one run under First
    code_segment(gone, kept[3])
    code_segment(honest, dropped[0])
    Code.objects.filter(pk=gone.pk).update(deleted_at=timezone.now())
    Interview.objects.filter(pk=deleted_interview.pk).update(deleted_at=timezone.now())

    theme_counts, code_counts = excerpt_counts(project)
    assert theme_counts == {first.id: 1, second.id: 2}
    assert code_counts == {honest.id: 2, limits.id: 2}
    assert excerpt_counts(project, theme_ids=[second.id], code_ids=[limits.id]) == ({second.id: 2}, {limits.id: 2})

def test_memo_revisions_and_conflict(project, owner, analyst):
    memo = services.memo_create(project=project, actor=owner, title="First look", body="one", kind="familiarisation")
    services.memo_update(memo=memo, actor=analyst, base_version=1, title="First look", body="one\ntwo", kind="familiarisation")
    with pytest.raises(services.MemoConflict) as conflict:
        services.memo_update(memo=memo, actor=owner, base_version=1, title="First look", body="mine", kind="reflexive")
    assert conflict.value.latest.number == 2 and conflict.value.latest.body == "one\ntwo"
    memo.refresh_from_db()
    assert memo.body == "one\ntwo" and memo.version == 2
    assert list(memo.revisions.values_list("number", flat=True)) == [2, 1]


def test_theme_edit_based_on_an_older_version_is_refused_and_overwrites_nothing(project, owner, analyst):
    theme = services.theme_create(project=project, actor=owner, name="Masks", definition="What the model hides.")
    services.theme_update(theme=Theme.objects.get(pk=theme.pk), actor=analyst, base_version=1, definition="What it hides, and why.")
    with pytest.raises(services.ThemeConflict) as conflict:
        services.theme_update(theme=theme, actor=owner, base_version=1, name="Masks and faces", definition="Mine.")
    assert conflict.value.current.version == 2 and conflict.value.current.definition == "What it hides, and why."
    theme.refresh_from_db()
    assert (theme.name, theme.definition, theme.version) == ("Masks", "What it hides, and why.", 2)
    # Based on the version now saved, the same edit goes through.
    services.theme_update(theme=theme, actor=owner, base_version=2, name="Masks and faces", definition="Both.")
    theme.refresh_from_db()
    assert (theme.name, theme.definition, theme.version) == ("Masks and faces", "Both.", 3)


def test_theme_update_compares_with_the_saved_text_not_a_stale_copy(project, owner, analyst):
    theme = services.theme_create(project=project, actor=owner, name="Masks", definition="Old.")
    stale = Theme.objects.get(pk=theme.pk)
    services.theme_update(theme=theme, actor=analyst, base_version=1, definition="New.")
    # A meeting decision (no base version) setting the old text back is a real change, not a no-op.
    services.theme_update(theme=stale, actor=owner, base_version=None, definition="Old.")
    theme.refresh_from_db()
    assert (theme.definition, theme.version) == ("Old.", 3)


def test_memo_has_one_target_in_the_same_project(project, owner, make_code, make_interview):
    interview, _ = make_interview()
    with pytest.raises(ValidationError):
        services.memo_create(project=project, actor=owner, title="t", body="", kind="analytic", interview=interview, code=make_code("c"))
    with pytest.raises(ValidationError):
        services.memo_create(project=project, actor=owner, title="", body="", kind="analytic")


def test_comment_mentions_only_members(project, owner, analyst, outsider):
    theme = services.theme_create(project=project, actor=owner, name="T")
    comment = services.comment_post(theme=theme, actor=owner, body="@arjun and @oscar, what do you think?")
    assert list(comment.mentions.values_list("username", flat=True)) == ["arjun"]
    reply = services.comment_post(theme=theme, actor=analyst, body="agree", parent=comment)
    nested = services.comment_post(theme=theme, actor=owner, body="nested", parent=reply)
    assert nested.parent == comment  # replies stay one level deep
    services.comment_resolve(comment=reply, actor=owner)
    comment.refresh_from_db()
    assert comment.resolved_at is not None and comment.resolved_by == owner
    services.comment_resolve(comment=comment, actor=owner, resolved=False)
    comment.refresh_from_db()
    assert comment.resolved_at is None


def test_review_decisions_apply_atomically_and_snapshots_compare(project, owner, make_code):
    from themes.snapshots import compare

    a = services.theme_create(project=project, actor=owner, name="A")
    b = services.theme_create(project=project, actor=owner, name="B")
    x, y = make_code("x"), make_code("y")
    services.theme_add_code(theme=a, actor=owner, code=x)
    services.theme_add_code(theme=b, actor=owner, code=y)
    review = services.review_create(project=project, actor=owner, title="Round 1", date="2026-11-22", attendees=[owner], themes=[a, b])
    merge = services.decision_record(review=review, theme=a, actor=owner, kind="merge", payload={"into": str(b.uuid)})
    rename = services.decision_record(review=review, theme=b, actor=owner, kind="rename", payload={"name": "B prime"})
    status = services.decision_record(review=review, theme=b, actor=owner, kind="status", payload={"status": "reviewed"})
    for decision in (merge, rename, status):
        services.decision_apply(decision=decision, actor=owner)
    with pytest.raises(ValidationError):
        services.decision_apply(decision=merge, actor=owner)
    after = services.review_close(review=review, actor=owner)
    before = review.snapshots.get(label="Round 1: before")
    diff = compare(before.data, after.data)
    assert [t["name"] for t in diff["removed"]] == ["A"]
    assert diff["renamed"] == [{"uuid": str(b.uuid), "from": "B", "to": "B prime"}]
    assert diff["codes_moved"] == [{"code": "x", "from": ["A"], "to": ["B prime"]}]
    assert diff["status"][0]["to"] == "reviewed"
    b.refresh_from_db()
    assert b.status_changes.filter(review=review).exists()


def test_decisions_are_validated_when_recorded(project, owner):
    a = services.theme_create(project=project, actor=owner, name="A")
    review = services.review_create(project=project, actor=owner, title="R", date="2026-11-22", themes=[a])
    with pytest.raises(ValidationError):
        services.decision_record(review=review, theme=a, actor=owner, kind="merge", payload={"into": str(a.uuid)})
    with pytest.raises(ValidationError):
        services.decision_record(review=review, theme=a, actor=owner, kind="move_codes", payload={"to": "nope", "codes": []})


def test_a_failing_decision_leaves_nothing_half_done(project, owner, make_code):
    a = services.theme_create(project=project, actor=owner, name="A")
    b = services.theme_create(project=project, actor=owner, name="B")
    x = make_code("x")
    services.theme_add_code(theme=a, actor=owner, code=x)
    review = services.review_create(project=project, actor=owner, title="R", date="2026-11-22", themes=[a])
    decision = services.decision_record(review=review, theme=a, actor=owner, kind="move_codes", payload={"to": str(b.uuid), "codes": [str(x.uuid)]})
    services.theme_delete(theme=b, actor=owner)  # target gone before the click
    with pytest.raises(ValidationError):
        services.decision_apply(decision=decision, actor=owner)
    decision.refresh_from_db()
    assert decision.applied_at is None and codes_of(a) == ["x"]


# ---------------------------------------------------------------- decisions on themes edited since the meeting

@pytest.fixture
def meeting(project, owner, make_code):
    """Theme A (codes x, y) and B on a meeting's agenda."""
    a = services.theme_create(project=project, actor=owner, name="A", definition="What the meeting read.")
    b = services.theme_create(project=project, actor=owner, name="B")
    x, y = make_code("x"), make_code("y")
    services.theme_add_code(theme=a, actor=owner, code=x)
    services.theme_add_code(theme=a, actor=owner, code=y)
    review = services.review_create(project=project, actor=owner, title="R", date="2026-11-22", themes=[a, b])
    return {"a": a, "b": b, "x": x, "y": y, "review": review}


def _decide(meeting, owner, kind: str, **payload):
    return services.decision_record(review=meeting["review"], theme=meeting["a"], actor=owner, kind=kind, payload=payload)


def test_a_decision_records_the_version_of_its_theme(meeting, owner, analyst):
    services.theme_update(theme=meeting["a"], actor=owner, base_version=1, definition="Edited before the decision.")
    assert _decide(meeting, owner, "rename", name="A2").theme_version == 2


def test_a_decision_keeps_the_version_its_page_showed_and_applying_then_asks(meeting, owner, analyst):
    services.theme_update(theme=meeting["a"], actor=analyst, base_version=1, definition="Edited while the page was open.")
    a = Theme.objects.get(pk=meeting["a"].pk)
    decision = services.decision_record(review=meeting["review"], theme=a, actor=owner, kind="redefine",
                                        payload={"definition": "The meeting's definition."}, seen_version="1")
    assert decision.theme_version == 1
    assert services.decision_stale_notice(decision, a) == ("The theme changed since you opened this page (now version 2); "
                                                           "applying this decision will show what changed and ask first.")
    with pytest.raises(services.DecisionConflict):
        services.decision_apply(decision=decision, actor=owner)
    assert Theme.objects.get(pk=a.pk).definition == "Edited while the page was open."


def test_a_decision_on_the_version_its_page_showed_has_no_notice(meeting, owner):
    decision = services.decision_record(review=meeting["review"], theme=meeting["a"], actor=owner, kind="rename",
                                        payload={"name": "A2"}, seen_version=1)
    assert decision.theme_version == 1 and services.decision_stale_notice(decision, meeting["a"]) == ""


@pytest.mark.parametrize("seen", ["2", 0, -1, "one", "1.5", True])
def test_a_version_the_theme_never_had_is_refused_and_records_nothing(seen, meeting, owner):
    with pytest.raises(ValidationError) as raised:
        services.decision_record(review=meeting["review"], theme=meeting["a"], actor=owner, kind="rename",
                                 payload={"name": "A2"}, seen_version=seen)
    assert "from 1 to 1 (the theme's current version)" in raised.value.message_dict["theme_version"][0]
    assert not meeting["review"].decisions.exists()


@pytest.mark.parametrize("kind,payload", [("redefine", {"definition": "The meeting's definition."}), ("rename", {"name": "A2"}),
                                          ("merge", {"into": "B"}), ("split", {"name": "A-split", "codes": ["x"]})])
def test_a_text_decision_on_a_theme_edited_since_is_refused_and_changes_nothing(kind, payload, meeting, owner, analyst):
    payload = {k: str(meeting["b"].uuid) if v == "B" else [str(meeting["x"].uuid)] if v == ["x"] else v for k, v in payload.items()}
    decision = _decide(meeting, owner, kind, **payload)
    services.theme_update(theme=meeting["a"], actor=analyst, base_version=1, definition="Analyst's newer text.")
    with pytest.raises(services.DecisionConflict) as raised:
        services.decision_apply(decision=decision, actor=owner)
    assert raised.value.current.definition == "Analyst's newer text." and raised.value.current.version == 2
    a = Theme.objects.get(pk=meeting["a"].pk)
    assert (a.name, a.definition, a.deleted_at, codes_of(a)) == ("A", "Analyst's newer text.", None, ["x", "y"])
    assert Theme.objects.filter(project=a.project).count() == 2
    decision.refresh_from_db()
    assert decision.applied_at is None


def test_apply_anyway_with_the_current_version_overwrites_and_a_stale_confirmation_asks_again(meeting, owner, analyst):
    decision = _decide(meeting, owner, "redefine", definition="The meeting's definition.")
    services.theme_update(theme=meeting["a"], actor=analyst, base_version=1, definition="v2")
    services.theme_update(theme=meeting["a"], actor=analyst, base_version=2, definition="v3")
    with pytest.raises(services.DecisionConflict):
        services.decision_apply(decision=decision, actor=owner, confirmed_version=2)  # saw v2, but v3 came since
    outcome = services.decision_apply(decision=decision, actor=owner, confirmed_version=3)
    a = Theme.objects.get(pk=meeting["a"].pk)
    assert a.definition == "The meeting's definition." and a.version == 4
    assert outcome.decision.applied_by == owner and outcome.message == "Decision applied."


def test_a_meetings_own_decisions_on_one_theme_apply_in_turn_but_a_colleagues_edit_still_conflicts(meeting, owner, analyst):
    rename = _decide(meeting, owner, "rename", name="A renamed")
    redefine = _decide(meeting, owner, "redefine", definition="The meeting's definition.")
    merge = _decide(meeting, owner, "merge", into=str(meeting["b"].uuid))
    services.decision_apply(decision=rename, actor=owner)
    services.decision_apply(decision=redefine, actor=owner)  # the rename was the meeting's own change: no conflict
    services.theme_update(theme=Theme.objects.get(pk=meeting["a"].pk), actor=analyst, base_version=3, definition="Analyst's")
    with pytest.raises(services.DecisionConflict):
        services.decision_apply(decision=merge, actor=owner)
    a = Theme.objects.get(pk=meeting["a"].pk)
    assert (a.name, a.definition, a.deleted_at) == ("A renamed", "Analyst's", None)


def test_an_unedited_theme_applies_without_asking(meeting, owner):
    decision = _decide(meeting, owner, "rename", name="A2")
    services.decision_apply(decision=decision, actor=owner)
    assert Theme.objects.get(pk=meeting["a"].pk).name == "A2"


def test_keeping_the_current_text_marks_the_decision_not_applied_with_a_note(meeting, owner, analyst):
    decision = _decide(meeting, owner, "redefine", definition="The meeting's definition.")
    services.theme_update(theme=meeting["a"], actor=analyst, base_version=1, definition="v2")
    services.decision_decline(decision=decision, actor=owner, reason="")
    decision.refresh_from_db()
    assert decision.declined_by == owner and decision.applied_at is None
    assert decision.declined_reason == "Kept the theme's current text (version 2) instead."
    assert Theme.objects.get(pk=meeting["a"].pk).definition == "v2"
    with pytest.raises(ValidationError, match="was not applied: Kept"):
        services.decision_apply(decision=decision, actor=owner, confirmed_version=2)
    assert AuditEvent.objects.filter(summary__contains="not applied").exists()


def test_a_decision_the_theme_already_satisfies_is_a_no_op_not_an_error(meeting, owner, analyst):
    rename = _decide(meeting, owner, "rename", name="A2")
    status = _decide(meeting, owner, "status", status="candidate")
    services.theme_update(theme=meeting["a"], actor=analyst, base_version=1, name="A2")  # someone did it already
    assert "already named “A2”; nothing to change" in services.decision_apply(decision=rename, actor=owner).message
    assert "already candidate; nothing to change" in services.decision_apply(decision=status, actor=owner).message
    assert Theme.objects.get(pk=meeting["a"].pk).version == 2
    assert meeting["a"].status_changes.count() == 1  # only "created"


def test_status_and_code_moves_do_not_ask_after_an_edit_and_codes_moved_since_stay_put(meeting, owner, analyst):
    a, b, x, y = meeting["a"], meeting["b"], meeting["x"], meeting["y"]
    status = _decide(meeting, owner, "status", status="reviewed")
    move = _decide(meeting, owner, "move_codes", to=str(b.uuid), codes=[str(x.uuid), str(y.uuid)])
    services.theme_update(theme=a, actor=analyst, base_version=1, definition="v2")
    services.theme_move_code(code=y, source=a, target=b, actor=analyst)  # y moved by hand after the meeting
    services.decision_apply(decision=status, actor=owner)
    message = services.decision_apply(decision=move, actor=owner).message
    assert Theme.objects.get(pk=a.pk).status == "reviewed"
    assert codes_of(a) == [] and codes_of(b) == ["y", "x"]
    assert "y had already left “A”" in message
    again = _decide(meeting, owner, "move_codes", to=str(b.uuid), codes=[str(x.uuid)])
    assert "nothing to move" in services.decision_apply(decision=again, actor=owner).message
    assert codes_of(b) == ["y", "x"]
