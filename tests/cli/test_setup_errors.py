"""Set-up errors are caught before anything starts: a missing key, an `api_base` nobody listens
on; and when they are not (`--no-preflight`), the circuit breaker stops launching that model.

Real parts: the mini-swe-agent runner with litellm, against 127.0.0.1 ports (a scripted
OpenAI-compatible server, and a port nothing listens on), never a real API.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest
from support import benchtui
from support.mini import pred_on_path, write_campaign
from support.scripted_llm import SUBMIT, Reply, ScriptedLLM

from benchtui.engine.breaker import TRIP_AFTER


def closed_port() -> int:
    """A port on 127.0.0.1 that refuses connections (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(autouse=True)
def _env(tmp_path, monkeypatch):
    pred_on_path(tmp_path, monkeypatch)
    monkeypatch.setenv("SCRIPTED_API_KEY", "sk-scripted")
    monkeypatch.chdir(tmp_path)  # ./.env is read from here: none


def test_a_missing_key_is_exit_2_naming_variable_and_model_before_the_run_dir_is_written(tmp_path):
    with ScriptedLLM([Reply(SUBMIT)]) as llm:
        path = write_campaign(
            tmp_path, llm.url, models=("openai/a", "openai/b"), model={"api_key_env": "NO_SUCH_KEY_23"}
        )
        done = benchtui(path, "--no-ui", "--state-dir", tmp_path / "runs", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    a, b = done.stderr.strip().splitlines()  # every problem, one line each
    assert a == "benchtui: API key of openai/a: NO_SUCH_KEY_23 is not set (export it, or put it in ./.env)"
    assert b == a.replace("openai/a", "openai/b")
    assert not (tmp_path / "runs").exists()  # nothing written


def test_a_start_lists_every_problem_at_once_as_check_does(tmp_path, monkeypatch):
    """No target, no pred, no key, nothing listening: four lines, one per problem, exit 2,
    nothing written; each says what to do (where to get the target, the crate and command that
    install pred, the variable to set, the check to skip)."""
    monkeypatch.delenv("SCRIPTED_API_KEY")
    url = f"http://127.0.0.1:{closed_port()}/v1"
    path = write_campaign(tmp_path, url, runner={"pred": "no-such-pred"})
    path.write_text(path.read_text().replace(str(tmp_path / "target"), str(tmp_path / "gone")))
    done = benchtui(path, "--no-ui", "--state-dir", tmp_path / "runs", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 4 and all(line.startswith("benchtui: ") for line in lines), lines
    target, pred, key, endpoint = lines
    assert f"environment.path {tmp_path / 'gone'}: does not exist" in target
    assert "git clone https://github.com/CodingThrust/problem-reductions" in target and "8df8ac04" in target
    assert (
        "'no-such-pred' not found" in pred and "cargo install --locked --path problemreductions-cli" in pred
    )
    assert "SCRIPTED_API_KEY is not set" in key
    assert url in endpoint and "connection refused" in endpoint and "--no-preflight" in endpoint
    assert "Traceback" not in done.stderr and not (tmp_path / "runs").exists()
    check = benchtui("check", path, cwd=tmp_path)  # the same problems, in check's words
    assert check.returncode == 2
    assert [line.split(": ", 1)[1] for line in check.stderr.strip().splitlines()] == [
        line.split(": ", 1)[1].removesuffix(" (--no-preflight skips this check)") for line in lines
    ]


def test_a_key_in_dotenv_counts_as_set(tmp_path, monkeypatch):
    monkeypatch.delenv("SCRIPTED_API_KEY")
    (tmp_path / ".env").write_text("SCRIPTED_API_KEY=sk-from-dotenv\n")
    with ScriptedLLM([Reply(SUBMIT)]) as llm:
        path = write_campaign(tmp_path, llm.url)
        done = benchtui("check", path, cwd=tmp_path)
    assert "SCRIPTED_API_KEY is set" in done.stdout, done.stdout + done.stderr


def test_check_reports_a_missing_key_and_a_refused_api_base_as_problems(tmp_path, monkeypatch):
    monkeypatch.delenv("SCRIPTED_API_KEY")
    url = f"http://127.0.0.1:{closed_port()}/v1"
    path = write_campaign(tmp_path, url)
    done = benchtui("check", path, cwd=tmp_path)
    assert done.returncode == 2
    problems = [line for line in done.stdout.splitlines() if "PROBLEM" in line]
    assert any("API key of openai/scripted-a" in p and "SCRIPTED_API_KEY is not set" in p for p in problems)
    assert any(url in p and "connection refused" in p for p in problems), done.stdout


def test_a_refused_api_base_is_exit_2_naming_the_url_and_no_preflight_skips_it(tmp_path):
    url = f"http://127.0.0.1:{closed_port()}/v1"
    path = write_campaign(tmp_path, url, sessions_per_model=TRIP_AFTER + 3, parallelism=1)
    done = benchtui(path, "--no-ui", "--state-dir", tmp_path / "runs", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert url in line and "connection refused" in line and "--no-preflight" in line
    assert not (tmp_path / "runs").exists()

    # Skipped: the sessions meet the refusal for real (litellm), and the breaker stops the model.
    done = benchtui(
        path, "--no-ui", "--no-preflight", "--state-dir", tmp_path / "runs", cwd=tmp_path, timeout=240
    )
    assert done.returncode == 75, done.stdout + done.stderr
    lines = (tmp_path / "runs" / "mini" / "sessions.jsonl").read_text().splitlines()
    ends = [r for r in map(json.loads, lines[1:]) if r.get("state") not in ("running", None)]
    assert len(ends) == TRIP_AFTER and all(r["state"] == "error" and r["retryable"] for r in ends)
    said = [line for line in done.stdout.splitlines() if "in a row" in line]
    assert said and "openai/scripted-a" in said[0] and url in said[0] and "connection refused" in said[0]
    assert "3 not launched" in done.stdout and "`benchtui --resume" in done.stdout


def test_a_model_whose_provider_answers_is_not_held_back(tmp_path):
    # The same campaign against a server that answers: the probe passes, sessions run.
    with ScriptedLLM([Reply(SUBMIT)] * 4) as llm:
        path = write_campaign(tmp_path, llm.url)
        done = benchtui(path, "--no-ui", "--state-dir", tmp_path / "runs", cwd=tmp_path, timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr


MEASURED = (
    "import atexit, sys\n"
    "atexit.register(lambda: print('read', open('/proc/self/io').read().split()[1], file=sys.stderr))\n"
    "from benchtui.cli.main import main\n"
    "sys.exit(main())\n"
)
"""`benchtui ARGS...`, then on stderr's last line the bytes the process read in all (rchar)."""


def sparse_gib(path):
    with open(path, "wb") as f:
        f.truncate(1 << 30)  # 1 GiB that costs nothing on disk


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (sparse_gib, "too large (1,073,741,824 bytes, at most 1,048,576)"),
        (os.mkfifo, "not a regular file (a FIFO)"),
        (os.mkdir, "not a regular file (a folder)"),
    ],
    ids=["sparse 1 GiB", "FIFO", "folder"],
)
def test_a_dotenv_that_is_huge_a_fifo_or_a_folder_is_refused_in_one_line_unread(tmp_path, make, says):
    # Before: python-dotenv read a 1 GiB sparse .env whole (a minute, gigabytes of memory), would
    # block on a FIFO forever, and a folder was silently no .env at all.
    make(tmp_path / ".env")
    with ScriptedLLM([Reply(SUBMIT)]) as llm:
        path = write_campaign(tmp_path, llm.url)
        done = subprocess.run(
            [sys.executable, "-c", MEASURED, str(path), "--no-ui", "--state-dir", str(tmp_path / "runs")],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
    *lines, read = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert lines[0].startswith(f"benchtui: {tmp_path / '.env'}: ") and says in lines[0], lines[0]
    assert int(read.split()[1]) < 256 << 20  # the interpreter and its modules, never the 1 GiB
    assert not (tmp_path / "runs").exists()
