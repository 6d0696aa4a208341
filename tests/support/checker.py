"""A maintainer's checker for the `command` target, and hostile ones: what it does with a
certificate is the certificate's `claim`. Written into a campaign's folder as `check.py` and run
as `python3 check.py {certificate}` (the system's python3: what the sandbox shows)."""

from __future__ import annotations

from pathlib import Path

CHECKER = r"""
import glob, json, os, subprocess, sys, time

here = os.path.dirname(os.path.abspath(__file__))
if sys.argv[1:] == ["--version"]:
    print(open(os.path.join(here, "version.txt")).read().strip())
    sys.exit(0)
text = open(sys.argv[1]).read()
if sys.stdin.read() != text:
    print("the certificate on stdin is not the file's")
    sys.exit(2)
cert = json.loads(text)
claim = cert.get("claim")
if claim == "bug":
    print(f"confirmed: {cert['rule']} is buggy")
    sys.exit(0)
if claim == "nobug":
    print(f"{cert['rule']} holds on this instance")
    sys.exit(1)
if claim == "crash":
    print("the checker tripped over it", file=sys.stderr)
    sys.exit(3)
if claim == "slow":  # never returns, nor do its children (one in a session of its own)
    subprocess.Popen(["sleep", cert["marker"]])
    subprocess.Popen(["setsid", "sleep", cert["marker"]])
    time.sleep(10_000)
if claim == "chatty":
    while True:
        sys.stdout.write("y" * 65536)
if claim == "bomb":  # forks for ever; a refused fork is only a pause
    while True:
        try:
            subprocess.Popen(["sleep", cert["marker"]])
        except OSError:
            time.sleep(0.01)
if claim == "peek":  # what of the machine can it read?
    found = []
    for pattern in cert["paths"]:
        for path in sorted(glob.glob(pattern, recursive=True)) or [pattern]:
            try:
                with open(path, "rb") as f:
                    f.read(1)
                found.append(path)
            except OSError:
                pass
    print("read: " + (", ".join(found) or "nothing"))
    sys.exit(1)
sys.exit(2)
"""


def write_checker(folder: Path, version: str = "checker 1.0") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "check.py").write_text(CHECKER)
    (folder / "version.txt").write_text(version + "\n")
    return folder / "check.py"


def target_table(**extra: object) -> dict[str, object]:
    """The `[target]` table of a campaign checked by it."""
    return {
        "kind": "command",
        "verify": ["python3", "check.py", "{certificate}"],
        "version": ["python3", "check.py", "--version"],
        **extra,
    }
