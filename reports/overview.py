"""Project-wide counts for the home page's phase strip, in a fixed number of queries."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Count, Q

from coding.models import Code
from coding.queries import project_progress
from interviews.models import Interview
from projects.models import AuditEvent, Project
from themes.models import Theme


@dataclass
class Phase:
    number: int
    name: str
    summary: str
    done: bool
    url_name: str  # the page where this phase's work is done (takes the project's uuid)
    next_action: str
    anchor: str = ""  # where on that page, when not at its top


def _count(n: int, one: str, many: str = "") -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


@dataclass
class ProjectOverview:
    interviews: int
    codable_segments: int
    coded_segments: int
    codes: int
    themes_by_status: dict[str, int]
    recent_events: list = field(default_factory=list)

    @property
    def coded_percent(self) -> int:
        return round(100 * self.coded_segments / self.codable_segments) if self.codable_segments else 0

    @property
    def phases(self) -> list[Phase]:
        themes = sum(self.themes_by_status.values())
        reviewed = sum(n for s, n in self.themes_by_status.items() if s in {"reviewed", "defined", "final"})
        defined = sum(n for s, n in self.themes_by_status.items() if s in {"defined", "final"})
        final = self.themes_by_status.get("final", 0)
        return [
            Phase(1, "Familiarisation", _count(self.interviews, "interview"), self.interviews > 0,
                  "interviews:list", "Import or conduct interviews."),
            Phase(2, "Coding", f"{self.coded_percent}% of segments coded, {_count(self.codes, 'code')}",
                  self.coded_percent >= 100, "coding:codebook",
                  "Keep coding: open an interview and code its uncoded segments.", anchor="#interview-progress"),
            Phase(3, "Generating themes", _count(themes, "theme"), themes > 0, "themes:board",
                  "Group codes into candidate themes on the themes board."),
            Phase(4, "Reviewing themes", f"{reviewed} reviewed", themes > 0 and reviewed == themes, "themes:reviews",
                  "Review the candidate themes in a team meeting."),
            Phase(5, "Defining and naming", f"{defined} defined", themes > 0 and defined == themes, "themes:board",
                  "Write definitions and names for the reviewed themes."),
            Phase(6, "Writing up", f"{final} final", themes > 0 and final == themes, "reports:excerpts",
                  "Export excerpt tables for the paper."),
        ]

    @property
    def next_phase(self) -> Phase | None:
        """The first phase not done yet: the home page's "Next" links to where its work is done."""
        return next((phase for phase in self.phases if not phase.done), None)


def project_overview(project: Project) -> ProjectOverview:
    interviews = Interview.objects.for_project(project)
    # The coded share counts every participant sentence of the project: the coding page's cached count
    # (a minute old at most) keeps the home page from growing with the corpus.
    coded, codable = project_progress(project)
    themes = dict(
        Theme.objects.for_project(project).values_list("status").annotate(n=Count("id")).values_list("status", "n")
    )
    return ProjectOverview(
        interviews=interviews.count(),
        codable_segments=codable,
        coded_segments=coded,
        codes=Code.objects.for_project(project).filter(~Q(archived=True)).count(),
        themes_by_status=themes,
        recent_events=list(AuditEvent.objects.for_project(project)[:8]),
    )
