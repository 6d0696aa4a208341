"""Run-dir files edited, replaced or linked between runs: `--resume` refuses with one line and
exit 2 (never a traceback, a hang on a FIFO, or writes through a link), and changes nothing."""

from __future__ import annotations

import json
import os
import shutil
import tomllib
from pathlib import Path

import pytest
from support import benchtui, write_campaign
from support.hostile import assert_one_line, run_cli


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    base = tmp_path_factory.mktemp("finished")
    write_campaign(base)
    assert benchtui("t.toml", "--no-ui", cwd=base).returncode == 0
    return base


def _replace(path, what) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif os.path.lexists(path):
        path.unlink()
    if what == "dir":
        path.mkdir()
    elif what == "fifo":
        os.mkfifo(path)
    elif isinstance(what, bytes):
        path.write_bytes(what)
    else:
        path.symlink_to(what)


def _edit_journal(field, value):
    def edit(run):
        lines = (run / "sessions.jsonl").read_text().splitlines()
        last = json.loads(lines[-1])
        last[field] = value
        lines[-1] = json.dumps(last)
        (run / "sessions.jsonl").write_text("\n".join(lines) + "\n")

    return edit


def _edit_ledger(old, new):
    def edit(run):
        text = (run / "ledger.toml").read_text()
        assert old in text
        (run / "ledger.toml").write_text(text.replace(old, new, 1) if old else text + new)

    return edit


IN_FLIGHT = (
    '\n[running."fake_model-a-0000"]\nmodel = "fake/model-a"\nindex = 0\nattempt = 1\nrunner = "fake"\n'
    "reservation_usd = 0.03\nspent_usd = 0.0\nheld_usd = {}\n"
)

TAMPERING = {
    "identity.json a list": (lambda r: _replace(r / "identity.json", b"[1, 2]"), "identity.json: corrupted"),
    "identity.json nested 100,000 deep": (
        lambda r: _replace(r / "identity.json", b"[" * 100_000),
        "nested too deeply",
    ),
    "identity.json a FIFO": (lambda r: _replace(r / "identity.json", "fifo"), "not a regular file"),
    "ledger.toml a FIFO": (lambda r: _replace(r / "ledger.toml", "fifo"), "not a regular file"),
    "ledger.toml a folder": (lambda r: _replace(r / "ledger.toml", "dir"), "not a regular file"),
    "ledger.toml nested 100,000 deep": (
        lambda r: _replace(r / "ledger.toml", b"a = " + b"[" * 100_000),
        "corrupted ledger",
    ),
    "ledger runner not a string": (_edit_ledger('runner = "fake"', "runner = [1]"), "corrupted ledger"),
    "ledger hold of inf": (_edit_ledger("", IN_FLIGHT.format("inf")), "corrupted ledger"),
    "ledger hold of nan": (_edit_ledger("", IN_FLIGHT.format("nan")), "corrupted ledger"),
    "ledger hold of 1e300": (_edit_ledger("", IN_FLIGHT.format("1e300")), "corrupted ledger"),
    "ledger negative hold": (_edit_ledger("", IN_FLIGHT.format("-1.0")), "corrupted ledger"),
    "ledger NUL then garbage": (
        lambda r: _replace(r / "ledger.toml", b"format = 1\n\0\0\xff\n"),
        "corrupted ledger",
    ),
    "ledger.toml missing": (lambda r: (r / "ledger.toml").unlink(), "missing"),
    "journal a FIFO": (lambda r: _replace(r / "sessions.jsonl", "fifo"), "not a regular file"),
    "journal a link elsewhere": (lambda r: _replace(r / "sessions.jsonl", "/dev/null"), "not a regular file"),
    "journal line nested 100,000 deep": (
        lambda r: (r / "sessions.jsonl").open("a").write("[" * 100_000 + "]" * 100_000 + "\n"),
        "corrupted journal at line",
    ),
    "journal cost of infinity": (_edit_journal("cost_usd", float("inf")), "corrupted journal at line"),
    "journal cost of 1e300": (_edit_journal("cost_usd", 1e300), "corrupted journal at line"),
    "journal cost a string": (_edit_journal("cost_usd", "0.1"), "corrupted journal at line"),
    "journal tokens a string": (_edit_journal("tokens", "many"), "corrupted journal at line"),
    "journal attempt a boolean": (_edit_journal("attempt", True), "corrupted journal at line"),
    ".lock a folder": (lambda r: _replace(r / ".lock", "dir"), ".lock is a directory"),
    "outcomes file a FIFO": (
        lambda r: _replace(next((r / "outcomes").iterdir()), "fifo"),
        "not a regular file",
    ),
    "outcomes file a link": (
        lambda r: _replace(next((r / "outcomes").iterdir()), "/tmp/elsewhere"),
        "not a regular file",
    ),
    "results a file": (lambda r: _replace(r / "results", b"x"), "not a folder"),
    "sessions a link": (lambda r: _replace(r / "sessions", "/tmp"), "not a folder"),
    "a session folder linked to $HOME": (
        lambda r: (
            (r / "sessions").mkdir(exist_ok=True),
            (r / "sessions" / "fake_model-a-0003").symlink_to(Path.home()),
        ),
        "not a session folder",
    ),
}


@pytest.mark.parametrize("case", list(TAMPERING), ids=[c.replace(" ", "_") for c in TAMPERING])
def test_a_tampered_run_dir_is_refused_with_one_line(finished, tmp_path, capsys, case):
    shutil.copytree(finished, tmp_path, dirs_exist_ok=True, symlinks=True)
    run = tmp_path / "runs" / "t"
    tamper, phrase = TAMPERING[case]
    tamper(run)
    before = sorted(p.name for p in run.iterdir())
    assert_one_line(*run_cli(capsys, tmp_path, "t.toml", "--no-ui", "--resume"), phrase)
    assert sorted(p.name for p in run.iterdir()) == before


def _zero_tail(run: Path) -> None:
    data = (run / "ledger.toml").read_bytes()
    (run / "ledger.toml").write_bytes(data[: len(data) // 3] + b"\0" * (len(data) - len(data) // 3))


POWER_CUT = {  # what a power cut leaves of a file replaced by rename and never fsynced
    "empty": lambda r: _replace(r / "ledger.toml", b""),
    "zero-filled": lambda r: _replace(r / "ledger.toml", b"\0" * len((r / "ledger.toml").read_bytes())),
    "zero-filled tail": _zero_tail,
}


@pytest.mark.parametrize("case", list(POWER_CUT), ids=[c.replace(" ", "_") for c in POWER_CUT])
def test_a_ledger_a_power_cut_left_is_rebuilt_from_the_journal(finished, tmp_path, case):
    """ledger.toml is derived from the journal (F7): what a power cut left of it comes back as
    the journal has it, and a note says so in one line."""
    shutil.copytree(finished, tmp_path, dirs_exist_ok=True, symlinks=True)
    run = tmp_path / "runs" / "t"
    before = tomllib.loads((run / "ledger.toml").read_text())
    POWER_CUT[case](run)
    done = benchtui("t.toml", "--no-ui", "--resume", cwd=tmp_path)
    noted = [line for line in done.stdout.splitlines() if "rebuilt from the journal" in line]
    assert done.returncode == 0 and len(noted) == 1, done.stdout + done.stderr
    assert tomllib.loads((run / "ledger.toml").read_text()) == before


@pytest.mark.parametrize("case", list(POWER_CUT), ids=[c.replace(" ", "_") for c in POWER_CUT])
def test_a_ledger_a_power_cut_left_beside_a_journal_of_format_1_is_refused(finished, tmp_path, capsys, case):
    """A journal of format 1 kept its attempts' holds in ledger.toml alone: nothing to rebuild from."""
    shutil.copytree(finished, tmp_path, dirs_exist_ok=True, symlinks=True)
    run = tmp_path / "runs" / "t"
    (run / "sessions.format").write_text("1\n")
    POWER_CUT[case](run)
    assert_one_line(*run_cli(capsys, tmp_path, "t.toml", "--no-ui", "--resume"), "cannot say what it held")


@pytest.mark.parametrize(
    ("latest", "phrase"),
    [(b"\xff\x00\n", "not UTF-8"), (b"../../etc\n", "not a run name"), ("dir", "not a regular file")],
)
def test_a_tampered_latest_run_pointer_is_one_line(finished, tmp_path, capsys, latest, phrase):
    shutil.copytree(finished, tmp_path, dirs_exist_ok=True, symlinks=True)
    _replace(tmp_path / "runs" / ".latest", latest)
    assert_one_line(*run_cli(capsys, tmp_path, "--no-ui", "--resume"), phrase)


def test_a_frozen_campaign_renamed_by_hand_is_refused(finished, tmp_path, capsys):
    shutil.copytree(finished, tmp_path, dirs_exist_ok=True, symlinks=True)
    frozen = tmp_path / "runs" / "t" / "campaign.toml"
    frozen.write_text(frozen.read_text().replace('name = "t"', 'name = "u"'))
    assert_one_line(*run_cli(capsys, tmp_path, "--no-ui", "--resume"), "names the run 'u', not 't'")
    assert (tmp_path / "runs" / ".latest").read_text() == "t\n"  # before: it said u, a run that is not there
