"""The verifier against the real pred's history: `../shared/pred-transcripts/` replayed exactly.

Three real builds answer through `support.stand_in_pred`'s replay mode (a call they were never
asked is exit 97, `not recorded: …`); every expected verdict of `certificates/expected.json` must
hold, with no miss. Skipped, with a reason, where the transcripts are absent (a fresh clone).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import trio
from support.transcripts import (
    NOT_RECORDED,
    expected_cases,
    need_transcripts,
    public_certificate,
    replaying_pred,
)

from benchtui.core.workspace import fingerprint, tool_version
from benchtui.targets.problem_reductions import verify, verify_async

EXPECTED = expected_cases()


def _entry(name: str, build: str) -> dict:
    table = json.loads((need_transcripts() / "certificates" / "expected.json").read_text())
    return next(e for e in table[name] if e["pred"] == build)


@pytest.fixture
def misses(tmp_path, monkeypatch) -> Path:
    """The stand-in logs every miss here: a design that asks what was never recorded fails."""
    log = tmp_path / "misses.jsonl"
    monkeypatch.setenv("STAND_IN_PRED_MISSES", str(log))
    return log


# -- the stand-in replays (README "Replaying a call") -------------------------------------------
def test_a_recorded_call_answers_as_recorded_whatever_the_file_is_called(tmp_path):
    pred = replaying_pred(tmp_path / "bin", "v0.5.0")
    cert = public_certificate("binpacking_ilp.bug.json")
    (tmp_path / "my source.json").write_text(json.dumps(cert["source"]))  # matched by content only
    done = subprocess.run(
        [pred, "reduce", "my source.json", "--to", "ILP/bool", "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    bundle = json.loads(done.stdout)
    assert bundle["target"]["type"] == "ILP" and bundle["source"] == cert["source"]


def test_the_recorded_paths_are_put_back_as_the_caller_named_them(tmp_path):
    """The failed `pred reduce` hint echoes the file: its token becomes the caller's path."""
    pred = replaying_pred(tmp_path / "bin", "8df8ac04")
    cert = public_certificate("threepartition_flowshopscheduling.bug.json")
    (tmp_path / "tp.json").write_text(json.dumps(cert["source"]))
    done = subprocess.run(
        [pred, "reduce", "tp.json", "--to", "FlowShopScheduling", "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1 and "No witness-capable reduction path" in done.stderr
    assert "@file:" not in done.stderr


def test_an_unrecorded_call_is_a_distinctive_miss_never_a_guess(tmp_path, misses):
    pred = replaying_pred(tmp_path / "bin", "8df8ac04")
    (tmp_path / "x.json").write_text('{"type": "MaximumIndependentSet"}')
    done = subprocess.run(
        [pred, "solve", "x.json", "-o", "out.json"], cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == NOT_RECORDED and done.stdout == ""
    line = done.stderr.strip()
    assert line.startswith("not recorded: ")
    argv = json.loads(line.removeprefix("not recorded: "))
    assert argv[0] == "solve" and argv[1].startswith("@file:") and argv[2:] == ["-o", "@out"]
    assert not (tmp_path / "out.json").exists()
    assert json.loads(misses.read_text()) == argv


def test_the_two_pred_0_5_0_builds_print_one_version_and_are_two_fingerprints(tmp_path, monkeypatch):
    new = replaying_pred(tmp_path / "new", "8df8ac04")
    old = replaying_pred(tmp_path / "old", "v0.5.0")
    prints = {subprocess.run([p, "--version"], capture_output=True, text=True).stdout for p in (new, old)}
    assert prints == {"pred 0.5.0\n"}
    (tmp_path / "target").mkdir()
    (tmp_path / "target" / "README").write_text("x")
    seen = []
    for pred in (new, old):
        monkeypatch.setenv("PATH", f"{pred.parent}{os.pathsep}{os.environ['PATH']}")
        assert tool_version("pred").startswith("pred=pred 0.5.0@sha256:")
        seen.append(fingerprint(tmp_path / "target", ["pred"]))
    assert seen[0] != seen[1]


# -- every expected verdict holds (per build), with no call that was not recorded --------------
NO_EXPECTED = pytest.mark.skip(
    reason="the real pred's transcripts (expected verdicts) are not here: a fresh clone has none"
)


@pytest.mark.parametrize(("name", "build"), EXPECTED or [pytest.param("-", "-", marks=NO_EXPECTED)])
def test_every_expected_verdict_holds_on_the_replay(name, build, tmp_path, misses):
    entry = _entry(name, build)
    verdict = verify(public_certificate(name), pred=str(replaying_pred(tmp_path / "bin", build)))
    assert not misses.exists(), misses.read_text()
    assert verdict.accepted == (entry["expected"] == "bug"), (entry, verdict)
    if verdict.accepted:
        assert verdict.details["found_by"] in ("brute-force", "ilp", "extract", "reduce")
        assert f"(found by {verdict.details['found_by']})" in verdict.reason


def test_the_zero_size_bin_packing_bug_is_confirmed_by_ilp_on_the_release_without_extract(tmp_path, misses):
    """sizes [0, 1], capacity 3: brute force on the ILP target picks an optimum that extracts well
    (Min(1)); the ILP solver's optimum extracts to Min(2). v0.5.0 has no `pred extract`."""
    verdict = verify(
        public_certificate("binpacking_ilp.bug.json"), pred=str(replaying_pred(tmp_path / "b", "v0.5.0"))
    )
    assert verdict.accepted, verdict
    assert verdict.details["observed"] == "suboptimal_extraction" and verdict.details["found_by"] == "ilp"
    assert verdict.details["round_trip"] == "Min(1)" and verdict.details["ilp_round_trip"] == "Min(2)"
    assert not misses.exists()


def test_a_pred_without_extract_says_so_in_the_reason_not_clap_usage(tmp_path, misses):
    verdict = verify(
        public_certificate("partition_subsetsum.correct.json"),
        pred=str(replaying_pred(tmp_path / "b", "v0.5.0")),
    )
    assert verdict.status == "rejected"
    assert verdict.details["missing_routes"] == ["extract"] and "extract_error" not in verdict.details
    assert "this pred has no `pred extract`" in verdict.reason and "Usage" not in verdict.reason
    assert not misses.exists()


def test_the_trio_driver_gives_the_same_verdicts(tmp_path):
    pred = str(replaying_pred(tmp_path / "b", "v0.5.0"))
    for name in ("binpacking_ilp.bug.json", "knapsack_ilp.correct.json"):
        cert = public_certificate(name)
        assert trio.run(lambda c=cert: verify_async(c, pred=pred)) == verify(cert, pred=pred)


def test_a_miss_is_inconclusive_never_a_verdict(tmp_path):
    """The certificate's own target_config, changed: its `pred extract` was never recorded. Read as
    pred's refusal of the configuration, the miss would have become a rejection."""
    cert = public_certificate("knapsack_ilp.correct.json")
    cert["target_config"] = "0,0,0,0"
    verdict = verify(cert, pred=str(replaying_pred(tmp_path / "b", "8df8ac04")))
    assert verdict.status == "inconclusive", verdict
    assert verdict.details == {"cause": "pred_error", "exit": NOT_RECORDED}
    assert "not recorded" in verdict.reason


def test_a_miss_in_the_first_call_is_inconclusive(tmp_path):
    cert = public_certificate("knapsack_ilp.correct.json")
    cert["source"]["data"]["capacity"] = cert["source"]["data"].get("capacity", 0) + 1
    verdict = verify(cert, pred=str(replaying_pred(tmp_path / "b", "8df8ac04")))
    assert verdict.status == "inconclusive" and verdict.details["exit"] == NOT_RECORDED


def test_benchtui_checks_every_shipped_task_against_the_real_pred(tmp_path, misses):
    """`benchtui check`'s task rows with 8df8ac04: each canonical example is rejected (a correct
    rule), asking only what the real pred was asked."""
    import tomllib

    from support import ROOT

    from benchtui.core.target import TargetTools
    from benchtui.targets.problem_reductions.kind import ProblemReductions, ProblemReductionsProfile

    tasks = tomllib.loads((ROOT / "campaigns" / "problem-reductions.toml").read_text())["tasks"]
    tools = TargetTools({"pred": str(replaying_pred(tmp_path / "b", "8df8ac04"))}, 60.0)
    rows = ProblemReductions(ProblemReductionsProfile()).preflight(tools, tasks=tasks, full=True)[1:]
    assert [r.what for r in rows] == [f"task {t}" for t in tasks]
    assert all(not r.problem and "canonical example rejected" in r.detail for r in rows), rows
    assert not misses.exists(), misses.read_text()
