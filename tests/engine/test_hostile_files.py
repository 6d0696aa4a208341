"""Hostile files: a campaign file that is not a small UTF-8 regular file, a target that holds a
FIFO; each is one line and exit 2 (or works), never a hang or a traceback."""

from __future__ import annotations

import os
import threading

import pytest
from support import campaign_toml, write_campaign
from support.hostile import assert_one_line, run_cli

from benchtui.core import workspace


def _fifo(path) -> None:
    os.mkfifo(path)


CAMPAIGN_FILES = {
    "a directory": (lambda p: p.mkdir(), "not a regular file"),
    "a FIFO": (_fifo, "not a regular file"),  # reading it would block forever
    "huge": (lambda p: os.truncate(p.write_bytes(b"#") and p, 64 * 1024 * 1024), "too large"),
    "not UTF-8": (lambda p: p.write_bytes(b'name = "\xff"\n'), "not UTF-8"),
    "arrays nested 100,000 deep": (
        lambda p: p.write_text("a = " + "[" * 100_000 + "]" * 100_000 + "\n"),
        "nested too deeply",
    ),
    "inline tables nested 100,000 deep": (
        lambda p: p.write_text("a = " + "{b=" * 100_000 + "1" + "}" * 100_000 + "\n"),
        "nested too deeply",
    ),
    "tables nested 40 deep (parses, too deep to use)": (
        lambda p: p.write_text(campaign_toml().replace("[budget]", "[budget]\nx = " + "[" * 40 + "]" * 40)),
        "nested more than 32 deep",
    ),
}


@pytest.mark.parametrize("case", list(CAMPAIGN_FILES), ids=[c.replace(" ", "_") for c in CAMPAIGN_FILES])
def test_a_hostile_campaign_file_is_one_line_exit_2(tmp_path, capsys, case):
    write_campaign(tmp_path)
    make, phrase = CAMPAIGN_FILES[case]
    path = tmp_path / "c.toml"
    make(path)
    assert_one_line(*run_cli(capsys, tmp_path, path.name, "--no-ui"), phrase)
    assert not (tmp_path / "runs").exists()


def test_a_character_device_as_campaign_file_is_refused(tmp_path, capsys):
    assert_one_line(*run_cli(capsys, tmp_path, "/dev/zero", "--no-ui"), "not a regular file")


def test_an_environment_path_that_is_not_a_directory_is_refused(tmp_path, capsys):
    write_campaign(tmp_path, env_path="target/README")
    assert_one_line(*run_cli(capsys, tmp_path, "t.toml", "--no-ui"), "is not a directory")


def test_a_fifo_in_the_target_does_not_hang_the_fingerprint(tmp_path):
    (tmp_path / "a").write_text("x")
    os.mkfifo(tmp_path / "pipe")
    result: list[str] = []
    worker = threading.Thread(target=lambda: result.append(workspace.content_hash(tmp_path)), daemon=True)
    worker.start()
    worker.join(timeout=20)
    if worker.is_alive():  # unblock the reader before failing, so the test process can exit
        os.close(os.open(tmp_path / "pipe", os.O_WRONLY))
        pytest.fail("content_hash blocked reading a FIFO")
    os.unlink(tmp_path / "pipe")
    os.mkfifo(tmp_path / "pipe")
    assert workspace.content_hash(tmp_path) == result[0]  # still a stable fingerprint
