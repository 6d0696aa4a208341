"""Runner kinds: built-in names, entry points of third-party packages, dotted paths."""

from __future__ import annotations

from importlib.metadata import EntryPoint

import pytest

from benchtui.core import registry
from benchtui.runners.fake import FakeRunner


def test_builtin_and_dotted_kinds():
    assert registry.runner_class("fake") is FakeRunner
    assert registry.runner_class("benchtui.runners.fake:FakeRunner") is FakeRunner


def test_unknown_kind_names_the_installed_ones():
    with pytest.raises(
        registry.UnknownRunner, match=r"unknown runner kind 'nope' \(installed: .*fake.*mini-swe-agent"
    ):
        registry.runner_class("nope")


def test_third_party_runners_come_from_the_entry_point_group(monkeypatch):
    ep = EntryPoint(
        name="thirdparty", value="benchtui.runners.fake:FakeRunner", group=registry.ENTRY_POINT_GROUP
    )

    def entry_points(*, group, name=None):
        assert group == registry.ENTRY_POINT_GROUP
        return [e for e in [ep] if name in (None, e.name)]

    monkeypatch.setattr(registry, "entry_points", entry_points)
    assert "thirdparty" in registry.available()
    assert registry.runner_class("thirdparty") is FakeRunner


def test_choosing_the_fake_runner_imports_nothing_heavy():
    import subprocess
    import sys

    code = (
        "import sys; from benchtui.core import registry; registry.runner_class('fake'); "
        "registry.validate_profile({'kind': 'mini-swe-agent'}); "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'litellm', 'minisweagent', 'textual'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
