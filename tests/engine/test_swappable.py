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
from support import ROOT, benchtui, popen, results_schema, write_campaign


def schema() -> dict:
    """Our results schema, generated from our own models (`benchtui schema --results`)."""
    return results_schema()


def test_fair_campaign_runs_end_to_end_without_heavy_imports(tmp_path):
    """Runs campaigns/fair.toml in a subprocess and inspects its sys.modules at exit."""
    shutil.copytree(ROOT / "campaigns", tmp_path / "campaigns")
    probe = textwrap.dedent("""
        import atexit, json, sys
        from benchtui.cli.main import main
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

    for name in ("fair.toml", "play.toml", "problem-reductions.toml", "problem-reductions-logical.toml"):
        validator.validate(tomllib.loads((ROOT / "campaigns" / name).read_text()))  # `use` tables too
    use = doc["properties"]["runners"]["additionalProperties"]["then"]["properties"]["use"]
    assert "codex" in use["examples"]

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


def test_results_are_refreshed_while_a_long_campaign_runs(tmp_path, monkeypatch):
    """Virtual time (MockClock): each session takes 1 s, the refresh comes every 2.5 s."""
    import trio
    import trio.testing

    from benchtui.engine import events as ev
    from benchtui.engine import results
    from benchtui.engine import run as engine

    write_campaign(tmp_path, sessions=20, total="10", latency=1, parallelism=2)
    prep = engine.prepare(engine.Options(tmp_path / "t.toml", tmp_path / "runs"))
    rows_written: list[int] = []
    real_write_all = results.write_all

    def spy(run_dir, snapshot):
        rows_written.append(len(snapshot.models["fake/model-a"].records))
        return real_write_all(run_dir, snapshot)

    monkeypatch.setattr(results, "write_all", spy)

    async def main():
        bus = ev.EventBus()
        async with engine.open_run(prep, bus) as run, trio.open_nursery() as nursery:
            nursery.start_soon(engine._refresh_results, run, bus, 2.5)
            await run.until_done()
            nursery.cancel_scope.cancel()

    with prep:
        trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    *during, final = rows_written
    assert 0 < during[0] < 20 and during == sorted(during)  # partial results, growing
    assert final == 20  # and exactly all of them at the end
    assert len(json.loads((prep.run_dir / "results/fake_model-a.json").read_text())["results"]) == 20
