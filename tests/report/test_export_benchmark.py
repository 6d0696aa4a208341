"""What `benchtui export` writes is what the benchmark's own tools accept, and its counts are the
scorer's: run against the real checkout (BENCHTUI_BENCHMARK_CHECKOUT; skipped with the reason
where it is absent, CI included), its verifier replaying the real pred's recorded answers
(../shared/pred-transcripts, build 8df8ac04) on the public bug certificates.

Two models × two runs of the top50 output stand-in: model-a's runs accept three real bugs
(one at a second submit) and one; model-b's first run is a local variant (8df8ac04 / pred 0.5.0,
the pins measured here), its second finds nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support import submissions as S
from support import top50_stub
from support.transcripts import replaying_pred

from benchtui.cli.main import main
from benchtui.report import top50_runs

BUGS = {  # position in the shortlist: the public certificate the runner accepted there
    3: "binpacking_ilp.bug.json",
    12: "minimumvertexcover_ensemblecomputation.bug.json",
    40: "hamiltoniancircuit_stackercrane.bug.json",
}
LOCAL = ("8df8ac04" + "0" * 32, "0.5.0")


def shortlist(certificates: Path) -> list[str]:
    rules = S.rules(50)
    for position, name in BUGS.items():
        rules[position - 1] = json.loads((certificates / name).read_text())["rule"]
    return rules


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    checkout = S.need_checkout()
    from support.transcripts import need_transcripts

    certificates = need_transcripts() / "certificates"
    tmp = tmp_path_factory.mktemp("bench")
    rules = shortlist(certificates)
    files = {str(p): str(certificates / name) for p, name in BUGS.items()}
    runs = {
        "vendor/model-a#0": {
            "accepted": {"3": 1, "12": 2, "40": 1},
            "certificates": files,
            "shortlist": rules,
        },
        "vendor/model-a#1": {"accepted": {"12": 1}, "certificates": files, "shortlist": rules},
        "vendor/model-b#0": {
            "accepted": {"40": 1},
            "certificates": files,
            "shortlist": rules,
            "library_commit": LOCAL[0],
            "pred_version": LOCAL[1],
        },
        "vendor/model-b#1": {"shortlist": rules, "pred_calls": 2},
    }
    run_dir = top50_stub.run(tmp, runs)
    assert (
        main(["export", str(run_dir), "--submissions", str(tmp / "out"), "--board", str(tmp / "board")]) == 0
    )
    repo = tmp / "library"  # the scorer's canonical inventory: the rule files' names
    (repo / "src" / "rules").mkdir(parents=True)
    for rule in rules:
        (repo / "src" / "rules" / f"{rule}.rs").write_text("")
    pred = replaying_pred(tmp / "bin", "8df8ac04")
    env = {
        **os.environ,
        "PRED_BINARY": str(pred),
        "EXPECTED_PRED_VERSION": "",
        "PATH": f"{pred.parent}:{os.environ['PATH']}",
    }
    return {"checkout": checkout, "tmp": tmp, "run_dir": run_dir, "repo": repo, "env": env}


def bench(ctx: dict[str, object], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args],
        cwd=ctx["checkout"],  # type: ignore[arg-type]
        env=ctx["env"],  # type: ignore[arg-type]
        capture_output=True,
        text=True,
        timeout=600,
    )


def manifest(ctx: dict[str, object]) -> list[dict[str, object]]:
    return json.loads((Path(str(ctx["tmp"])) / "out" / "manifest.json").read_text())


def test_every_exported_submission_is_the_runner_s_file_byte_for_byte(scored: dict[str, object]) -> None:
    run_dir, out = Path(str(scored["run_dir"])), Path(str(scored["tmp"])) / "out"
    entries = manifest(scored)
    assert len(entries) == 4
    for entry in entries:
        kept = run_dir / top50_runs.submission_path(str(entry["session"]), int(entry["attempt"]))  # type: ignore[call-overload]
        assert (out / str(entry["file"])).read_bytes() == kept.read_bytes()
    labels = {(e["model"], e["session"]): e["label"] for e in entries}
    assert labels[("vendor/model-b", "vendor_model-b-0000")] == f"local:{LOCAL[0]}/{LOCAL[1]}"
    assert sum(1 for label in labels.values() if label == "rankable") == 3


def test_verify_submission_re_verifies_each_and_counts_what_we_count(scored: dict[str, object]) -> None:
    out = Path(str(scored["tmp"])) / "out"
    boards = {
        json.loads(p.read_text())["submission_id"]: json.loads(p.read_text())
        for p in (out.parent / "board").glob("*.json")
    }
    for entry in manifest(scored):
        result = out / f"{entry['session']}.scored.json"
        ran = bench(scored, "-m", "benchmark.verify_submission", str(out / str(entry["file"])),
                    "--repo-dir", str(scored["repo"]), "--out", str(result))  # fmt: skip
        assert ran.returncode == 0, ran.stderr[-3000:]
        theirs = json.loads(result.read_text())
        ours = boards[str(entry["sha256"])[:8]]
        assert theirs["rankable"] is True, theirs["rankability_errors"]  # structural: pins not looked at
        for key in ("bugs_at_10", "bugs_at_25", "bugs_at_50", "first_attempt_accepts", "second_attempt_accepts",
                    "pred_calls_per_bug", "cap_hits", "usage_totals", "total_tokens_k"):  # fmt: skip
            assert theirs[key] == ours[key], key
        assert theirs["verified_bugs"] == ours["bugs_found"]
    assert sorted(b["bugs_found"] for b in boards.values()) == [0, 1, 1, 3]


def test_submit_dry_run_accepts_each(scored: dict[str, object]) -> None:
    out = Path(str(scored["tmp"])) / "out"
    for entry in manifest(scored):
        ran = bench(
            scored, "-m", "benchmark.submit", "--predictions", str(out / str(entry["file"])), "--dry-run"
        )
        assert ran.returncode == 0, ran.stderr[-2000:]
        assert ran.stdout.startswith("✓ valid") and "dry-run, not sent" in ran.stdout


def test_backend_score_local_scores_the_folder_and_its_board_is_ours(scored: dict[str, object]) -> None:
    tmp = Path(str(scored["tmp"]))
    ran = bench(scored, "-m", "benchmark.backend_score", "--local", str(tmp / "out" / "submissions"), str(tmp / "scored"),
                "--repo-dir", str(scored["repo"]))  # fmt: skip
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    assert ran.stdout.count("FINISHED") == 4 and "4 scored, 0 failed" in ran.stdout
    theirs = {p.name: json.loads(p.read_text()) for p in (tmp / "scored" / "board").glob("*.json")}
    ours = {p.name: json.loads(p.read_text()) for p in (tmp / "board").glob("*.json")}
    assert set(theirs) == set(ours)  # the same file names: slug, timestamp, submission id
    for name, entry in ours.items():
        local = entry["library_commit"] == LOCAL[0]
        # the one difference: our `rankable` also holds the run to the published pins
        assert entry == {**theirs[name], "rankable": not local}, name


def test_the_board_export_passes_the_egress_guard_and_builds_a_board_ranking_both(
    scored: dict[str, object],
) -> None:
    tmp = Path(str(scored["tmp"]))
    guard = str(Path(str(scored["checkout"])) / ".github" / "scripts" / "check_aggregate.py")
    for entry in (tmp / "board").glob("*.json"):
        ran = bench(scored, guard, str(entry))
        assert ran.returncode == 0, ran.stdout
    built = tmp / "built.json"
    ran = bench(scored, "-m", "benchmark.backend_score", "--build-board", str(tmp / "board"), str(built))
    assert ran.returncode == 0 and "2 model(s)" in ran.stdout, ran.stdout + ran.stderr
    ran = bench(scored, guard, str(built))
    assert ran.returncode == 0, ran.stdout
    board = json.loads(built.read_text())
    assert [(e["model"], e["bugs_found"]) for e in board] == [("vendor/model-a", 3), ("vendor/model-b", 1)]


def test_the_report_counts_what_the_scorer_counts(scored: dict[str, object], tmp_path: Path) -> None:
    """Per run, `benchtui report`'s Top50 rows equal `verify_submission`'s scored result."""
    out = Path(str(scored["tmp"])) / "out"
    assert main(["report", str(scored["run_dir"]), "--format", "json", "-o", str(tmp_path / "r.json")]) == 0
    rows = {
        r["sha256"]: r for m in json.loads((tmp_path / "r.json").read_text())["top50"] for r in m["run_rows"]
    }
    assert len(rows) == 4
    for entry in manifest(scored):
        result = tmp_path / f"{entry['session']}.json"
        ran = bench(scored, "-m", "benchmark.verify_submission", str(out / str(entry["file"])),
                    "--repo-dir", str(scored["repo"]), "--out", str(result))  # fmt: skip
        assert ran.returncode == 0, ran.stderr[-3000:]
        theirs, ours = json.loads(result.read_text()), rows[str(entry["sha256"])]
        assert ours["label"] == entry["label"]
        for key in ("verified_bugs", "bugs_at_10", "bugs_at_25", "bugs_at_50", "first_attempt_accepts",
                    "second_attempt_accepts", "pred_calls_per_bug", "cap_hits", "usage_totals"):  # fmt: skip
            assert ours[key] == theirs[key], key


def test_an_uncertified_run_counts_nothing_for_the_scorer_nor_for_us(tmp_path: Path) -> None:
    """The runner's flag false: the scorer's validation fails it and it counts none of its
    accepts; our score says the same, and the run is not on our board."""
    checkout = S.need_checkout()
    run_dir = top50_stub.run(
        tmp_path, {"vendor/model-a#0": {"accepted": {"3": 1, "9": 2}, "rankable": False}}, n=1
    )
    assert main(["export", str(run_dir), "--submissions", str(tmp_path / "out")]) == 0
    (entry,) = [
        e
        for e in json.loads((tmp_path / "out" / "manifest.json").read_text())
        if e["model"] == "vendor/model-a"
    ]
    repo = tmp_path / "library"
    (repo / "src" / "rules").mkdir(parents=True)
    for rule in S.rules(50):
        (repo / "src" / "rules" / f"{rule}.rs").write_text("")
    ran = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmark.verify_submission",
            str(tmp_path / "out" / entry["file"]),
            "--repo-dir",
            str(repo),
            "--out",
            str(tmp_path / "scored.json"),
        ],  # fmt: skip
        cwd=checkout,
        env={**os.environ, "EXPECTED_PRED_VERSION": ""},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr[-2000:]
    theirs = json.loads((tmp_path / "scored.json").read_text())
    (run,) = [r for r in top50_runs.read([run_dir]).runs if r.model == "vendor/model-a"]
    assert theirs["rankable"] is False and theirs["verified_bugs"] == run.score.bugs == 0
    assert theirs["first_attempt_accepts"] == run.score.first_attempt == 0
    assert not run.counted and run.finished


def test_a_file_the_benchmark_s_runner_wrote_is_exported_as_it_is(tmp_path: Path) -> None:
    """`python -m benchmark.run_top50 --fake` (its stub executor: no model call) writes a real
    submission; exported byte for byte, labelled local (the stub is never rankable), and what
    the benchmark's own tools then say of it: submit --dry-run refuses it for that reason."""
    checkout = S.need_checkout()
    library = tmp_path / "library"
    (library / "src" / "rules").mkdir(parents=True)
    for rule in S.rules(55, "stub"):
        (library / "src" / "rules" / f"{rule}.rs").write_text("")
    pred = tmp_path / "pred"
    pred.write_text('#!/bin/sh\necho "pred 0.6.0"\n')
    pred.chmod(0o755)
    made = tmp_path / "made.json"
    env = {**os.environ, "PRED_BINARY": str(pred), "LITELLM_LOCAL_MODEL_COST_MAP": "True",
           "MSWEA_SILENT_STARTUP": "1", "MSWEA_GLOBAL_CONFIG_DIR": str(tmp_path / "mswea")}  # fmt: skip
    ran = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmark.run_top50",
            "--fake",
            "--model",
            "vendor/model-a",
            "--repo-dir",
            str(library),
            "--output",
            str(made),
        ],  # fmt: skip
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr[-2000:]
    run_dir = top50_stub.run(tmp_path, {"vendor/model-a#0": {"file": str(made)}}, n=1)
    assert main(["export", str(run_dir), "--submissions", str(tmp_path / "out")]) == 0
    (entry,) = [
        e
        for e in json.loads((tmp_path / "out" / "manifest.json").read_text())
        if e["model"] == "vendor/model-a"
    ]
    exported = tmp_path / "out" / entry["file"]
    assert exported.read_bytes() == made.read_bytes()
    assert entry["label"] == f"local:{S.PUBLISHED_COMMIT}/0.6.0"
    said = subprocess.run([sys.executable, "-m", "benchmark.submit", "--predictions", str(exported), "--dry-run"],
                          cwd=checkout, env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert said.returncode == 1 and "runner did not certify the standardized rankable path" in said.stderr
