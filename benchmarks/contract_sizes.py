"""The target contract's sizes, before and after: the modules that carry it, how many lines of
`benchtui/` say `Any` (per folder), and how long `judge` is (its lines and parameters).

"Before" is a commit (default 7c05ec7, the release before targets became a plugin family), read
with `git show`, never checked out; "now" is the working tree.

    python benchmarks/contract_sizes.py             # 7c05ec7 against the working tree
    python benchmarks/contract_sizes.py --before REV
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODULES = [
    "benchtui/core/target.py",
    "benchtui/core/outcome.py",
    "benchtui/core/registry.py",
    "benchtui/core/bounded.py",
    "benchtui/core/subreaper.py",
    "benchtui/runners/kit/verdict.py",
    "benchtui/runners/kit/oneshot.py",
    "benchtui/targets/none.py",
    "benchtui/targets/command/__init__.py",
    "benchtui/targets/problem_reductions/kind.py",
    "benchtui/engine/campaign.py",
    "benchtui/engine/campaign/*.py",
]
ANY = re.compile(r"\bAny\b")


class Tree:
    """The package's Python files at a commit (`rev`), or in the working tree (None)."""

    def __init__(self, rev: str | None) -> None:
        self.rev = rev

    def files(self) -> list[str]:
        if self.rev is None:
            return sorted(str(p.relative_to(ROOT)) for p in (ROOT / "benchtui").rglob("*.py"))
        listed = git("ls-tree", "-r", "--name-only", self.rev, "benchtui")
        return sorted(line for line in listed.splitlines() if line.endswith(".py"))

    def read(self, path: str) -> str | None:
        if self.rev is None:
            file = ROOT / path
            return file.read_text() if file.is_file() else None
        try:
            return git("show", f"{self.rev}:{path}")
        except subprocess.CalledProcessError:
            return None


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout


def sizes(tree: Tree) -> dict[str, int]:
    """Lines of each contract module there (a glob: each file)."""
    files = tree.files()
    out: dict[str, int] = {}
    for pattern in MODULES:
        for path in files if "*" in pattern else [pattern]:
            if Path(path).match(pattern):
                text = tree.read(path)
                if text is not None:
                    out[path] = len(text.splitlines())
    return out


def any_lines(tree: Tree) -> Counter[str]:
    """Lines saying `Any` (what `grep -c '\\bAny\\b'` counts), per folder of benchtui/."""
    counts: Counter[str] = Counter()
    for path in tree.files():
        folder = path.split("/")[1] if path.count("/") > 1 else "(top)"
        counts[folder] += sum(1 for line in (tree.read(path) or "").splitlines() if ANY.search(line))
    return counts


def judge(tree: Tree) -> str:
    text = tree.read("benchtui/runners/kit/verdict.py") or ""
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == "judge":
            a = node.args
            params = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs)
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            return f"{lines} lines, {params} parameters"
    return "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="7c05ec7")
    args = parser.parse_args()
    before, now = Tree(args.before), Tree(None)
    print(f"modules (lines)                      {args.before:>8}      now")
    old, new = sizes(before), sizes(now)
    for path in sorted(set(old) | set(new)):
        print(f"  {path.removeprefix('benchtui/'):<38} {old.get(path, '-'):>6} {new.get(path, '-'):>8}")
    print(f"\nlines saying Any (per folder)       {args.before:>8}      now")
    a, b = any_lines(before), any_lines(now)
    for folder in sorted(set(a) | set(b)):
        print(f"  {folder:<38} {a.get(folder, 0):>6} {b.get(folder, 0):>8}")
    print(f"  {'total':<38} {sum(a.values()):>6} {sum(b.values()):>8}")
    print(f"\njudge: {judge(before)} -> {judge(now)}")


if __name__ == "__main__":
    main()
