"""The one reader of the benchmark's submission.json: typed, version-checked, bounded; tolerant of
a run still being written (progress), strict for a finished one (one line for anything wrong)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from support import submissions as S

from benchtui.core import submission
from benchtui.core.errors import BadInput


def a_run(**kw: object) -> dict:
    plans = {
        3: S.Plan(accepted=1, pred_calls=5),
        12: S.Plan(rejected=1, accepted=2, pred_calls=13, generations=10),
        30: S.Plan(rejected=2, pred_calls=2),
    }
    return S.build(plans=plans, **kw)  # type: ignore[arg-type]


def test_a_finished_run_reads_as_the_scorer_counts_it() -> None:
    sub = submission.parse(S.dumps(a_run()))
    assert (sub.model, sub.status, sub.run_error) == ("vendor/model-a", "completed", "")
    assert (sub.library_commit, sub.pred_version, sub.runner_version) == (
        S.PUBLISHED_COMMIT,
        "0.6.0",
        "0.11.0",
    )
    assert sub.complete and not sub.checkpoint and sub.rankable
    assert (sub.done, sub.planned, len(sub.shortlist)) == (50, 50, 50)
    assert [(e.index, e.rule, e.accepted.attempt) for e in sub.accepts if e.accepted] == [
        (3, "rule_03", 1),
        (12, "rule_12", 2),
    ]
    assert sub.accepts[0].accepted and sub.accepts[0].accepted.certificate["rule"] == "rule_03"
    assert sub.episodes[29].accepted is None and sub.episodes[29].submits == 2
    assert sub.pred_calls == 20
    assert sub.cap_hits == {"model_generations": 1}
    # triage 2,000/200 and 50 episodes of 1,000/100
    assert sub.usage == submission.Usage(input=52_000, output=5_200)
    assert sub.generations == 2 + 49 * 3 + 10
    assert set(sub.extra) == {"safety_controls", "inference_parameters"}


def test_usage_keeps_its_four_buckets() -> None:
    plans = {1: S.Plan(usage={"input": 7, "output": 5, "cache_read": 3, "cache_write": 2})}
    sub = submission.parse(S.dumps(S.build(plans=plans, triage_usage={"input": 1})))
    assert sub.usage.to_json() == {
        "input": 7 + 49 * 1000 + 1,
        "output": 5 + 49 * 100,
        "cache_read": 3,
        "cache_write": 2,
    }


def test_an_unknown_runner_version_is_refused_in_one_line() -> None:
    with pytest.raises(BadInput) as refused:
        submission.parse(S.dumps(a_run(runner_version="0.12.0")), where="x.json")
    assert str(refused.value) == "x.json: a submission of runner version '0.12.0': this benchtui reads 0.11.0"


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b"{not json", "not JSON"),
        (b"[1, 2]", "not a JSON object"),
        (b"{}", "no runner_version"),
        (b"[" * 100_000, "not JSON"),  # nesting past the recursion limit
        ("\udcff".encode("utf-8", "surrogatepass"), "not JSON"),
    ],
)
def test_what_is_no_submission_is_one_line(data: bytes, says: str) -> None:
    with pytest.raises(BadInput) as refused:
        submission.parse(data)
    assert says in str(refused.value) and "\n" not in str(refused.value)


def _corrupt(path: list[object], value: object) -> dict:
    sub = a_run()
    node: object = sub
    for key in path[:-1]:
        node = node[key]  # type: ignore[index]
    node[path[-1]] = value  # type: ignore[index]
    return sub


@pytest.mark.parametrize(
    ("path", "value", "says"),
    [
        (["status"], "finished", "neither completed nor run_error"),
        (["model"], 7, "model is not a string"),
        (["rankable"], "yes", "not a boolean"),
        (["episodes"], {}, "episodes is not a list"),
        (["episodes", 4], None, "episodes[4] is not an object"),
        (["episodes", 2, "ledger", "submit", 0, "certificate"], "cert", "accepted without a certificate"),
        (["episodes", 2, "ledger", "status", "pred_calls", "used"], -1, "non-negative"),
        (["episodes", 2, "usage", "input"], 1.5, "non-negative integer"),
        (["shortlist", 0], 3, "shortlist[0] has no rule"),
        (["triage"], [], "triage is not an object"),
    ],
)
def test_a_corrupted_submission_is_refused_naming_the_field(
    path: list[object], value: object, says: str
) -> None:
    with pytest.raises(BadInput) as refused:
        submission.parse(S.dumps(_corrupt(path, value)))
    assert says in str(refused.value) and "\n" not in str(refused.value)


def test_progress_of_a_run_as_its_file_grows() -> None:
    assert submission.progress(None).describe() == "triage"
    cut = S.build(episodes=7, plans={2: S.Plan(accepted=1), 5: S.Plan(rejected=1, accepted=2)})
    seen = submission.progress(S.dumps(cut))
    assert (seen.phase, seen.done, seen.accepts) == ("episodes", 7, 2)
    assert seen.describe() == "episode 8/50, 2 accepted"
    done = submission.progress(S.dumps(a_run()))
    assert (done.phase, done.describe()) == ("completed", "completed 50/50, 2 accepted")


def test_progress_says_a_failed_run_failed() -> None:
    failed = S.build(episodes=0, run_error="triage infrastructure error: AuthenticationError: 401")
    failed["shortlist"] = None
    seen = submission.progress(S.dumps(failed))
    assert seen.phase == "failed" and "401" in seen.describe()


@pytest.mark.parametrize("data", [b"", b'{"model": "a", "runner_ver', S.dumps(a_run())[:5000]])
def test_progress_of_a_torn_file_never_raises(data: bytes) -> None:
    seen = submission.progress(data)
    assert seen.phase == "unreadable" and seen.problem


def test_progress_of_a_newer_runner_says_why() -> None:
    seen = submission.progress(S.dumps(a_run(runner_version="9.0.0")))
    assert seen.phase == "unreadable" and "9.0.0" in seen.describe()


def test_the_file_is_read_without_following_a_link(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_bytes(S.dumps(a_run()))
    link = tmp_path / "submission.json"
    link.symlink_to(real)
    with pytest.raises(BadInput, match="cannot read the submission"):
        submission.read(link)
    assert submission.read_progress(link).phase == "unreadable"
    assert submission.read(real).complete


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "submission.json"
    os.mkfifo(fifo)
    result: list[object] = []
    reader = threading.Thread(target=lambda: result.append(submission.read_progress(fifo)), daemon=True)
    reader.start()
    reader.join(5)
    assert not reader.is_alive(), "reading a FIFO blocked"
    assert isinstance(result[0], submission.Progress) and result[0].phase == "unreadable"


def test_a_huge_file_is_refused_before_it_is_read(tmp_path: Path) -> None:
    huge = tmp_path / "submission.json"
    with huge.open("wb") as f:  # sparse: costs nothing to make, would cost 128 MiB to load
        f.truncate(submission.MAX_BYTES + 1)
    with pytest.raises(BadInput, match="too large"):
        submission.read(huge)
    with pytest.raises(BadInput, match="too large"):
        submission.read_file(tmp_path / "submission.json", limit=10)


def test_a_missing_file_is_absent_for_progress_and_missing_for_read(tmp_path: Path) -> None:
    assert submission.read_progress(tmp_path / "none.json").phase == "absent"
    with pytest.raises(FileNotFoundError):
        submission.read(tmp_path / "none.json")


def test_the_real_runner_s_stub_run_reads(tmp_path: Path) -> None:
    """`python -m benchmark.run_top50 --fake` (its stub executor: no model call) writes a file
    this reader reads: 50 episodes, completed, not rankable (the stub never is)."""
    checkout = S.need_checkout()
    library = tmp_path / "library"
    (library / "src" / "rules").mkdir(parents=True)
    for rule in S.rules(60, "stub"):
        (library / "src" / "rules" / f"{rule}.rs").write_text("")
    pred = tmp_path / "pred"
    pred.write_text('#!/bin/sh\necho "pred 0.6.0"\n')
    pred.chmod(0o755)
    out = tmp_path / "submission.json"
    env = {**os.environ, "PRED_BINARY": str(pred), "LITELLM_LOCAL_MODEL_COST_MAP": "True",
           "MSWEA_SILENT_STARTUP": "1", "MSWEA_GLOBAL_CONFIG_DIR": str(tmp_path / "mswea")}  # fmt: skip
    ran = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmark.run_top50",
            "--fake",
            "--model",
            "fake/stub",
            "--repo-dir",
            str(library),
            "--output",
            str(out),
        ],  # fmt: skip
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr[-2000:]
    sub = submission.read(out)
    assert sub.complete and not sub.rankable and sub.model == "fake/stub"
    assert sub.shortlist == tuple(S.rules(50, "stub")) and sub.pred_version == "0.6.0"
    assert json.loads(out.read_bytes())["runner_version"] in submission.RUNNER_VERSIONS
