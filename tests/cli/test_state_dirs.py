"""A state dir holding several campaigns: the resume hint names the campaign, `--resume NAME`
(or a run dir) continues that one, and `ctl` with only `--state-dir` finds the running one, or
says which are running when several are."""

from __future__ import annotations

import pytest
import trio
from support import Recorder, benchtui, start, write_campaign

from benchtui.cli.closing import resume_command
from benchtui.cli.main import main as cli
from benchtui.engine import run as engine


def two_campaigns(tmp_path):
    a = write_campaign(tmp_path, name="a", sessions=2, total="10", latency=1, parallelism=1)
    b = write_campaign(tmp_path, name="b", sessions=2, total="10", latency=1, parallelism=1)
    return a, b


async def ctl(capsys, *argv) -> tuple[int, str]:
    rc = await trio.to_thread.run_sync(cli, ["ctl", *map(str, argv)])
    out, err = capsys.readouterr()
    return rc, (out + err).strip()


@pytest.mark.trio
async def test_ctl_with_only_the_state_dir_finds_the_running_campaign_not_the_latest(
    tmp_path, capsys, mock_clock
):
    a, b = two_campaigns(tmp_path)
    state = tmp_path / "dual"
    prep_a = engine.prepare(engine.Options(a, state))
    async with trio.open_nursery() as nursery:
        scheduler, _ = await start(prep_a, nursery, Recorder())
        # b starts later (it is the latest) but is stopped: only a runs.
        done = benchtui(b, "--no-ui", "--state-dir", state, cwd=tmp_path)
        assert (state / ".latest").read_text().strip() == "b"
        rc, out = await ctl(capsys, "--state-dir", state, "pause")
        assert rc == 0 and out.startswith("campaign a: paused"), (out, done.stderr)
        scheduler.stop(now=True)
        mock_clock.autojump_threshold = 0


@pytest.mark.trio
async def test_ctl_says_which_campaigns_run_when_several_do(tmp_path, capsys, mock_clock):
    a, b = two_campaigns(tmp_path)
    state = tmp_path / "dual"
    preps = [engine.prepare(engine.Options(path, state)) for path in (a, b)]
    async with trio.open_nursery() as nursery:
        schedulers = [(await start(prep, nursery, Recorder()))[0] for prep in preps]
        rc, out = await ctl(capsys, "--state-dir", state, "pause")
        assert rc == 2 and "2 campaigns are running" in out and "(a, b)" in out.replace("b, a", "a, b")
        assert "benchtui ctl" in out  # how to say which
        for scheduler in schedulers:
            assert not scheduler.paused  # neither was touched
            scheduler.stop(now=True)
        mock_clock.autojump_threshold = 0


def test_the_resume_hint_names_the_campaign_and_resumes_it_not_the_latest(tmp_path):
    a, b = two_campaigns(tmp_path)
    # Two stopped runs in one state dir; b started last (it is `.latest`).
    for path in (a, b):
        prep = engine.prepare(engine.Options(path, tmp_path / "dual"))
        prep.lock.release()
    hint = resume_command(tmp_path / "dual" / "a")
    assert hint == f"benchtui --resume {tmp_path / 'dual' / 'a'}"
    done = benchtui(*hint.split()[1:], "--no-ui", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "campaign a" in done.stdout or "/dual/a" in done.stdout
    assert (tmp_path / "dual" / "a" / "results").is_dir()
    assert not (tmp_path / "dual" / "b" / "results").exists()  # b untouched


def test_resume_by_name_in_the_default_state_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BENCHTUI_STATE_DIR", raising=False)
    a, b = two_campaigns(tmp_path)
    for path in (a, b):
        assert benchtui(path, "--no-ui", cwd=tmp_path).returncode == 0
    assert resume_command(tmp_path / "runs" / "a") == "benchtui --resume a"
    done = benchtui("--resume", "a", "--no-ui", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "runs/a" in done.stdout and "runs/b" not in done.stdout
    missing = benchtui("--resume", "nope", "--no-ui", cwd=tmp_path)
    assert missing.returncode == 2 and "nope" in missing.stderr


def test_four_starts_racing_for_one_run_dir_one_runs_and_the_losers_exit_3(tmp_path):
    # Issue 23: about 1 in 40 four-way races exited 1 ("No such file or directory
    # (.t.new-N/.campaign.toml.tmp)"); the deterministic guard is in test_hostile_startup.
    from support import popen

    write_campaign(tmp_path, sessions=2, latency=1.0, parallelism=1)
    procs = [popen("t.toml", "--no-ui", "--fresh", cwd=tmp_path) for _ in range(4)]
    results = [(p.wait(timeout=120), p.stderr.read()) for p in procs]
    assert all(rc in (0, 3) for rc, _ in results), results
    assert any(rc == 0 for rc, _ in results)
    assert all("Traceback" not in err and "No such file" not in err for _, err in results)
    losers = [err for rc, err in results if rc == 3]
    assert all("benchtui" in err and ("pid" in err or "another benchtui" in err) for err in losers), losers
