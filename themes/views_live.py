"""Meetings and shared work in real time: the presenter drives followers' screens; who is looking at what."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_POST

from interviews.models import Interview
from projects import live
from projects.permissions import member_or_404, writer_or_403
from themes import presenting
from themes.models import AgendaItem, Review, Theme
from themes.views_reviews import _review


@login_required
@require_POST
def present_lead(request: HttpRequest, project_uuid, review_uuid, index: int) -> HttpResponse:
    """The presenter shows agenda item `index` (or, with stop=1, stops presenting); writers only."""
    membership = writer_or_403(request, project_uuid)
    review = _review(membership, review_uuid)
    if request.POST.get("stop") == "1":
        presenting.present_stop(review=review)
        return HttpResponse(status=204)
    count = AgendaItem.objects.filter(review=review, theme__isnull=False).count()
    if not 0 <= index < count:
        return HttpResponse(f"The agenda has {count} theme{'s' if count != 1 else ''}; there is no item {index + 1}.", status=400)
    presenting.present_lead(review=review, actor=request.user, index=index)
    return HttpResponse(status=204)


@login_required
@require_GET
def presence(request: HttpRequest, project_uuid) -> HttpResponse:
    """Who has a page of the project open, and on which theme, interview, meeting or the board (4 queries)."""
    membership = member_or_404(request, project_uuid)
    project = membership.project
    entries = live.present_now(project.uuid)
    wanted: dict[str, set[str]] = {"theme": set(), "interview": set(), "review": set(), "board": set()}
    for entry in entries:
        if place := live.clean_where(entry.get("where", "")):
            kind, uuid = place.split(":", 1)
            wanted[kind].add(uuid)
    labels = {f"theme:{u}": f"theme “{n}”" for u, n in Theme.objects.for_project(project).filter(uuid__in=wanted["theme"])
              .values_list("uuid", "name")} if wanted["theme"] else {}
    if wanted["interview"]:
        labels |= {f"interview:{u}": f"interview “{t}”" for u, t in Interview.objects.for_project(project)
                   .filter(uuid__in=wanted["interview"]).values_list("uuid", "title")}
    # The board is the project's own: only this project's board has a name here.
    labels |= {f"board:{project.uuid}": "the theme board"} if str(project.uuid) in wanted["board"] else {}
    if wanted["review"]:
        labels |= {f"review:{u}": f"meeting “{t}”" for u, t in Review.objects.filter(project=project, uuid__in=wanted["review"])
                   .values_list("uuid", "title")}
    # Only members of this project: a user removed while their page stayed open disappears here.
    names = dict(get_user_model().objects.filter(memberships__project=project, pk__in={e.get("user") for e in entries})
                 .values_list("pk", "username"))
    here = live.clean_where(request.GET.get("where", ""))
    people: dict[tuple[str, str], dict] = {}
    for entry in entries:
        if entry.get("user") not in names:
            continue
        place = live.clean_where(entry.get("where", ""))
        row = {"username": names[entry["user"]], "place": labels.get(place, "another page"), "here": bool(place) and place == here,
               "me": entry["user"] == request.user.pk}
        people.setdefault((row["username"], row["place"]), row)
    rows = sorted(people.values(), key=lambda r: (not r["here"], r["username"], r["place"]))
    return render(request, "themes/_presence.html", {"people": rows})
