"""Acceptance 1 and 5: the fair campaign end to end on a fresh clone; one owner per run dir."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import jsonschema
from support import CONTRACTS, ROOT, benchtui, popen, write_campaign


def schema() -> dict:
    """The contract's results schema (a copy kept in tests/fixtures)."""
    return json.loads((CONTRACTS / "results.schema.json").read_text())


def test_fair_campaign_runs_end_to_end_without_heavy_imports(tmp_path):
    """Runs campaigns/fair.toml in a subprocess and inspects its sys.modules at exit."""
    shutil.copytree(ROOT / "campaigns", tmp_path / "campaigns")
    probe = textwrap.dedent("""
        import atexit, json, sys
        from benchtui.cli import main
        def report():
            heavy = sorted({m.split(".")[0] for m in sys.modules} & {"textual", "litellm", "minisweagent"})
            print("HEAVY=" + json.dumps(heavy))
        atexit.register(report)
        sys.exit(main(["campaigns/fair.toml", "--no-ui"]))
    """)
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "HEAVY=[]" in done.stdout
    results = sorted((tmp_path / "runs/fair/results").glob("*.json"))
    assert [p.name for p in results] == ["fake_model-a.json", "fake_model-b.json"]
    for path in results:
        doc = json.loads(path.read_text())
        jsonschema.validate(doc, schema())
        assert [r["result"] for r in doc["results"]] == ["bug_found"] * 3
        assert doc["total_cost_usd"] == 0.09 and doc["bugs_found"] == 1  # one distinct bug


def test_second_benchtui_on_the_same_run_dir_is_refused(tmp_path):
    # Sessions of 10 s: the first run is still running when the refused ones are done, however
    # loaded the machine (at 0.5 s it once finished first); the resume at the end runs quick ones.
    quick = '[runners.quick]\nkind = "fake"\ncost_usd = 0.03\n'
    write_campaign(tmp_path, sessions=4, latency=10, parallelism=1, extra_runners=quick)
    first = popen("t.toml", "--no-ui", cwd=tmp_path)
    deadline = time.monotonic() + 20
    while not (tmp_path / "runs/t/sessions.jsonl").exists():
        assert time.monotonic() < deadline
        time.sleep(0.02)
    for flags in (["--resume"], [], ["--fresh"]):
        second = benchtui("t.toml", "--no-ui", *flags, cwd=tmp_path)
        assert second.returncode == 3, second
        assert "in use by another benchtui" in second.stderr and "Traceback" not in second.stderr
    second = benchtui("--resume", "--no-ui", cwd=tmp_path)
    assert second.returncode == 3
    first.terminate()  # SIGTERM = Ctrl-C: stop launching, let the running session finish ...
    time.sleep(0.5)
    if first.poll() is None:
        first.terminate()  # ... and again: interrupt it (it is retried on --resume)
    assert first.wait(timeout=20) == 130
    assert benchtui("t.toml", "--no-ui", "--resume", "--runner", "quick", cwd=tmp_path).returncode == 0
    assert not list(Path(tmp_path / "runs").glob("t.*"))  # nothing was moved aside


def test_schema_command_prints_the_campaign_json_schema(tmp_path):
    done = benchtui("schema", cwd=tmp_path)
    assert done.returncode == 0
    doc = json.loads(done.stdout)
    assert doc["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(doc)
    validator = jsonschema.Draft202012Validator(doc)
    assert {"budget", "models", "runners", "environment", "ui"} <= set(doc["properties"])
    # The shipped campaigns validate against it.
    import tomllib

    for name in ("fair.toml", "play.toml", "problem-reductions.toml"):
        validator.validate(tomllib.loads((ROOT / "campaigns" / name).read_text()))

    def first_error(change) -> str:
        bad = tomllib.loads((ROOT / "campaigns/fair.toml").read_text())
        change(bad)
        error = jsonschema.exceptions.best_match(validator.iter_errors(bad))
        assert error is not None, "the schema accepted a bad campaign"
        return error.message

    # A typo in a runner table is reported by the profile its kind names.
    message = first_error(lambda c: c["runners"]["fake"].update(latency=1))
    assert "'latency' was unexpected" in message and "any of the given schemas" not in message, message
    message = first_error(lambda c: c["runners"]["fake"].update(cost_usd="lots of money"))
    assert "is not of type 'number'" in message, message  # money is a number
    message = first_error(lambda c: c["budget"].update(total_usd="lots of money"))
    assert "is not of type 'number'" in message, message
    message = first_error(lambda c: c["runners"]["fake"].pop("kind"))
    assert "'kind' is a required property" in message, message


def test_results_are_refreshed_while_a_long_campaign_runs(tmp_path):
    """The campaign is paused after 3, then after 9 sessions of model a ended: each time, with
    nothing running, the refresher must bring the results file to exactly what ran (no timing race:
    the file is awaited, not sampled)."""
    import trio

    from benchtui import engine
    from benchtui import events as ev

    write_campaign(tmp_path, sessions=20, total="10", latency=0.01, parallelism=1)
    prep = engine.prepare(engine.Options(tmp_path / "t.toml", tmp_path / "runs"))
    path = prep.run_dir / "results/fake_model-a.json"
    ended_a: list[str] = []
    seen: list[int] = []

    async def main():
        bus = ev.EventBus()
        pause_at = [3, 9]

        def on_event(event: ev.Event) -> None:
            if isinstance(event, ev.SessionEnded) and event.model == "fake/model-a":
                ended_a.append(event.session)
                if pause_at and len(ended_a) == pause_at[0]:
                    pause_at.pop(0)
                    scheduler.pause()

        bus.subscribe(on_event)
        with trio.fail_after(60):
            async with trio.open_nursery() as nursery:
                scheduler = await nursery.start(engine.run, prep, bus)
                nursery.start_soon(engine.refresh_results, prep, scheduler, bus, 0.05)
                for _ in range(2):
                    while not (scheduler.paused and not scheduler.running_sessions()):
                        await trio.sleep(0.01)
                    while not path.exists() or len(json.loads(path.read_text())["results"]) != len(ended_a):
                        await trio.sleep(0.01)
                    seen.append(len(ended_a))
                    scheduler.resume()
                scheduler.stop()
                nursery.cancel_scope.cancel()

    trio.run(main)
    assert seen[0] >= 3 and seen[0] < seen[1] < 20  # partial results, growing, while it runs
