"""The docs site is part of the product: it builds strictly, its generated pages are current, the
campaign reference lists every key `benchtui schema` has, every `benchtui …` command its code
blocks show parses, the README stays a short door into it, and the code's comments cite its
pages instead of documents outside the repository."""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import os
import re
import shlex
import subprocess
import sys
import unicodedata
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from support import ROOT
from support.real_parts import require

DOCS = ROOT / "docs"
README = ROOT / "README.md"
README_MAX_BYTES = 10_000
QUICK_START = "pip install -e . && benchtui campaigns/fair.toml"
"""Only what its command needs: the fake campaign runs on the base install."""
TEST_COMMAND = "pip install -q -e '.[test]' && python -m pytest"


def gen_reference() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_reference", DOCS / "gen_reference.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


# -- the build ----------------------------------------------------------------------------------


def test_mkdocs_build_is_strict_and_clean(tmp_path: Path) -> None:
    """Broken links, missing anchors, pages left out of the nav: each is a warning, and
    `strict: true` makes a warning fail the build."""
    require(
        "mkdocs",
        importlib.util.find_spec("mkdocs") and importlib.util.find_spec("material"),
        "pip install -e '.[docs]'",
    )
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "design" / "invariants" / "index.html").is_file()
    assert (tmp_path / "site" / "screenshots" / "main.svg").is_file()


def test_every_page_is_in_the_nav() -> None:
    nav = (ROOT / "mkdocs.yml").read_text()
    named = set(re.findall(r":\s*([\w/.-]+\.md)\s*$", nav, re.MULTILINE))
    present = {str(p.relative_to(DOCS)) for p in pages()}
    assert present - named == set(), "pages missing from mkdocs.yml's nav"
    assert named - present == set(), "nav entries without a page"


# -- generated pages ----------------------------------------------------------------------------


def test_generated_pages_are_current() -> None:
    done = subprocess.run(
        [sys.executable, str(DOCS / "gen_reference.py"), "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


def test_a_stale_page_is_noticed(tmp_path: Path) -> None:
    """The check above can fail: an edited generated part is replaced, and its markers kept."""
    gen = gen_reference()
    page = "runners/index.md"
    text = (DOCS / page).read_text()
    tampered = text.replace("| `mini-swe-agent` |", "| `mini-swe-agent-renamed` |")
    assert tampered != text
    rendered = gen.render(page, tampered)
    assert rendered == text
    assert gen.render(page, "# Runners\n") != "# Runners\n"  # no markers: the part is appended


def schema() -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "benchtui", "schema"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    parsed: dict[str, Any] = json.loads(done.stdout)
    return parsed


def reference_rows(text: str) -> dict[str, set[str]]:
    """The campaign reference page: keys listed (`| `key` | …`) under each heading."""
    rows: dict[str, set[str]] = {}
    heading = ""
    for line in text.splitlines():
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
            rows.setdefault(heading, set())
        elif m := re.match(r"\| `([^`]+)` \|", line):
            rows.setdefault(heading, set()).add(m.group(1))
    return rows


def _target(node: dict[str, Any]) -> tuple[str | None, str]:
    """The def a property's value is, and how: directly or optionally (""), as the items of a
    list ("list"), or as the values of a table by name ("map")."""
    for branch in [node, *node.get("anyOf", [])]:
        if "$ref" in branch:
            return branch["$ref"].rsplit("/", 1)[-1], ""
        items = branch.get("items", {})
        if branch.get("type") == "array" and "$ref" in items:
            return items["$ref"].rsplit("/", 1)[-1], "list"
        values = branch.get("additionalProperties")
        if branch.get("type") == "object" and isinstance(values, dict) and "$ref" in values:
            return values["$ref"].rsplit("/", 1)[-1], "map"
    return None, ""


def missing_keys(text: str, schema: dict[str, Any]) -> list[str]:
    """Every key of the schema, each under the heading of its table, that the page lacks."""
    rows = reference_rows(text)
    defs = schema["$defs"]
    missing: list[str] = []

    def check(props: dict[str, Any], heading: str, path: str) -> None:
        listed = rows.get(heading, set())
        for key, node in props.items():
            if key not in listed:
                missing.append(f"{path or '(top level)'}: {key}")
            target, shape = _target(node)
            if target:
                name = f"{path}.{key}" if path else key
                heading = {"list": f"`[[{name}]]`", "map": f"`[{name}.<name>]`"}.get(shape, f"`[{name}]`")
                check(defs[target].get("properties", {}), heading, name)

    check(schema["properties"], "The top level", "")
    table = schema["properties"]["runners"]["additionalProperties"]
    use, runners = table["then"], table["else"]
    assert use["required"] == ["use"]  # or a shipped profile, named
    if "Or `use`:" not in text:
        missing.append("runners: use")
    kinds = runners["allOf"]
    assert kinds, "benchtui schema lists no runner kind"
    if "Every profile has `kind`" not in text:
        missing.append("runners: kind")
    for branch in kinds:
        kind = branch["if"]["properties"]["kind"]["const"]
        profile = defs[branch["then"]["$ref"].rsplit("/", 1)[-1]]
        listed = rows.get(f'`kind = "{kind}"`')
        if listed is None:
            missing.append(f"runners: the kind {kind}")
            continue
        missing += [
            f"runners.{kind}: {key}" for key in profile["properties"] if key != "kind" and key not in listed
        ]
    return missing


def test_campaign_reference_lists_every_key_of_benchtui_schema() -> None:
    got = schema()
    text = (DOCS / "reference" / "campaign.md").read_text()
    assert missing_keys(text, got) == []
    # The check can fail: a key dropped from its table, a whole kind dropped, each is named.
    without_row = "\n".join(
        line for line in text.splitlines() if not line.startswith("| `per_session_usd` |")
    )
    assert missing_keys(without_row, got) == ["budget: per_session_usd"]
    without_kind = text.replace('#### `kind = "fake"`', "#### the fake one")
    assert "runners: the kind fake" in missing_keys(without_kind, got)
    nested = text.replace("| `shell_actions` |", "| `shell_action` |", 1)
    assert missing_keys(nested, got) == ["budget.per_session: shell_actions"]


def test_the_runner_table_names_every_installed_kind() -> None:
    from benchtui.core import registry

    text = (DOCS / "runners" / "index.md").read_text()
    for kind in registry.available():
        assert f"| `{kind}` |" in text


# -- commands shown in the docs -----------------------------------------------------------------

PLACEHOLDER = re.compile(r"[\[\]|…]|\.\.\.|^[A-Z][A-Z_.]*(\.toml)?$|^[A-Z_]+$")


def code_lines(text: str) -> list[str]:
    """Lines of fenced (```) and indented (4 spaces after a blank line) code blocks."""
    lines, fenced, indented, previous_blank = [], False, False, True
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            lines.append(line)
            continue
        indented = line.startswith("    ") and (indented or previous_blank)
        if indented:
            lines.append(line)
        previous_blank = not line.strip()
    return lines


def split_shell(line: str) -> list[str]:
    """A line cut at `&&`, `||`, `|` and `;` between words, not inside a synopsis's brackets
    (`[--resume | --fresh]`)."""
    parts, depth, start = [], 0, 0
    for m in re.finditer(r"[\[\]]|\s+(?:&&|\|\||\||;)\s+", line):
        token = m.group(0)
        depth += {"[": 1, "]": -1}.get(token, 0)
        if token.strip() and token not in "[]" and depth == 0:
            parts.append(line[start : m.start()])
            start = m.end()
    return [*parts, line[start:]]


def commands_in(text: str) -> list[str]:
    """Each `benchtui …` command of the code blocks, without prompt, comment, pipe or redirection."""
    found = []
    for line in code_lines(text):
        line = re.sub(r"^\s*\$\s+", "", line.strip())
        line = re.sub(r"\s+#.*$", "", line)
        for part in split_shell(line):
            part = re.sub(r"\s+\d?>\s*\S+", "", part).strip()
            if part.startswith("benchtui ") or part == "benchtui":
                found.append(part)
    return found


def parsers() -> dict[str, argparse.ArgumentParser]:
    from benchtui.cli import main as cli

    found: dict[str, argparse.ArgumentParser] = gen_reference().parsers()
    assert set(found) == {"", *cli.COMMANDS, *cli.RUNS}, "a command builds no parser the docs can check"
    return found


def problem(command: str, parsers: dict[str, argparse.ArgumentParser]) -> str | None:
    """Why `command` (as the docs show it) would not parse, or None."""
    from benchtui.cli import ctl
    from benchtui.core.errors import BenchtuiError

    words = shlex.split(command)[1:]
    name = words[0] if words and words[0] in parsers else ""
    parser, args = parsers[name], words[1:] if name else words
    if any(PLACEHOLDER.search(w) for w in args):  # a synopsis: its options must exist
        known = {o for a in parser._actions for o in a.option_strings}
        unknown = [o for w in args for o in re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", w) if o not in known]
        return f"unknown options {unknown}" if unknown else None
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            parsed = parser.parse_args(args)
    except (SystemExit, BenchtuiError) as exc:
        return f"does not parse: {exc}"
    if name == "ctl":
        rest = parsed.words[1:] if parsed.words[0] not in ctl.COMMANDS else parsed.words
        if not rest or rest[0] not in ctl.COMMANDS:
            return f"no ctl command in {parsed.words}"
        try:
            ctl.request_for(rest[0], rest[1:], parsed.now)
        except BenchtuiError as exc:
            return str(exc)
    campaign = str(getattr(parsed, "campaign", None) or "")
    if campaign.startswith("campaigns/") and not (ROOT / campaign).is_file():
        return f"no such campaign {campaign}"
    return None


def test_every_benchtui_command_in_the_docs_parses() -> None:
    shown = {
        (path.relative_to(ROOT), c) for path in [README, *pages()] for c in commands_in(path.read_text())
    }
    assert len({c for _, c in shown}) >= 20, "the docs show hardly any command: the extraction is broken"
    found = parsers()
    bad = [
        f"{where}: {command}: {why}" for where, command in sorted(shown) if (why := problem(command, found))
    ]
    assert bad == []


def test_help_works_for_every_command_the_docs_show() -> None:
    from benchtui.cli import main as cli
    from benchtui.cli.stopsignals import StopSignals

    names = {
        shlex.split(c)[1] if len(shlex.split(c)) > 1 else ""
        for p in [README, *pages()]
        for c in commands_in(p.read_text())
    }
    for name in sorted(names & set(cli.COMMANDS)) + [""]:
        out = io.StringIO()
        with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exited:
            if name:
                cli.main([name, "--help"])
            else:  # `benchtui --help`, without installing the run's signal handlers in pytest
                cli.main_run(["--help"], StopSignals())
        assert exited.value.code == 0, name
        assert "usage:" in out.getvalue()


def test_the_command_check_can_fail() -> None:
    found = parsers()
    assert problem("benchtui report runs/fair --format json", found) is None
    assert problem("benchtui ctl runs/fair pause", found) is None
    assert problem("benchtui ctl kill fake_model-a-0003", found) is None
    assert problem("benchtui report runs/fair --formats json", found)
    assert problem("benchtui ctl pauze", found)
    assert problem("benchtui ctl parallelism many", found)
    assert problem("benchtui campaigns/no-such.toml", found)
    assert problem("benchtui check CAMPAIGN.toml [--pong]", found)
    assert problem("benchtui --resume --fresh", found)


def test_commands_are_found_in_every_kind_of_block() -> None:
    text = "a\n\n```sh\n$ benchtui ctl status   # latest\nbenchtui schema > s.json && benchtui check x.toml\n```\n\n    benchtui verify FILE [--json]\n"
    assert commands_in(text) == [
        "benchtui ctl status",
        "benchtui schema",
        "benchtui check x.toml",
        "benchtui verify FILE [--json]",
    ]
    assert commands_in("```\nbenchtui [X] [--resume | --fresh] | head\n```") == [
        "benchtui [X] [--resume | --fresh]"
    ]


# -- the README ---------------------------------------------------------------------------------


def test_readme_is_a_short_door_into_the_docs() -> None:
    data = README.read_bytes()
    assert len(data) <= README_MAX_BYTES, f"README.md is {len(data):,} bytes (at most {README_MAX_BYTES:,})"
    text = data.decode()
    assert QUICK_START in text and TEST_COMMAND in text
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [link for link in links if "://" not in link]
    assert any(link.startswith("docs/") for link in local)
    assert [link for link in local if not (ROOT / link).exists()] == []


def test_ci_installs_the_docs_extra_before_the_tests() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"^pip install -q -e '\.\[docs\]'", ci, re.MULTILINE), "CI must build the docs"
    assert re.search(r"^pip install -q -e '\.\[test\]'", ci, re.MULTILINE)
    assert re.search(r"^pip install -q -e '\.\[test\]' && python -m pytest$", ci, re.MULTILINE)


# -- comments cite the docs ---------------------------------------------------------------------


def slug(heading: str) -> str:
    """Python-Markdown's default toc slug (what mkdocs gives a heading without `{#id}`)."""
    text = unicodedata.normalize("NFKD", heading).encode("ascii", "ignore").decode()
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(page: Path) -> set[str]:
    found = set()
    for line in page.read_text().splitlines():
        if m := re.match(r"#+\s+(.*?)\s*(\{#([\w-]+)\})?\s*$", line):
            found.add(m.group(3) or slug(m.group(1)))
    return found


SOURCES = [
    p for p in (ROOT / "benchtui").rglob("*") if p.suffix in (".py", ".yaml", ".md", ".toml") and p.is_file()
]
IDENTITY_FILES = {ROOT / "benchtui" / "runners" / "mini" / "templates.yaml"}
"""Files whose bytes are part of a campaign's identity: editing them makes every existing run's
`--resume` refuse, so a citation in them stays as it is."""


def test_code_cites_the_docs_not_documents_outside_the_repository() -> None:
    bad = []
    for path in SOURCES:
        if path in IDENTITY_FILES:
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"DESIGN(\.md)?\s*§|\.\./shared/DESIGN", line) or re.search(
                r"(?<![#/\w])F[1-7]\b", line
            ):
                bad.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert bad == [], "cite docs/design/invariants.md#fN (or another docs page) instead"


def test_every_docs_page_the_code_cites_exists() -> None:
    cited = {
        (m.group(1), m.group(2))
        for path in SOURCES
        for m in re.finditer(r"docs/([\w/-]+\.md)(?:#([\w-]+))?", path.read_text())
    }
    assert ("design/invariants.md", "f5") in cited
    bad = [
        f"{page}#{anchor}"
        for page, anchor in sorted(cited, key=str)
        if not (DOCS / page).is_file() or (anchor and anchor not in anchors(DOCS / page))
    ]
    assert bad == []
    assert {f"f{n}" for n in range(1, 8)} <= anchors(DOCS / "design" / "invariants.md")


def repo_paths(text: str) -> set[str]:
    """Paths into the repository a page names (`benchtui/…`, `tests/…`, …), not absolute ones."""
    found = re.findall(r"(?<![\w/.-])((?:benchtui|tests|benchmarks|campaigns|\.ci|docs)/[\w./-]*[\w*])", text)
    return {p for p in found if not p.endswith("*")}  # `test_ui*.py`: a family of files


def test_every_path_the_docs_name_exists() -> None:
    """The move to folders-as-layers renamed most modules: a page naming an old path is stale."""
    named = {(page.relative_to(ROOT), p) for page in [README, *pages()] for p in repo_paths(page.read_text())}
    assert len(named) > 50
    assert [f"{page}: {path}" for page, path in sorted(named) if not (ROOT / path).exists()] == []
    assert repo_paths("see benchtui/limits.py, tests/ui/test_ui*.py, /opt/benchtui/shims/pred") == {
        "benchtui/limits.py"
    }


def bare_tags(text: str) -> list[str]:
    """Lines where a `<name>` outside code would be taken for an HTML tag (and vanish)."""
    found, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced or line.startswith("    ") or line.startswith("<!--"):
            continue
        if re.search(r"<[A-Za-z/]", re.sub(r"`[^`]*`", "", line)):
            found.append(line)
    return found


def test_no_placeholder_is_swallowed_as_html() -> None:
    assert [f"{p.relative_to(ROOT)}: {line}" for p in pages() for line in bare_tags(p.read_text())] == []
    assert bare_tags("| `name` | Run dir: <state-dir>/<name>/ |") != []
    assert bare_tags(gen_reference()._cell("Run dir: <state-dir>/`<name>`/")) == []
