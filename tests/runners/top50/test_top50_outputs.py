"""What the top50 runner kind leaves in a run dir is what `benchtui export` and `benchtui report`
read: a whole run through the engine and the gateway (the runner kind against the stand-in of
the benchmark runner's contract, support/top50), then its export and its report."""

from __future__ import annotations

import json

import pytest
import trio

top50 = pytest.importorskip(
    "support.top50", reason="the top50 runner kind's test support is not in this tree"
)

from support.mini import pred_on_path, run_campaign  # noqa: E402
from support.scripted_upstream import Answer, Call, ScriptedUpstream  # noqa: E402

from benchtui.cli.main import main  # noqa: E402


def cheap(call: Call) -> Answer:
    return Answer(text="ok", input_tokens=1000, output_tokens=50)


@pytest.mark.trio
async def test_a_run_of_the_kind_is_exported_and_reported_as_the_benchmark_counts_it(tmp_path, monkeypatch):
    top50.require_namespace()
    monkeypatch.setenv("SCRIPTED_API_KEY", "sk-scripted-outputs")
    pred = pred_on_path(tmp_path, monkeypatch)
    library, bench = top50.make_library(tmp_path), top50.make_benchmark(tmp_path)
    top50.configure(
        bench, calls=1, accept=[3], certificate=top50.confirmed_certificate(pred, tmp_path / "cert")
    )
    with ScriptedUpstream(cheap) as up:
        path = top50.write_campaign(tmp_path, up.url, bench, library)
        with trio.fail_after(240):
            prep, _ = await run_campaign(path, tmp_path / "state")
    run_dir = prep.run_dir
    argv = [
        "export",
        str(run_dir),
        "--submissions",
        str(tmp_path / "out"),
        "--board",
        str(tmp_path / "board"),
    ]
    assert main(argv) == 0
    (entry,) = json.loads((tmp_path / "out" / "manifest.json").read_text())
    kept = run_dir / "sessions" / entry["session"] / f"attempt-{entry['attempt']}.submission.json"
    assert (tmp_path / "out" / entry["file"]).read_bytes() == kept.read_bytes()
    doc = json.loads(kept.read_bytes())
    assert entry["label"] == f"local:{doc['library_commit']}/{doc['pred_version']}"  # not the round's pins
    (board,) = [json.loads(p.read_text()) for p in (tmp_path / "board").glob("*.json")]
    verdicts = json.loads((kept.parent / f"attempt-{entry['attempt']}.verdicts.json").read_bytes())
    assert board["bugs_found"] == verdicts["benchmark"]["verified_bugs"] == 1 and board["rankable"] is False
    assert main(["report", str(run_dir), "--format", "json", "-o", str(tmp_path / "r.json")]) == 0
    (row,) = json.loads((tmp_path / "r.json").read_text())["top50"]
    assert row["verified_bugs"]["per_run"] == [1] and row["run_rows"][0]["bugs_at_10"] == 1
    assert row["rechecked"] == 1 and row["disagreements"] == []
