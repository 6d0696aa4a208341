"""core/tempdirs: the folders a killed process left in the temporary directory go, nothing else."""

from __future__ import annotations

import os
import subprocess

from support import benchtui, write_campaign

from benchtui.core import tempdirs


def dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_only_real_folders_of_dead_owners_are_removed(tmp_path):
    dead = dead_pid()
    stale = tmp_path / f"benchtui-gate-{dead}-abc"
    (stale / "deep").mkdir(parents=True)
    (stale / "deep" / "gate.log").write_text("left by a SIGKILL")
    live = tmp_path / f"benchtui-gw-{os.getpid()}-abc"  # its owner runs: kept
    live.mkdir()
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious").write_text("not ours")
    (tmp_path / f"benchtui-mswea-{dead}-link").symlink_to(victim)  # a link is never followed
    (tmp_path / f"benchtui-node-{dead}-file").write_text("a file, not a folder")
    (tmp_path / f"benchtui-other-{dead}-abc").mkdir()  # not a kind benchtui makes
    (tmp_path / "benchtui-mini-0-abc").mkdir()  # pid 0: not a name make() gives
    (tmp_path / f"benchtui-mini-{2**80}-abc").mkdir()  # no such pid can exist: still not ours
    others = tmp_path / f"benchtui-gate-{dead}-theirs"  # another user's (made so as root): kept
    others.mkdir()
    if os.getuid() == 0:
        os.chown(others, 65534, 65534)
    else:
        others.rmdir()

    assert tempdirs.remove_stale(tmp_path) == [stale]
    assert not stale.exists() and live.is_dir() and (victim / "precious").exists()
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == sorted([live.name, "victim", f"benchtui-mswea-{dead}-link", f"benchtui-node-{dead}-file",
                           f"benchtui-other-{dead}-abc", "benchtui-mini-0-abc", f"benchtui-mini-{2**80}-abc",
                           *([others.name] if os.getuid() == 0 else [])])  # fmt: skip


def test_make_names_the_folder_by_its_owner_and_keeps_it_private(tmp_path, monkeypatch):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    folder = tempdirs.make("gate")
    assert folder.parent == tmp_path and folder.name.startswith(f"benchtui-gate-{os.getpid()}-")
    assert folder.stat().st_mode & 0o777 == 0o700
    assert tempdirs.remove_stale(tmp_path) == [] and folder.is_dir()  # we are alive


def test_a_campaign_start_removes_what_killed_campaigns_left(tmp_path):
    """The engine's own gate, gateway and mini-swe-agent folders die with it on SIGKILL: the next
    start removes them (TMPDIR says where they are)."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    dead = dead_pid()
    for kind in tempdirs.KINDS:
        (scratch / f"benchtui-{kind}-{dead}-x" / "sock").mkdir(parents=True)
    write_campaign(tmp_path)
    done = benchtui("t.toml", "--no-ui", cwd=tmp_path, env={"TMPDIR": str(scratch)})
    assert done.returncode == 0, done.stderr
    assert list(scratch.iterdir()) == []
