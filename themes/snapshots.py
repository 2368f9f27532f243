"""Theme-structure snapshots and their comparison (what changed between two review rounds)."""

from __future__ import annotations

from themes.models import Theme, ThemeCode


def structure_of(project) -> dict:
    """The live theme structure as plain JSON: themes with parent, status, definition and codes (2 queries)."""
    themes = list(Theme.objects.for_project(project).select_related("parent").order_by("position", "name"))
    codes: dict[int, list[dict]] = {t.id: [] for t in themes}
    placements = (
        ThemeCode.objects.filter(theme__in=themes, code__deleted_at__isnull=True)
        .select_related("code")
        .order_by("theme_id", "position")
    )
    for tc in placements:
        codes[tc.theme_id].append({"uuid": str(tc.code.uuid), "name": tc.code.name})
    return {
        "themes": [
            {
                "uuid": str(t.uuid), "name": t.name, "status": t.status, "definition": t.definition,
                "parent": str(t.parent.uuid) if t.parent_id and t.parent and t.parent.deleted_at is None else None,
                "codes": codes[t.id],
            }
            for t in themes
        ]
    }


def compare(before: dict, after: dict) -> dict:
    """Themes added, removed, renamed, re-statused and codes moved between two snapshots."""
    old = {t["uuid"]: t for t in before.get("themes", [])}
    new = {t["uuid"]: t for t in after.get("themes", [])}
    names = {u: t["name"] for u, t in {**old, **new}.items()}
    result: dict = {
        "added": [new[u] for u in new if u not in old],
        "removed": [old[u] for u in old if u not in new],
        "renamed": [{"uuid": u, "from": old[u]["name"], "to": new[u]["name"]} for u in new if u in old and old[u]["name"] != new[u]["name"]],
        "status": [
            {"uuid": u, "name": new[u]["name"], "from": old[u]["status"], "to": new[u]["status"]}
            for u in new if u in old and old[u]["status"] != new[u]["status"]
        ],
        "redefined": [
            {"uuid": u, "name": new[u]["name"], "from": old[u]["definition"], "to": new[u]["definition"]}
            for u in new if u in old and old[u]["definition"] != new[u]["definition"]
        ],
        "codes_moved": [],
    }
    result["codes_moved"] = _code_moves(old, new, names)
    result["unchanged"] = not any(result[k] for k in ("added", "removed", "renamed", "status", "redefined", "codes_moved"))
    return result


def _code_moves(old: dict, new: dict, names: dict) -> list[dict]:
    def placement(themes: dict) -> dict[str, tuple[str, set[str]]]:
        where: dict[str, tuple[str, set[str]]] = {}
        for uuid, theme in themes.items():
            for code in theme["codes"]:
                where.setdefault(code["uuid"], (code["name"], set()))[1].add(uuid)
        return where

    was, now = placement(old), placement(new)
    moves = []
    for code_uuid in sorted(set(was) | set(now), key=lambda u: (was.get(u) or now.get(u))[0].lower()):
        name = (now.get(code_uuid) or was.get(code_uuid))[0]
        before = was.get(code_uuid, (name, set()))[1]
        after = now.get(code_uuid, (name, set()))[1]
        if before != after:
            moves.append({
                "code": name,
                "from": sorted(names[u] for u in before - after),
                "to": sorted(names[u] for u in after - before),
            })
    return moves
