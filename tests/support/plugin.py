"""The third-party target of tests/fixtures/plugin_target, installed as a distribution.

`install` lays it out in a folder as an installer does (its package, and a
`<name>-<version>.dist-info` holding METADATA and the entry points its pyproject declares), so
`importlib.metadata` finds its `benchtui.targets` entry points on that folder once it is on
`sys.path` (this process) or PYTHONPATH (a `benchtui` subprocess). No build backend is needed,
and the test venv is left as it was.
"""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

from support import ROOT

FIXTURE = ROOT / "tests" / "fixtures" / "plugin_target"


def install(into: Path, fixture: Path = FIXTURE) -> Path:
    project = tomllib.loads((fixture / "pyproject.toml").read_text())["project"]
    name, version = project["name"], project["version"]
    into.mkdir(parents=True, exist_ok=True)
    for package in (fixture / "pyproject.toml").parent.iterdir():
        if (package / "__init__.py").is_file():
            shutil.copytree(package, into / package.name, ignore=shutil.ignore_patterns("__pycache__"))
    info = into / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    lines = []
    for group, points in project.get("entry-points", {}).items():
        lines += [f"[{group}]", *(f"{key} = {value}" for key, value in points.items()), ""]
    (info / "entry_points.txt").write_text("\n".join(lines))
    (info / "INSTALLER").write_text("benchtui-tests\n")
    return into
