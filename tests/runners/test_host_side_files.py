"""The host's reads and writes into a session's copy never follow what the agent made there.

Every place the host touches the copy — the full outputs it saves there (the mini worker, root,
outside the sandbox), certificates.jsonl and shortlist.json it collects, the disk it polls where
the copy is no volume, the copy's removal — meets, at every component of its path, each thing an
agent can plant: a link to a host folder, a link to another session's copy, a FIFO, and a folder
swapped for a link once the host has looked at it. Nothing is then written, read or removed
outside the copy; nothing blocks. Before, the saved outputs' folder was made with
`mkdir(exist_ok=True)` and the file opened with O_NOFOLLOW on its last component only: a link in
place of the folder had the host write the agent's output into any folder (another session's
copy, say).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import trio
from support.mini import journal, pred_on_path, run_campaign, write_campaign
from support.real_parts import copies_are_volumes, require_tools
from support.scripted_llm import SUBMIT, Reply, ScriptedLLM

from benchtui.core import volume, workspace
from benchtui.runners.kit import beneath, collect, observation, resources
from benchtui.runners.mini.runner import read_shortlist

SAVED = observation.SAVED_DIR


class Host:
    """A session's copy, what lies outside it (a host folder, another session's copy), and what
    the agent can plant at a name in its copy."""

    def __init__(self, root: Path) -> None:
        self.copy = root / "sessions" / "s-0" / "workdir"
        self.host = root / "host"
        self.other = root / "sessions" / "s-1" / "workdir"
        for folder in (self.copy, self.host, self.other):
            folder.mkdir(parents=True)
        (self.host / "canary").write_text("host")
        (self.other / "canary").write_text("other")
        for name in ("certificates.jsonl", "shortlist.json", SAVED):  # what the host would read
            (self.host / name).write_text('[{"rule": "SECRET"}]\n')
            (self.other / name).write_text('[{"rule": "SECRET"}]\n')

    def outside(self) -> dict[str, list[str]]:
        """What lies outside the copy, to compare before and after."""
        return {str(f): sorted(os.listdir(f)) for f in (self.host, self.other)}

    def plant(self, at: Path, what: str) -> None:
        at.parent.mkdir(parents=True, exist_ok=True)
        if what == "link to a host folder":
            at.symlink_to(self.host)
        elif what == "link to another session's copy":
            at.symlink_to(self.other)
        elif what == "FIFO":
            os.mkfifo(at)
        else:
            raise AssertionError(what)


PLANTED = ("link to a host folder", "link to another session's copy", "FIFO")


def swapping_open(monkeypatch: pytest.MonkeyPatch, name: str, do: Callable[[], None]) -> None:
    """The agent swaps a folder for a link right after the host opened the folder `name`: every
    later use of it by path would follow the link."""
    real = os.open
    done = []

    def open_(path, flags, mode=0o777, *, dir_fd=None):  # type: ignore[no-untyped-def]
        fd = real(path, flags, mode, dir_fd=dir_fd)
        if str(path) == name and not done:
            done.append(True)
            do()
        return fd

    monkeypatch.setattr(os, "open", open_)


@pytest.mark.parametrize("what", PLANTED)
@pytest.mark.parametrize("component", [SAVED, f"{SAVED}/action-1.txt"])
def test_saved_outputs_are_never_written_through_a_planted_name(tmp_path, what, component):
    host = Host(tmp_path)
    before = host.outside()
    host.plant(host.copy / component, what)
    outputs = observation.SavedOutputs(host.copy, "/workspace")
    started = time.monotonic()
    view = observation.shape("x\n" * 50_000, 1000, outputs, "action-1.txt")
    assert time.monotonic() - started < 5  # a FIFO was never opened
    assert view.saved == "" and "the full output was not saved" in view.text
    assert host.outside() == before
    assert not any(host.host.rglob("action-*")) and not any(host.other.rglob("action-*"))


def test_a_saved_outputs_folder_swapped_for_a_link_once_opened_still_gets_the_file(tmp_path, monkeypatch):
    host = Host(tmp_path)
    before = host.outside()
    outputs = observation.SavedOutputs(host.copy, "/workspace")
    (host.copy / SAVED).mkdir()

    def swap() -> None:
        (host.copy / SAVED).rename(host.copy / "moved")
        (host.copy / SAVED).symlink_to(host.other)

    swapping_open(monkeypatch, SAVED, swap)
    view = observation.shape("x\n" * 50_000, 1000, outputs, "action-1.txt")
    monkeypatch.undo()
    assert view.saved == "/workspace/.benchtui-outputs/action-1.txt"
    assert (host.copy / "moved" / "action-1.txt").is_file()  # in the folder it opened: inside the copy
    assert host.outside() == before


@pytest.mark.parametrize("what", PLANTED)
@pytest.mark.parametrize("name", ["certificates.jsonl", "shortlist.json"])
def test_collected_files_are_never_read_through_a_planted_name(tmp_path, what, name):
    host = Host(tmp_path)
    host.plant(host.copy / name, what)
    started = time.monotonic()
    certificates = collect.certificate_lines(host.copy, name)
    shortlist, why = read_shortlist(host.copy) if name == "shortlist.json" else (None, "")
    assert time.monotonic() - started < 5
    assert certificates.lines == [] and shortlist is None
    said = "not a regular file (a FIFO)" if what == "FIFO" else "a symbolic link (not followed)"
    assert said in certificates.problem and (name != "shortlist.json" or said in why)


@pytest.mark.parametrize("what", PLANTED)
def test_the_copy_itself_is_never_followed_nor_read_through(tmp_path, what):
    """The top component: where the host expects the copy, a link (or a FIFO) is refused too."""
    host = Host(tmp_path)
    planted = tmp_path / "planted"
    host.plant(planted, what)
    with pytest.raises(beneath.Refused):
        collect.read_beneath(planted, "certificates.jsonl")
    with pytest.raises(beneath.Refused):
        observation.SavedOutputs(planted, "/workspace")


def test_a_folder_on_the_way_swapped_once_opened_is_read_as_it_was(tmp_path, monkeypatch):
    host = Host(tmp_path)
    (host.copy / "sub").mkdir()
    (host.copy / "sub" / "certificates.jsonl").write_text('{"rule": "mine"}\n')

    def swap() -> None:
        (host.copy / "sub").rename(host.copy / "moved")
        (host.copy / "sub").symlink_to(host.host)

    swapping_open(monkeypatch, "sub", swap)
    found = collect.read_beneath(host.copy, "sub/certificates.jsonl")
    monkeypatch.undo()
    assert found == b'{"rule": "mine"}\n'


@pytest.mark.parametrize("what", PLANTED)
def test_the_polled_disk_counts_nothing_outside_the_copy(tmp_path, what):
    host = Host(tmp_path)
    with open(host.host / "big", "wb") as f:
        f.write(b"\0" * (8 << 20))  # 8 MiB the poll must not count
    empty = resources.disk_used(host.copy)
    host.plant(host.copy / "inner" / "x", what)
    assert resources.disk_used(host.copy) - empty < 64 * 1024


def test_a_folder_swapped_during_the_disk_poll_is_not_walked(tmp_path, monkeypatch):
    host = Host(tmp_path)
    with open(host.host / "big", "wb") as f:
        f.write(b"\0" * (8 << 20))
    (host.copy / "sub").mkdir()

    def swap() -> None:
        (host.copy / "sub").rename(host.copy / "moved")
        (host.copy / "sub").symlink_to(host.host)

    real_scandir = os.scandir
    swapped = []

    def scandir(path):  # type: ignore[no-untyped-def]
        if not swapped:  # the poll listed the copy: the agent swaps the folder it will walk next
            swapped.append(True)
            listing = list(real_scandir(path))
            swap()
            return iter_entries(listing)
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    used = resources.disk_used(host.copy)
    monkeypatch.undo()
    assert used < 1 << 20


class iter_entries:  # noqa: N801 (a stand-in for scandir's iterator)
    def __init__(self, entries: list[os.DirEntry[str]]) -> None:
        self.entries = entries

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.entries)

    def __enter__(self):  # type: ignore[no-untyped-def]
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def close(self) -> None:
        return None


@pytest.mark.parametrize("mounted", [True, False], ids=["volume", "folder"])
@pytest.mark.parametrize("keep", [False, True], ids=["removed", "kept"])
def test_the_copys_removal_touches_nothing_outside_it(tmp_path, monkeypatch, mounted, keep):
    if mounted:
        copies_are_volumes(monkeypatch)
    host = Host(tmp_path)
    host.copy.rmdir()
    target = tmp_path / "target"
    (target / "src").mkdir(parents=True)
    (target / "src" / "lib.rs").write_text("// the target\n")
    workspace.make_session_copy(target, host.copy, 8 << 20 if mounted else None)
    assert volume.mounted(host.copy) == mounted
    before = host.outside()
    for what, name in zip(PLANTED, ("to-host", "to-other", "fifo"), strict=True):
        host.plant(host.copy / "deep" / name, what)
    started = time.monotonic()
    volume.remove(host.copy, keep=keep)
    assert time.monotonic() - started < 10  # the FIFO was never opened
    assert host.outside() == before
    assert not volume.mounted(host.copy) and not volume.image_of(host.copy).exists()
    if keep:  # the agent's files as it left them: links as links, the FIFO as a FIFO
        assert os.readlink(host.copy / "deep" / "to-host") == str(host.host)
        assert (host.copy / "src" / "lib.rs").read_text() == "// the target\n"
    else:
        assert not host.copy.exists()


@pytest.fixture
def _mini_env(tmp_path, monkeypatch):
    require_tools("bwrap")
    pred_on_path(tmp_path, monkeypatch)
    monkeypatch.setenv("SCRIPTED_API_KEY", "sk-test-scripted-0000")


@pytest.mark.trio
@pytest.mark.usefixtures("_mini_env")
async def test_a_mini_agent_cannot_aim_the_workers_saved_outputs_at_another_folder(tmp_path):
    """End to end: the agent replaces the saved outputs' folder with a link to a host folder (the
    worker writes as root, outside the sandbox), then prints more than it is shown."""
    victim = tmp_path / "victim"
    victim.mkdir()
    steps = [
        Reply("seq 20000"),  # cut: saved, so the folder exists
        Reply(f"rm -rf {SAVED} && ln -s {victim} {SAVED} && seq 30000"),
        Reply(SUBMIT),
    ]
    with ScriptedLLM(steps) as llm:
        path = write_campaign(
            tmp_path, llm.url, runner={"environment": "bubblewrap", "observation_chars": 2000}
        )
        with trio.fail_after(90):
            prep, _ = await run_campaign(path, tmp_path / "runs")
    (record,) = journal(prep.run_dir).values()
    assert record["state"] == "done"
    assert list(victim.iterdir()) == []
    shown = [str(m["content"]) for m in llm.requests[-1].messages if m["role"] != "assistant"]
    assert "the full output is in /workspace/.benchtui-outputs/action-1.txt" in shown[2]
    assert "the full output was not saved (.benchtui-outputs/action-2.txt: a symbolic link" in shown[3]
    log = (prep.run_dir / "sessions" / record["session"] / "attempt-1.worker.log").read_text()
    assert "the full output was not saved" in log  # recorded
