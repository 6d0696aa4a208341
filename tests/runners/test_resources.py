"""A session's pids cgroup: named so that a later engine's sweep finds its owner, and swept only
once that owner is gone."""

from __future__ import annotations

import os
import subprocess

import pytest

from benchtui.runners.command.local import cgroup_name
from benchtui.runners.kit import resources


def test_an_agents_cgroup_ends_in_its_owners_pid():
    # The sweep reads the owner from the name's last part: an attempt number there (1, 2, …)
    # names pid 1 or another long-lived process, and a dead engine's group is never swept.
    name = cgroup_name()
    assert name.startswith("benchtui-agent-") and name.rsplit("-", 1)[-1] == str(os.getpid())
    # Blind: the group's name (in /proc/self/cgroup inside the sandbox) names no model or session,
    # and two sessions' groups differ.
    assert cgroup_name() != name


def test_the_sweep_removes_the_groups_of_gone_owners_and_keeps_the_others():
    live = resources.new_pids_cgroup(10, cgroup_name())
    if live is None:
        pytest.skip("no pids cgroup can be made here (not root, or cgroup v2 without delegation)")
    child = subprocess.Popen(["true"])
    child.wait()
    gone_pid = child.pid  # reaped: no process has it (until the kernel hands it out again)
    stale = live.parent / f"benchtui-agent-0123456789ab-{gone_pid}"
    stale.mkdir()
    again = None
    try:
        again = resources.new_pids_cgroup(10, cgroup_name())  # each new group sweeps first
        assert again is not None
        assert live.exists() and not stale.exists()
    finally:
        for group in (live, stale, *([again] if again else [])):
            resources.remove_cgroup(str(group), wait_s=0)
