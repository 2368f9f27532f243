"""The case × code matrix: codes applied to whole interviews (coding.CaseCoding), one row per interview.

A cell lists the coders who applied the code to the whole interview; the exports give their number
(0 = nobody). Rows follow the participants' labels, then the interviews' dates and titles; columns
follow the codebook. Queries: participants, interviews, codes, case codings: a fixed number.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from coding.models import CaseCoding, Code
from interviews.models import Interview
from projects.models import Project
from reports.frequency import Population


@dataclass
class CaseRow:
    interview: Interview
    participant: str
    cells: list[dict[str, Any]]  # per code: {"interview", "code", "coders", "mine"}


@dataclass
class CaseMatrix:
    codes: list[Code]
    rows: list[CaseRow]

    def headers(self) -> list[str]:
        return ["Interview", "Participant", *(c.name for c in self.codes)]

    def export_rows(self) -> Iterable[list[Any]]:
        for r in self.rows:
            yield [r.interview.title, r.participant, *(len(cell["coders"]) for cell in r.cells)]


def case_matrix(project: Project, code_ids: tuple[int, ...], *, codes: list[Code], population: Population,
                username: str = "") -> CaseMatrix:
    """Interviews × the chosen codes, each cell with the coders who applied the code to the whole interview."""
    chosen = [c for c in codes if c.pk in set(code_ids)]
    coders: dict[tuple[int, int], list[str]] = defaultdict(list)
    if chosen:
        for interview_id, code_id, name in (CaseCoding.objects.filter(interview__project=project, code__in=chosen)
                                            .order_by("coder__username")
                                            .values_list("interview_id", "code_id", "coder__username")):
            coders[(interview_id, code_id)].append(name)
    labels = {p.pk: p.label for p in population.participants}
    rows = [CaseRow(interview=iv, participant=labels[iv.participant_id],
                    cells=[{"interview": iv, "code": c, "coders": coders[(iv.pk, c.pk)],
                            "mine": username in coders[(iv.pk, c.pk)]} for c in chosen])
            for iv in population.interviews]
    return CaseMatrix(codes=chosen, rows=rows)
