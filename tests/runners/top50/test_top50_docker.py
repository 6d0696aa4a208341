"""Placement `docker`: the `docker run` of the benchmark's `make run`, with the session's
environment file. No Docker engine here: a `docker` on PATH that records what it was asked
stands in for the client, so the argv and the env file the runner builds are checked as they
were handed over; without any `docker`, the session (and `check`) say so in one line."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
import tomli_w
import trio
from support import last_states
from support.mini import PRICES, make_target, pred_on_path, run_campaign
from support.scripted_upstream import ScriptedUpstream

from benchtui.runners.top50 import Top50Runner, docker
from benchtui.runners.top50.profile import Top50Profile

REAL_KEY = "sk-real-scripted-key-docker-91b3"
FAKE_DOCKER = """#!/bin/sh
# records its argv (one JSON line) and, for `run`, the env file it was given; image "hang" sleeps
python3 - "$@" <<'PY' >> "{log}"
import json, sys
args = sys.argv[1:]
rec = {{"argv": args}}
if args and args[0] == "run":
    rec["env_file"] = open(args[args.index("--env-file") + 1]).read()
print(json.dumps(rec))
PY
case " $* " in *" run "*" hang "*|*" run "*" hang") exec sleep 600;; esac
"""


def write_campaign(
    tmp_path: Path, api_base: str, image: str = "problem-reductions-runner:v0.6.0", **runner
) -> Path:
    doc = {
        "name": "top50-docker",
        "runner": "top50",
        "sessions_per_model": 1,
        "budget": {"total_usd": 5.0},
        "runners": {"top50": {"kind": "top50", "placement": "docker", "image": image, **runner}},
        "models": [
            {
                "name": "openai/scripted-a",
                **PRICES,
                "max_output_tokens": 8192,
                "api_base": api_base,
                "api_key_env": "SCRIPTED_API_KEY",
            }
        ],  # fmt: skip
        "environment": {"path": str(make_target(tmp_path)), "tools": ["pred"]},
    }
    path = tmp_path / "campaign.toml"
    path.write_text(tomli_w.dumps(doc))
    return path


@pytest.fixture
def fake_docker(tmp_path, monkeypatch):
    pred_on_path(tmp_path, monkeypatch)
    monkeypatch.setenv("SCRIPTED_API_KEY", REAL_KEY)
    log = tmp_path / "docker.jsonl"
    client = tmp_path / "docker-bin" / "docker"
    client.parent.mkdir()
    client.write_text(FAKE_DOCKER.format(log=log))
    client.chmod(client.stat().st_mode | stat.S_IXUSR)
    return client, log


@pytest.mark.trio
async def test_the_docker_run_is_make_runs_with_the_sessions_env_file_and_no_real_key(tmp_path, fake_docker):
    client, log = fake_docker
    with ScriptedUpstream(lambda call: None) as up:  # type: ignore[arg-type, return-value]
        path = write_campaign(tmp_path, up.url, docker=str(client))
        with trio.fail_after(60):
            prep, _ = await run_campaign(path, tmp_path / "state")
    (record,) = last_states(prep.run_dir).values()
    # The client exited without the container writing anything: the file, not the exit code, decides.
    assert record["state"] == "error" and "without a submission.json" in record["reason"], record
    (ran,) = [json.loads(line) for line in log.read_text().splitlines()]
    argv = ran["argv"]
    name = argv[argv.index("--name") + 1]
    out = argv[argv.index("-v") + 1]
    assert argv == [
        "run", "--rm", "--name", name, "--network", "host", "--env-file", argv[7],
        "-e", "OUTPUT=/out/submission.json", "-v", out, "problem-reductions-runner:v0.6.0",
    ]  # fmt: skip
    assert name.startswith("benchtui-top50-") and "scripted" not in name and out.endswith(":/out")
    env = dict(line.split("=", 1) for line in ran["env_file"].splitlines())
    assert env["MODEL_NAME"] == "openai/scripted-a"
    assert env["API_BASE"].startswith("http://127.0.0.1:") and env["API_BASE"].endswith("/v1")
    assert env["API_KEY"].startswith("benchtui-") and REAL_KEY not in ran["env_file"]
    assert env["LITELLM_LOCAL_MODEL_COST_MAP"] == "True" and env["MSWEA_COST_TRACKING"] == "ignore_errors"
    assert not Path(argv[7]).exists()  # the env file (a live token) went with the session's stage


@pytest.mark.trio
async def test_a_container_past_the_watchdog_is_killed_by_name(tmp_path, fake_docker):
    client, log = fake_docker
    with ScriptedUpstream(lambda call: None) as up:  # type: ignore[arg-type, return-value]
        path = write_campaign(tmp_path, up.url, image="hang", docker=str(client), wall_time_s=2)
        with trio.fail_after(60):
            prep, _ = await run_campaign(path, tmp_path / "state")
    (record,) = last_states(prep.run_dir).values()
    assert (record["ending"]["name"], record["retryable"]) == ("wall_time", True)
    run, kill = [json.loads(line)["argv"] for line in log.read_text().splitlines()]
    assert kill == ["kill", run[run.index("--name") + 1]]


def test_without_docker_the_check_says_so_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    profile = Top50Profile(kind="top50", placement="docker")
    (check,) = Top50Runner.preflight(profile, tasks=None, full=False)
    assert check.problem == docker.missing("docker")
    assert "Docker is missing" in check.problem and "\n" not in check.problem


def test_an_env_file_refuses_a_value_it_cannot_carry():
    with pytest.raises(ValueError, match="--env-file"):
        docker.env_file_text({"MODEL_NAME": "a\nAPI_BASE=http://elsewhere"})


def test_the_profiles_wall_time_is_its_own_watchdog_not_the_engines():
    profile = Top50Profile(kind="top50", placement="checkout", benchmark="/x", wall_time_s=30)
    assert profile.wall_time_s is None and profile.run_wall_time_s == 30  # the engine's would end it final
    again = Top50Profile.model_validate(profile.model_dump())
    assert again == profile
    with pytest.raises(ValueError, match="needs `benchmark`"):
        Top50Profile(kind="top50", placement="checkout")
