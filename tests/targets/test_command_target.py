"""The `command` target's verdicts from a real checker program, and hostile checkers held to their
bounds: in the tool gate's one-shot sandbox (bubblewrap) and on the host (an unsandboxed runner's
sessions). Exit 0 confirms, 1 rejects, anything else — another status, a signal, a timeout, a bound
hit, a checker that cannot start — is inconclusive, never a bug; nothing of a checker outlives its
verdict; in the sandbox it reads nothing of the machine but its own folder, less secrets and run
dirs."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
import trio
from support import write_campaign
from support.checker import target_table, write_checker
from support.mini import run_campaign
from support.processes import cgroup_possible, pids_matching
from support.real_parts import require_tools

from benchtui.core import registry
from benchtui.core.target import TargetTools, Verdict
from benchtui.runners.kit.oneshot import OneShot
from benchtui.targets.command import CommandTarget


@pytest.fixture(params=["bubblewrap", "host"])
def where(request):
    if request.param == "bubblewrap":
        require_tools("bwrap")
    return request.param


def tools(where: str) -> TargetTools:
    return TargetTools(sandbox=OneShot(sandboxed=where == "bubblewrap"))


def checker(folder: Path, **table: object) -> CommandTarget:
    write_checker(folder)
    profile = registry.validate_target({**target_table(**table), "workdir": str(folder)})
    target = registry.create_target(profile)
    assert isinstance(target, CommandTarget)
    return target


async def verdict_on(target: CommandTarget, where: str, **cert: object) -> Verdict:
    with trio.fail_after(120):  # every bound below is hit long before
        return await target.verify({"rule": "r1", **cert}, tools(where))


async def gone(marker: str) -> bool:
    for _ in range(100):
        if not pids_matching(marker):
            return True
        await trio.sleep(0.05)
    return False


@pytest.mark.trio
@pytest.mark.parametrize(
    ("claim", "status", "cause", "reason"),
    [
        ("bug", "accepted", "violation", "confirmed: r1 is buggy"),
        ("nobug", "rejected", "no_violation", "r1 holds on this instance"),
        (
            "crash",
            "inconclusive",
            "tool_error",
            "inconclusive: the checker exited 3: the checker tripped over it",
        ),
        ("what", "inconclusive", "tool_error", "inconclusive: the checker exited 2"),
    ],
)
async def test_its_exit_status_is_the_verdict(tmp_path, where, claim, status, cause, reason):
    verdict = await verdict_on(checker(tmp_path), where, claim=claim)
    assert (verdict.status, verdict.cause, verdict.reason) == (status, cause, reason)
    assert verdict.verifier.startswith("benchtui.targets.command") and verdict.judged_by == "verifier"
    assert verdict.evidence["exit"] == {"bug": 0, "nobug": 1, "crash": 3, "what": 2}[claim]


@pytest.mark.trio
async def test_a_checker_that_never_returns_times_out_and_its_whole_tree_is_killed(tmp_path, where):
    marker = f"1000.{uuid.uuid4().int % 10**8}"
    verdict = await verdict_on(checker(tmp_path, timeout_s=2), where, claim="slow", marker=marker)
    assert (verdict.status, verdict.cause) == ("inconclusive", "timeout")
    assert verdict.reason == "inconclusive: the checker took longer than 2 s"
    assert await gone(f"sleep {marker}")


@pytest.mark.trio
async def test_a_checker_printing_for_ever_is_stopped_at_its_output_bound(tmp_path, where):
    target = checker(tmp_path, timeout_s=3600, output_bytes=100_000)
    verdict = await verdict_on(target, where, claim="chatty")
    assert (verdict.status, verdict.cause) == ("inconclusive", "tool_error")
    assert verdict.reason == "inconclusive: the checker printed more than 100,000 bytes"
    assert verdict.evidence["stopped"] == "output"


@pytest.mark.trio
async def test_a_fork_bomb_is_held_to_its_processes_and_inconclusive(tmp_path, where):
    if not cgroup_possible():
        pytest.skip("no pids cgroup can be made here (not root, or cgroup v2 without delegation)")
    marker = f"1000.{uuid.uuid4().int % 10**8}"
    target = checker(tmp_path, timeout_s=3, max_processes=16)
    async with trio.open_nursery() as nursery:
        seen: list[int] = []

        async def count() -> None:
            while True:
                seen.append(len(pids_matching(f"sleep {marker}")))
                await trio.sleep(0.05)

        nursery.start_soon(count)
        verdict = await verdict_on(target, where, claim="bomb", marker=marker)
        nursery.cancel_scope.cancel()
    assert verdict.status == "inconclusive" and not verdict.accepted
    assert 0 < max(seen) <= 16, seen
    assert await gone(f"sleep {marker}")


@pytest.mark.trio
async def test_in_the_sandbox_a_checker_reads_nothing_but_its_own_folder(tmp_path):
    require_tools("bwrap")
    # The campaign's folder is the checker's (its default): a real run dir in runs/ beside it
    # (its ledger, journal, another session's copy), the user's .env, keys in a subfolder.
    path = write_campaign(tmp_path, sessions=1, models=("fake/model-a",))
    with trio.fail_after(120):
        prep, _ = await run_campaign(path, tmp_path / "runs")
    copy = prep.run_dir / "sessions" / "fake_model-b-0000" / "workdir"
    copy.mkdir(parents=True)
    (copy / "found.json").write_text('{"another session": "its copy"}')
    (tmp_path / ".env").write_text("OPENAI_API_KEY=sk-from-dotenv\n")
    (tmp_path / "keys" / ".ssh").mkdir(parents=True)
    (tmp_path / "keys" / ".ssh" / "id_ed25519").write_text("a key\n")
    (tmp_path / "keys" / "deploy.pem").write_text("a key\n")
    (tmp_path / "notes.txt").write_text("the maintainer's notes\n")
    (tmp_path / "keys" / ".envrc").symlink_to(tmp_path / "notes.txt")  # a secret's name, elsewhere
    paths = [
        str(tmp_path / ".env"),
        ".env",
        "keys/**",
        "notes.txt",
        "runs/**",
        str(prep.run_dir / "ledger.toml"),
        str(prep.run_dir / "sessions.jsonl"),
        str(copy / "found.json"),
        "/root/**",
        "/home/**",
        f"/proc/{os.getpid()}/environ",  # the engine's environment (its keys)
        "check.py",  # its own folder: readable
    ]
    verdict = await verdict_on(checker(tmp_path), "bubblewrap", claim="peek", paths=paths)
    assert verdict.reason == "read: check.py", verdict.reason
    assert (tmp_path / ".env").read_text() and (prep.run_dir / "ledger.toml").is_file()  # untouched


@pytest.mark.trio
async def test_a_checker_that_cannot_start_in_the_sandbox_is_inconclusive_never_rejected(tmp_path, where):
    # its interpreter is not there: bwrap's execvp fails with exit 1, which is not the checker's 1
    script = tmp_path / "check.sh"
    script.write_text("#!/opt/no-such-interpreter\nexit 0\n")
    script.chmod(0o755)
    target = checker(tmp_path, verify=["./check.sh", "{certificate}"])
    verdict = await verdict_on(target, where, claim="bug")
    assert verdict.status == "inconclusive" and "no-such-interpreter" not in verdict.cause, verdict
    if where == "bubblewrap":
        assert verdict.cause == "tool_missing" and "could not start" in verdict.reason, verdict


@pytest.mark.trio
@pytest.mark.parametrize("program", ["check.sh", "./check.sh", "bin/../check.sh"])
async def test_its_program_is_found_in_its_own_folder(tmp_path, where, program):
    script = tmp_path / "check.sh"
    script.write_text('#!/bin/sh\necho "checked $1"\nexit 0\n')
    script.chmod(0o755)
    (tmp_path / "bin").mkdir()
    target = checker(tmp_path, verify=[program, "{certificate}"])
    verdict = await verdict_on(target, where, claim="bug")
    assert verdict.accepted and verdict.reason.startswith("checked /"), verdict


@pytest.mark.trio
async def test_a_program_that_is_nowhere_is_a_missing_tool(tmp_path, where):
    target = checker(tmp_path, verify=["no-such-checker", "{certificate}"])
    verdict = await verdict_on(target, where, claim="bug")
    assert (verdict.status, verdict.cause) == ("inconclusive", "tool_missing"), verdict
    problems = [c.problem for c in target.preflight(tools(where), tasks=None, full=True)]
    assert problems == [
        f"'no-such-checker' not found or not executable (in {tmp_path} or on /usr/local/bin:/usr/bin:/bin)"
    ]


def test_its_version_runs_as_it_does_and_joins_the_fingerprint(tmp_path, where):
    target = checker(tmp_path)
    assert target.fingerprint(tools(where)) == "checker:checker_1.0"
    checks = target.preflight(tools(where), tasks=None, full=True)
    assert [(c.what, c.ok) for c in checks] == [("checker", True), ("checker version", True)]
    assert checks[0].detail.endswith(f"/python3 check.py {{certificate}} in {tmp_path}")
    assert checks[1].detail == "checker 1.0"
    (tmp_path / "version.txt").write_text("checker 2.0\n")
    assert target.fingerprint(tools(where)) == "checker:checker_2.0"
    (tmp_path / "version.txt").unlink()  # its version command fails: a problem, and a fingerprint of "?"
    assert target.fingerprint(tools(where)) == "checker:?"
    assert target.preflight(tools(where), tasks=None, full=True)[1].problem.startswith(
        "python3 check.py --version exited 1"
    )
