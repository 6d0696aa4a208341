"""A target's programs as one Toolbox, and the legacy `pred = "..."` key of runner profiles: it
loads into `programs`, and the identity spells the program as the runs before `programs` did."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from benchtui.core import registry
from benchtui.core.target import Program, Toolbox, with_brief
from benchtui.engine.campaign.identity import _profile_identity


def test_a_toolbox_finds_each_program_where_the_profile_says_else_on_path(tmp_path):
    tool = tmp_path / "tool"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    declared = (Program("tool", "get it"), Program("sh"), Program("nowhere", "apt install nowhere"))
    box = Toolbox.find(declared, {"tool": str(tool)})
    assert box.found["tool"] == str(tool) and box.found["sh"].endswith("/sh")
    assert box.missing == {"nowhere": "nowhere"} and box.names == {"tool", "sh", "nowhere"}
    assert (
        box.problem
        == "nowhere not found ('nowhere'): apt install nowhere, or set the profile's `programs.nowhere`"
    )
    assert box.first() == ("tool", str(tool), ("--version",))
    assert Toolbox.find(declared[:2], {"tool": str(tool)}).problem == ""


@pytest.mark.parametrize("kind", ["mini-swe-agent", "command"])
def test_the_legacy_pred_key_loads_into_programs_and_keeps_the_identity(kind):
    base = {"kind": kind, **({"command": ["x"]} if kind == "command" else {})}
    legacy = registry.validate_profile({**base, "pred": "/opt/pred"})
    assert legacy.model_dump()["programs"] == {"pred": "/opt/pred"}
    new = registry.validate_profile({**base, "programs": {"pred": "/opt/pred"}})
    assert _profile_identity(legacy) == _profile_identity(new)
    assert _profile_identity(legacy)["pred"] == "/opt/pred" and "programs" not in _profile_identity(legacy)
    # The default, as every run before `programs` had it in its dump: `pred = "pred"`.
    assert _profile_identity(registry.validate_profile(base))["pred"] == "pred"
    other = _profile_identity(registry.validate_profile({**base, "programs": {"tally": "/t"}}))
    assert other["pred"] == "pred" and other["programs"] == {"tally": "/t"}
    with pytest.raises(ValidationError, match="give one"):
        registry.validate_profile({**base, "pred": "/a", "programs": {"pred": "/b"}})
    with pytest.raises(ValidationError):
        registry.validate_profile({"kind": "fake", "pred": "pred"})  # a kind that never had it


def test_a_brief_part_takes_the_marks_indentation():
    text = "a: |\n  [[brief:x.one]] then\n# [[brief:x.two]]\n[[brief:x.none]]end"
    brief = {"x.one": "first\nsecond\n\nthird", "x.two": "c1\nc2"}
    assert with_brief(text, brief) == "a: |\n  first\n  second\n\n  third then\n# c1\n# c2\nend"
    assert with_brief(text, {}, {"x.none": "default"}).endswith("default" + "end")
