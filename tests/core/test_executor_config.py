"""The `[executor]` table (no cluster needed): bad input is one line and exit 2, and where
sessions run is not part of the campaign identity (a run may move to a cluster on resume)."""

from __future__ import annotations

import pytest
from support import assert_one_line_error, benchtui, campaign_toml, write_campaign

from benchtui.engine import campaign as campaign_file
from benchtui.engine.campaign import identity_digest

RAY = '\n[executor]\nkind = "ray"\naddress = "127.0.0.1:6379"\n'
BAD = {
    "ray without address": ('[executor]\nkind = "ray"\n', "needs the cluster's address"),
    "unknown executor kind": ('[executor]\nkind = "k8s"\n', "executor.kind"),
    "unknown executor key": ('[executor]\nkind = "ray"\naddress = "h:1"\nadress = "h:2"\n', "adress"),
    "cores as a resource": (
        '[executor]\nkind = "ray"\naddress = "h:1"\nresources = { CPU = 1 }\n',
        "num_cpus",
    ),
    "a zero resource": ('[executor]\nkind = "ray"\naddress = "h:1"\nresources = { node_b = 0 }\n', "node_b"),
    "address for local": ('[executor]\naddress = "h:1"\n', 'for kind = "ray"'),
    # The fake runner's sessions run in the engine's own process: nothing to send anywhere.
    "a runner that cannot run remotely": (RAY, "cannot run on [executor] kind = 'ray'"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_executor_table_is_one_line_exit_2(tmp_path, case):
    write_campaign(tmp_path)
    table, phrase = BAD[case]
    (tmp_path / "bad.toml").write_text(campaign_toml() + table)
    done = benchtui("bad.toml", "--no-ui", cwd=tmp_path)
    assert_one_line_error(done, phrase)
    assert not (tmp_path / "runs").exists()


def test_the_executor_is_not_part_of_the_identity_and_is_frozen_with_the_run(tmp_path):
    command = (
        '[runners.cli]\nkind = "command"\ncommand = ["true"]\nenvironment = "local"\nunsandboxed = true\n'
    )
    write_campaign(tmp_path)
    local, remote = tmp_path / "local.toml", tmp_path / "remote.toml"
    local.write_text(campaign_toml(extra_runners=command).replace('runner = "fake"', 'runner = "cli"'))
    remote.write_text(local.read_text() + RAY + "resources = { node_b = 0.01 }\nnum_cpus = 0\n")
    a, b = campaign_file.load(local), campaign_file.load(remote)
    assert (a.executor.kind, b.executor.kind) == ("local", "ray")
    assert identity_digest(a.identity_parts("fp")) == identity_digest(b.identity_parts("fp"))
    assert "[executor]" not in a.to_toml()  # the default leaves frozen copies as they were
    frozen = tmp_path / "frozen.toml"
    frozen.write_text(b.to_toml())
    assert campaign_file.load(frozen).executor == b.executor
