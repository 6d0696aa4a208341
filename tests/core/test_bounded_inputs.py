"""Every file benchtui reads at start-up is bounded (issue 33, item 4): `.env`, prompt templates,
an agent's `#!` line, the target's files and tools as they are fingerprinted. A file that is too
large, a FIFO, a device or a folder is one line naming it, and is never read (the bytes this
process read are counted by the kernel: /proc/self/io)."""

from __future__ import annotations

import hashlib
import os
import tracemalloc
from pathlib import Path

import pytest
from pydantic import ValidationError

from benchtui.core import inputs, workspace
from benchtui.core.errors import BadInput
from benchtui.runners.command.preflight import interpreter
from benchtui.runners.command.profile import CommandProfile
from benchtui.runners.kit import secrets
from benchtui.runners.mini.profile import load_templates


def bytes_read() -> int:
    """What this process has read so far, by any means (the kernel's count: rchar)."""
    return int(Path("/proc/self/io").read_text().split()[1])


def sparse(path: Path, size: int = 1 << 30) -> Path:
    with open(path, "wb") as f:
        f.truncate(size)
    return path


HOSTILE = {
    "sparse 1 GiB": (sparse, "too large (1,073,741,824 bytes, at most 1,048,576)"),
    "FIFO": (os.mkfifo, "not a regular file (a FIFO)"),  # an open that waits for a writer: forever
    "folder": (os.mkdir, "not a regular file (a folder)"),
}


@pytest.mark.parametrize("case", HOSTILE, ids=list(HOSTILE))
def test_a_hostile_dotenv_is_one_line_naming_it_and_never_read(tmp_path, case):
    make, says = HOSTILE[case]
    make(tmp_path / ".env")
    before = bytes_read()
    with pytest.raises(BadInput) as refused:
        secrets.collect(["SCRIPTED_API_KEY"], tmp_path / ".env")
    assert bytes_read() - before < 1 << 20  # python-dotenv read the whole GiB before
    message = str(refused.value)
    assert message.startswith(f"{tmp_path / '.env'}: the .env file ") and says in message
    assert "\n" not in message


def test_a_dotenv_of_too_many_lines_is_refused_and_a_plain_one_is_read(tmp_path):
    dotenv = tmp_path / ".env"
    dotenv.write_text("\n" * inputs.DOTENV_MAX_LINES)
    with pytest.raises(BadInput, match="has 10,001 lines"):
        inputs.read_dotenv(dotenv)
    dotenv.write_text("# keys\nOPENAI_API_KEY=sk-abc\nexport OTHER_TOKEN='t 1'\nEMPTY\n")
    assert inputs.read_dotenv(dotenv) == {"OPENAI_API_KEY": "sk-abc", "OTHER_TOKEN": "t 1"}
    only_environment = {k: v for k, v in os.environ.items() if v and secrets.is_secret(k)}
    assert secrets.collect([], tmp_path / "none") == only_environment  # no .env: nothing from one


@pytest.mark.parametrize("case", HOSTILE, ids=list(HOSTILE))
def test_a_hostile_prompt_template_is_one_line_naming_it(tmp_path, case):
    make, says = HOSTILE[case]
    make(tmp_path / "prompt.md")
    before = bytes_read()
    with pytest.raises(ValidationError) as refused:
        CommandProfile(
            command=["x"], environment="local", unsandboxed=True, prompt_template=tmp_path / "prompt.md"
        )
    assert bytes_read() - before < 1 << 20
    assert f"prompt_template {tmp_path / 'prompt.md'}: the prompt template" in str(refused.value)
    assert says in str(refused.value)


@pytest.mark.parametrize("case", HOSTILE, ids=list(HOSTILE))
def test_hostile_mini_templates_are_one_line_naming_them(tmp_path, case):
    make, says = HOSTILE[case]
    make(tmp_path / "templates.yaml")
    before = bytes_read()
    with pytest.raises(ValueError, match="templates .*templates.yaml: the templates file") as refused:
        load_templates(tmp_path / "templates.yaml")
    assert bytes_read() - before < 1 << 20 and says in str(refused.value)


def test_an_agent_named_by_a_fifo_or_a_huge_file_gives_its_interpreter_without_reading_it(tmp_path):
    os.mkfifo(tmp_path / "fifo-agent")
    assert interpreter(tmp_path / "fifo-agent") == ""  # before: read_bytes() blocked for a writer
    huge = sparse(tmp_path / "huge-agent", 256 << 20)
    with open(huge, "r+b") as f:
        f.write(b"#!/bin/sh\n")
    before = bytes_read()
    assert interpreter(huge) == "/bin/sh"
    assert bytes_read() - before < 1 << 20  # before: all 256 MiB, for its first 256 bytes


def test_a_large_file_in_a_plain_target_is_hashed_a_piece_at_a_time(tmp_path):
    target = tmp_path / "target"
    target.mkdir()
    (target / "small.txt").write_text("x")
    sparse(target / "data.bin", 64 << 20)
    tracemalloc.start()
    try:
        digest = workspace.content_hash(target)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20  # before: the whole 64 MiB as one bytes object (10 GB for a 10 GB file)
    expected = hashlib.sha256()
    for rel, data in (("data.bin", bytes(64 << 20)), ("small.txt", b"x")):
        expected.update(rel.encode() + b"\0" + data + b"\0")
    assert digest == expected.hexdigest()[:16]


def test_a_tool_that_is_a_fifo_is_not_hashed_nor_waited_for(tmp_path, monkeypatch):
    os.mkfifo(tmp_path / "pred")
    os.chmod(tmp_path / "pred", 0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert workspace.binary_digest("pred") is None  # before: open() waited for a writer
