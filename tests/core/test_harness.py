"""The suite's own harness (tests/conftest.py): a skip says why, in a Trio test too, so a missing
part is named in every run's summary (pytest-trio drops the reason of a skip raised in a test)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

CONFTEST = Path(__file__).parent.parent / "conftest.py"


def test_a_skip_inside_a_trio_test_keeps_its_reason(tmp_path):
    shutil.copy(CONFTEST, tmp_path / "conftest.py")
    (tmp_path / "test_skips.py").write_text(
        "import pytest, trio\n\n"
        "@pytest.mark.trio\n"
        "async def test_direct():\n"
        "    pytest.skip('the part A is missing')\n\n"
        "@pytest.mark.trio\n"
        "async def test_in_a_child_task():\n"
        "    async def child():\n"
        "        pytest.skip('the part B is missing')\n"
        "    async with trio.open_nursery() as nursery:\n"
        "        nursery.start_soon(child)\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER")}
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:xdist", "-p", "no:cacheprovider", "-q", "-rs",
         "-o", "addopts=", "test_skips.py"],
        cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert "2 skipped" in ran.stdout, ran.stdout + ran.stderr
    assert "test_skips.py:3: the part A is missing" in ran.stdout, ran.stdout
    assert "test_skips.py:7: the part B is missing" in ran.stdout, ran.stdout
    assert "python.py" not in ran.stdout
