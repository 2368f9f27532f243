"""The target table of issue 20: each of our figures divided by the faster peer's, all from this run.

Runs last. It measures nothing itself: the coding, import_corpus, exports and browser_open phases leave
their headline figures in ``ctx.figures``, the peers phase leaves the drivers' JSON in ``ctx.peer_results``
(and browser_open adds the peers' document-open times there). A row whose figures were not measured in
this run (a phase skipped by ``--only``, or PEERS off) says so instead of quoting older numbers.
"""

from __future__ import annotations

from typing import Any

from bench.common import Context, Section

TITLE = "Ratios to the faster peer (issue 20 targets, same run)"
PEERS = ("taguette", "doccano")


def _get(data: dict, *path: str) -> float | None:
    for key in path:
        data = data.get(key) if isinstance(data, dict) else None
    return float(data) if isinstance(data, int | float) else None


def _faster(ctx: Context, paths: dict[str, tuple[str, ...]], higher_is_better: bool = False) -> tuple[float, str] | None:
    """The faster peer's figure and its name, among the peers that measured it in this run."""
    found = [(v, name) for name in PEERS
             if (v := _get(ctx.peer_results.get(name, {}), *paths[name]) if name in paths else None) is not None]
    if not found:
        return None
    return max(found) if higher_is_better else min(found)


def _row(label: str, ours: float | None, peer: tuple[float, str] | None, *, target: float,
         higher_is_better: bool = False) -> list[Any]:
    """[metric, ours, faster peer, ratio ours ÷ peer, target, met?]"""
    bound = f"≥ {target:g}×" if higher_is_better else f"≤ {target:.2g}×"
    if ours is None:
        return [label, "not measured in this run", _peer_cell(peer), "–", bound, "–"]
    if peer is None:
        return [label, _num(ours), "no peer figure in this run", "–", bound, "–"]
    ratio = ours / peer[0]
    met = ratio >= target if higher_is_better else ratio <= target
    return [label, _num(ours), _peer_cell(peer), f"{ratio:.2f}×", bound, "met" if met else "**missed**"]


def _num(v: float) -> str:
    return f"{v:,.1f}" if v < 100 else f"{v:,.0f}"


def _peer_cell(peer: tuple[float, str] | None) -> str:
    return "–" if peer is None else f"{_num(peer[0])} ({peer[1]})"


def run(ctx: Context) -> Section:
    f = ctx.figures
    seq = {"taguette": ("b_highlight_seq",), "doccano": ("b_highlight_seq",)}
    conc = {"taguette": ("c_highlight_concurrent",), "doccano": ("c_highlight_concurrent",)}

    def at(paths: dict[str, tuple[str, ...]], *key: str) -> dict[str, tuple[str, ...]]:
        return {name: (*p, *key) for name, p in paths.items()}

    third, fifth = 1 / 3, 1 / 5
    rows = [
        _row("apply a code, 1 client, p50 ms", f.get("apply_p50_ms"), _faster(ctx, at(seq, "p50_ms")), target=third),
        _row("apply a code, 1 client, p95 ms", f.get("apply_p95_ms"), _faster(ctx, at(seq, "p95_ms")), target=third),
        _row("8 clients: throughput /s", f.get("apply8_rate"),
             _faster(ctx, at(conc, "throughput_per_s"), higher_is_better=True), target=3, higher_is_better=True),
        _row("8 clients: p95 ms (lower than the faster peer's)", f.get("apply8_p95_ms"),
             _faster(ctx, at(conc, "p95_ms")), target=1),
        _row("import the peer corpus, s (ours segments it, theirs does not)", f.get("import_corpus_s"),
             _faster(ctx, {"taguette": ("a_import", "total_s"), "doccano": ("a_import", "wall_s")}), target=third),
    ]
    # Every export of all codings, each against the faster of the peers' exports of all highlights in that
    # format (Taguette) and doccano's only one (JSONL through its task queue).
    for fmt in ("csv", "xlsx", "docx"):
        rows.append(_row(f"export all codings as {fmt.upper()}, ms", f.get(f"export_{fmt}_ms"),
                         _faster(ctx, {"taguette": ("e_exports", f"highlights all {fmt}", "p50_ms"),
                                       "doccano": ("e_exports", "jsonl (zip) via celery", "p50_ms")}), target=fifth))
    for key, label in (("heavy", "heaviest interview"), ("big", "10× interview")):
        rows.append(_row(f"open the {label} in the browser, navigation → ready, ms", f.get(f"browser_open_{key}_ms"),
                         _faster(ctx, {name: ("browser_open", f"{key}_p50_ms") for name in PEERS}), target=third))
    floor = f.get("floor_p50_ms")
    # In turn: the apply and the floor measured round by round, so the machine's mood is the same for both.
    rows.append(_row("apply p50 over the floor app's p50, measured in turn (bench/floor_app.py), ms", f.get("apply_in_turn_p50_ms"),
                     (floor, "floor") if floor else None, target=2.5))
    missed = sum(1 for r in rows if r[-1] == "**missed**")
    return Section(
        title=TITLE,
        columns=["metric", "RTA Studio", "faster peer (this run)", "ours ÷ peer", "target", ""],
        rows=rows,
        notes=(f"{missed} target(s) missed. Every ratio is RTA Studio's figure divided by the faster peer's from the "
               "same run, so a time ≤ 0.33× is ≥ 3× faster; a throughput ratio is ≥ 3× when ours is three times "
               "theirs. Sources: coding phase (apply, 8 clients over `requests` like the drivers, the apply and the floor in turn), "
               "import_corpus (best of N), exports (whole request through Django's test client), browser_open "
               "(median of fresh-context loads); peers: the drivers' JSON (medians) and browser_open."),
    )
