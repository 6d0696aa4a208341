"""The top50 runner with the REAL benchmark: its checkout (CodingThrust/problem-reductions-benchmark,
672b214) named by BENCHTUI_BENCHMARK_CHECKOUT, a problem-reductions git checkout (8df8ac04) named by
BENCHTUI_LIBRARY_CHECKOUT, and, as there is no real pred here, the stand-in pred replaying
../shared/pred-transcripts/8df8ac04.jsonl (the answers the real pred 0.5.0 of that commit gave).
Skipped, with the reason, where any of them is absent (CI included): none is copied here.

Against a scripted model (support/top50_model.py) on 127.0.0.1, through the engine, placement
`checkout`. The acceptance: 2 models x 2 runs, every submission accepted by the benchmark's own
`verify_submission` and `backend_score --local`; a cap that cuts model b's second run (spend <=
cap at the server, the cut run labelled, run again on --resume as attempt 2, nothing counted
twice)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from decimal import Decimal
from pathlib import Path

import pytest
import tomli_w
import trio
from support import last_states
from support.mini import run_campaign
from support.scripted_upstream import ScriptedUpstream
from support.top50 import require_namespace, runner_pids
from support.top50_model import Top50Model
from support.transcripts import TRANSCRIPTS

STAND_IN_PRED = Path(__file__).resolve().parents[2] / "support" / "stand_in_pred.py"
CERTIFICATES = TRANSCRIPTS / "certificates"
PRICES = {"input_usd_per_mtok": 1.0, "output_usd_per_mtok": 2.0}
REAL_KEY = "sk-real-scripted-key-benchmark-5d20"


def checkout(variable: str, marker: str) -> Path:
    value = os.environ.get(variable)
    if not value:
        pytest.skip(f"{variable} is not set (a checkout of the benchmark's parts; see docs/runners/top50.md)")
    path = Path(value)
    if not (path / marker).exists():
        pytest.skip(f"{variable}={value} has no {marker}")
    return path


@pytest.fixture
def real(tmp_path, monkeypatch):
    require_namespace()
    bench = checkout("BENCHTUI_BENCHMARK_CHECKOUT", "benchmark/run_top50.py")
    library = checkout("BENCHTUI_LIBRARY_CHECKOUT", "src/rules")
    if not (TRANSCRIPTS / "8df8ac04.jsonl").exists():
        pytest.skip(f"no pred transcripts at {TRANSCRIPTS}")
    done = subprocess.run(
        [sys.executable, "-c", "import minisweagent, litellm"], capture_output=True,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "MSWEA_SILENT_STARTUP": "1"},
    )  # fmt: skip
    if done.returncode != 0:
        pytest.skip("mini-swe-agent and litellm are not installed")
    # The pred: the stand-in replaying 8df8ac04's transcript, run by the system python (the
    # benchmark's oracle user runs it; a folder of its own others can enter).
    folder = Path(f"/tmp/benchtui-pred-{os.getpid()}")
    folder.mkdir(mode=0o755, exist_ok=True)
    pred = folder / "pred"
    transcript = TRANSCRIPTS / "8df8ac04.jsonl"
    python = shutil.which("python3", path="/usr/bin:/bin") or sys.executable
    pred.write_text(f'#!/bin/sh\nSTAND_IN_PRED_TRANSCRIPT={transcript} exec {python} {STAND_IN_PRED} "$@"\n')
    pred.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("SCRIPTED_API_KEY", REAL_KEY)
    yield bench, library, pred
    shutil.rmtree(folder, ignore_errors=True)


def certificate(name: str) -> dict:
    return json.loads((CERTIFICATES / name).read_text())


def campaign(tmp_path: Path, url: str, bench: Path, library: Path, pred: Path, **top) -> Path:
    doc = {
        "name": "top50-real",
        "runner": "top50",
        "parallelism": 2,
        "sessions_per_model": 2,
        "budget": {"total_usd": 6.0, "per_session_usd": 1.0},
        **top,
        "runners": {
            "top50": {"kind": "top50", "placement": "checkout", "benchmark": str(bench), "pred": str(pred),
                      "wall_time_s": 900, "verify_timeout_s": 60},
        },
        "models": [
            {"name": f"openai/{m}", **PRICES, "max_output_tokens": 8192, "api_base": url,
             "api_key_env": "SCRIPTED_API_KEY"}
            for m in ("model-a", "model-b")
        ],
        "environment": {"path": str(library), "tools": ["pred"]},
    }  # fmt: skip
    path = tmp_path / "campaign.toml"
    path.write_text(tomli_w.dumps(doc))
    return path


def benchmark_env(pred: Path, version: str) -> dict[str, str]:
    return {
        **os.environ,
        "PRED_BINARY": str(pred),
        "EXPECTED_PRED_VERSION": version,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }


@pytest.mark.slow
@pytest.mark.trio
async def test_two_models_two_runs_each_accepted_by_the_benchmarks_scorer_and_a_cut_run_rerun(tmp_path, real):
    bench, library, pred = real
    certs = {
        "model-a": {
            "binpacking_ilp": certificate("binpacking_ilp.bug.json"),
            "minimumvertexcover_ensemblecomputation": certificate(
                "minimumvertexcover_ensemblecomputation.bug.json"
            ),
        },
        "model-b": {
            "binpacking_ilp": certificate("binpacking_ilp.bug.json"),
            # The benchmark's verifier accepts it, ours does not (its bundle's target is not what
            # this build reduces to): an audit finding.
            "hamiltoniancircuit_stackercrane": certificate("hamiltoniancircuit_stackercrane.bug.json"),
        },
    }
    first_run = 486  # model b's first run: 2 triage + 50 x 10 generations, less 8 per accept

    def usage(model: str, n: int) -> tuple[int, int]:
        # From the 100th call of model b's second run, 65 calls use 8000 output tokens ($0.017
        # each, within each call's hold): its $1.00 is spent after ~50 of them and the gateway
        # refuses the next call with a 401; attempt 2 meets the last ~15 and fits. (A provider
        # reporting more than the hold would be stopped as overspent instead: F6.)
        expensive = model == "model-b" and first_run + 100 < n <= first_run + 165
        return (1000, 8000) if expensive else (1000, 50)

    model = Top50Model(library, certs, usage)
    with ScriptedUpstream(model) as up:
        path = campaign(tmp_path, up.url, bench, library, pred)
        with trio.fail_after(1800):
            prep, _ = await run_campaign(path, tmp_path / "state")
        first = last_states(prep.run_dir)
        cut = [r for r in first.values() if r["state"] != "done"]
        assert len(cut) == 1 and "model-b" in cut[0]["model"], {
            k: (r["state"], r["reason"]) for k, r in first.items()
        }
        cut_run = cut[0]
        assert cut_run["retryable"] and cut_run["ending"]["name"] == "budget_exhausted", cut_run
        with trio.fail_after(1800):
            prep, _ = await run_campaign(path, tmp_path / "state", resume=True)
    final = last_states(prep.run_dir)
    assert all(r["state"] == "done" for r in final.values()), final
    assert final[cut_run["session"]]["attempt"] == 2
    assert runner_pids(bench.resolve()) == []

    # Money: every call the server served, priced once; the cut attempt's spend kept as wasted.
    served = Decimal(0)
    for call in up.calls:
        name = str(call.body["model"])
        counted = [c for c in up.calls if str(c.body["model"]) == name]
        n = next(i for i, c in enumerate(counted, 1) if c is call)
        inp, out = usage(name, n)
        served += (Decimal(inp) * Decimal(1) + Decimal(out) * Decimal(2)) / Decimal(1_000_000)
    totals = tomllib.loads((prep.run_dir / "ledger.toml").read_text())["totals"]
    assert Decimal(str(totals["spent_usd"])) == served <= Decimal("6.0")
    assert Decimal(str(totals["wasted_usd"])) == Decimal(str(cut_run["cost_usd"])) <= Decimal("1.0")

    # Each kept submission: the benchmark's verify_submission accepts it, backend_score --local too.
    version = "0.5.0"
    subs = tmp_path / "subs" / "submissions"
    subs.mkdir(parents=True)
    for rec in final.values():
        kept = prep.run_dir / "sessions" / rec["session"] / f"attempt-{rec['attempt']}.submission.json"
        doc = json.loads(kept.read_bytes())
        assert doc["status"] == "completed" and len(doc["episodes"]) == 50 and doc["rankable"] is True
        out = tmp_path / f"{rec['session']}.scored.json"
        subprocess.run(
            [sys.executable, "-m", "benchmark.verify_submission", str(kept), "--repo-dir", str(library), "--out", str(out)],
            cwd=bench, env=benchmark_env(pred, version), check=True, capture_output=True,
        )  # fmt: skip
        scored = json.loads(out.read_text())
        expected = len(certs[rec["model"].split("/")[1]])
        assert scored["verified_bugs"] == expected and scored["rankable"] is True, scored
        verdicts = json.loads((kept.parent / f"attempt-{rec['attempt']}.verdicts.json").read_text())
        findings = verdicts["findings"]
        assert (len(findings) == 1) == ("model-b" in rec["model"]), findings
        shutil.copy(kept, subs / f"{rec['session']}.json")
    scored_dir = tmp_path / "scored"
    subprocess.run(
        [sys.executable, "-m", "benchmark.backend_score", "--local", str(subs), str(scored_dir), "--repo-dir", str(library)],
        cwd=bench, env=benchmark_env(pred, version), check=True, capture_output=True,
    )  # fmt: skip
    entries = [json.loads(p.read_text()) for p in (scored_dir / "board").glob("*.json")]
    assert sorted(e["bugs_found"] for e in entries) == [2, 2, 2, 2], entries  # the board's name
    assert {e["model"] for e in entries} == {"openai/model-a", "openai/model-b"}
