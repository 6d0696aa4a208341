"""The protocol's campaign keys (`free`, `keep_hunting`): validated at load, part of the identity
when set, and absent from it when not (runs made before they existed still resume)."""

from __future__ import annotations

import pytest
from support import benchtui, write_campaign

from benchtui.engine import campaign as campaign_file
from benchtui.engine.campaign import identity_digest

LIMITS = '[budget.per_session]\nsubmits = 2\n[budget.per_session.tools]\npred = 24\n"pred solve" = 10\n'


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        ('free = ["git status"]', "git is not a counted tool"),
        ('free = ["pred; rm -rf /"]', "a command name and words"),
        ('free = "pred --help"', "free"),
        ("keep_hunting = 1", "keep_hunting"),
    ],
)
def test_a_bad_protocol_key_is_one_line_exit_2(tmp_path, bad, says):
    write_campaign(tmp_path, extra_runners=LIMITS.replace("submits = 2\n", f"submits = 2\n{bad}\n"))
    done = benchtui("t.toml", "--no-ui", cwd=tmp_path)
    assert done.returncode == 2 and says in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert not (tmp_path / "runs").exists()


def test_protocol_keys_are_identity_only_when_set(tmp_path):
    base = campaign_file.load(write_campaign(tmp_path, extra_runners=LIMITS))
    digest = identity_digest(base.identity_parts("fp"))["budget"]
    explicit = LIMITS.replace("submits = 2\n", "submits = 2\nfree = []\nkeep_hunting = false\n")
    same = campaign_file.load(write_campaign(tmp_path, extra_runners=explicit))
    assert identity_digest(same.identity_parts("fp"))["budget"] == digest  # the defaults: as before
    free = LIMITS.replace("submits = 2\n", 'submits = 2\nfree = ["pred --help"]\n')
    changed = campaign_file.load(write_campaign(tmp_path, extra_runners=free))
    assert identity_digest(changed.identity_parts("fp"))["budget"] != digest
    assert changed.logical_limits.free == ("pred --help",)
    hunting = LIMITS.replace("submits = 2\n", "submits = 2\nkeep_hunting = true\n")
    keep = campaign_file.load(write_campaign(tmp_path, extra_runners=hunting))
    assert keep.logical_limits.keep_hunting and identity_digest(keep.identity_parts("fp"))["budget"] != digest
