"""The bench harness: every registered phase is a loadable module, and a run rewrites only its own block."""

from __future__ import annotations

import importlib

import pytest

from bench.common import Context, Section
from bench.phases import PHASES
from bench.run import END, START, _phase_chunk, _write


def test_every_registered_phase_has_a_title_and_a_run_function() -> None:
    assert len(PHASES) == len(set(PHASES))
    assert PHASES[0] == "peers", "peers run first so later phases can compare within the same run"
    for name in PHASES:
        module = importlib.import_module(f"bench.phases.{name}")
        assert isinstance(module.TITLE, str) and module.TITLE
        assert callable(module.run)


def test_section_renders_a_markdown_table() -> None:
    text = Section("Import", ["metric", "value"], [["segments/s", 12345.6], ["missing", None], ["ratio", 0.4567]], "note").markdown()
    assert text.splitlines()[:5] == ["### Import", "", "| metric | value |", "|---|---|", "| segments/s | 12,346 |"]
    assert "| missing | – |" in text and "| ratio | 0.457 |" in text and text.rstrip().endswith("note")


def test_a_run_replaces_only_its_phases_inside_the_marked_block(tmp_path) -> None:
    results = tmp_path / "RESULTS.md"
    results.write_text("# Bench\n\n## Hand-written\nkept\n")
    ctx = Context()
    _write({"segmentation": _phase_chunk("segmentation", Section("Seg v1", ["a"], [[1]])),
            "reading": _phase_chunk("reading", Section("Reading v1", ["a"], [[2]]))}, ctx, results)
    results.write_text(results.read_text() + "\n## After\nalso kept\n")
    _write({"segmentation": _phase_chunk("segmentation", Section("Seg v2", ["a"], [[3]]))}, ctx, results)
    text = results.read_text()
    assert "Seg v2" in text and "Seg v1" not in text
    assert "Reading v1" in text, "a phase not run this time keeps its last measurement"
    assert text.index("Seg v2") < text.index("Reading v1"), "sections follow the PHASES order"
    assert "## Hand-written\nkept" in text and "## After\nalso kept" in text
    assert text.count(START) == 1 and text.count(END) == 1


def test_the_ratio_table_divides_by_the_faster_peer_of_the_same_run() -> None:
    from bench.phases import ratios

    assert PHASES[-1] == "ratios", "the ratio table runs last, once every phase left its figures"
    ctx = Context(peers=True)
    ctx.figures.update({"apply_p50_ms": 3.0, "apply_in_turn_p50_ms": 2.4, "apply8_rate": 600.0, "floor_p50_ms": 1.0,
                        "browser_open_heavy_ms": 400.0})
    ctx.peer_results = {
        "taguette": {"b_highlight_seq": {"p50_ms": 13.0}, "c_highlight_concurrent": {"throughput_per_s": 90.0},
                     "browser_open": {"heavy_p50_ms": 7000.0}},
        "doccano": {"b_highlight_seq": {"p50_ms": 9.0}, "c_highlight_concurrent": {"throughput_per_s": 160.0},
                    "browser_open": {"heavy_p50_ms": 1000.0}},
    }
    rows = {row[0]: row for row in ratios.run(ctx).rows}
    apply = rows["apply a code, 1 client, p50 ms"]
    assert apply[2:] == ["9.0 (doccano)", "0.33×", "≤ 0.33×", "met"]
    assert rows["8 clients: throughput /s"][2:] == ["160 (doccano)", "3.75×", "≥ 3×", "met"]
    assert rows["open the heaviest interview in the browser, navigation → ready, ms"][3:] == ["0.40×", "≤ 0.33×", "**missed**"]
    # Over the floor: the apply measured in turn with it, not the sequence the peers are compared with.
    assert rows["apply p50 over the floor app's p50, measured in turn (bench/floor_app.py), ms"][3:] == [
        "2.40×", "≤ 2.5×", "met"]
    assert rows["import the peer corpus, s (ours segments it, theirs does not)"][1] == "not measured in this run"
    assert rows["open the 10× interview in the browser, navigation → ready, ms"][1] == "not measured in this run"


def test_the_bench_serves_with_the_options_production_starts_gunicorn_with() -> None:
    import shlex

    from bench.common import REPO, production_gunicorn_options

    options = production_gunicorn_options()
    assert "--threads" in options and "gunicorn.conf.py" in options and "--bind" not in options
    compose = (REPO / "docker-compose.yml").read_text()
    web = shlex.split(next(line for line in compose.splitlines() if "command: gunicorn" in line).split("command:", 1)[1])
    at = web.index("--bind")
    assert [a for a in web[1:at] + web[at + 2:] if a != "config.wsgi:application"] == options


def test_the_scale_curve_compares_a_list_with_the_smallest_size_showing_as_many_rows() -> None:
    from bench.phases.scale import like_for_like

    scales = [1, 10, 50]
    # 20 rows at 1×, a page of 50 after: 50× against 10×.
    assert like_for_like([20.0, 40.0, 44.0], [20, 50, 50], scales) == (1.1, 10)
    # As many rows at every size, or not a list: the plain 50×/1× ratio stands.
    assert like_for_like([10.0, 11.0, 12.0], [50, 50, 50], scales) is None
    assert like_for_like([10.0, 11.0, 12.0], [None, None, None], scales) is None
    # Fewer rows at every smaller size: nothing to compare like for like, so no excuse either.
    assert like_for_like([6.0, 6.5, 10.0], [6, 6, 30], scales) is None


def test_the_scale_curve_times_the_sizes_in_turn_and_keeps_each_ones_best() -> None:
    """A slow spell of a shared machine must fall on every size alike, not on the size measured during it."""
    from bench.phases.scale import interleaved_best

    class Client:
        def __init__(self) -> None:
            self.calls: list[str] = []

        def get(self, url: str, data: dict) -> object:
            self.calls.append(url)
            return object()

    client = Client()
    best = interleaved_best(client, [("get", "/1x/", None), ("get", "/10x/", None), ("get", "/50x/", None)], repeats=3)
    assert client.calls == ["/1x/", "/10x/", "/50x/"] * 3
    assert len(best) == 3 and all(0 <= ms < float("inf") for ms in best)


def test_the_apply_and_the_floors_take_turns_round_by_round() -> None:
    from bench.phases.coding import in_turn_latencies

    calls = []
    lat = in_turn_latencies(lambda name, j: calls.append((name, j)) or 0.001, ["apply", "floor"], rounds=2, size=3)
    assert calls == [("apply", 0), ("apply", 1), ("apply", 2), ("floor", 0), ("floor", 1), ("floor", 2),
                     ("apply", 3), ("apply", 4), ("apply", 5), ("floor", 3), ("floor", 4), ("floor", 5)]
    assert lat == {"apply": [0.001] * 6, "floor": [0.001] * 6}


@pytest.mark.django_db(transaction=True)
def test_the_durable_floor_commits_the_pair_before_it_answers(monkeypatch) -> None:
    """Its answer comes after the INSERT is committed: another connection (Django's) sees the row."""
    import io
    import threading

    from django.db import connection

    from bench import floor_app

    db = connection.settings_dict
    monkeypatch.setenv("DATABASE_URL", f"postgres://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT']}/{db['NAME']}")
    with connection.cursor() as cursor:
        cursor.execute(floor_app.CREATE_TABLE)
    body = b"code=7&segments=41"
    status = []
    answer = []

    def gunicorn_thread() -> None:  # the app keeps a connection per thread: this one closes it when done
        environ = {"REQUEST_METHOD": "POST", "wsgi.input": io.BytesIO(body), "CONTENT_LENGTH": str(len(body))}
        answer.extend(floor_app.durable_write_application(environ, lambda s, headers: status.append(s)))
        floor_app._local.connection.close()

    thread = threading.Thread(target=gunicorn_thread)
    try:
        thread.start()
        thread.join()
        assert status == ["200 OK"] and answer == [floor_app.ANSWER]
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT code_id, segment_id FROM {floor_app.TABLE}")
            assert cursor.fetchall() == [(7, 41)]
    finally:
        with connection.cursor() as cursor:  # not a model's table: the database flush would keep it
            cursor.execute(f"DROP TABLE {floor_app.TABLE}")
