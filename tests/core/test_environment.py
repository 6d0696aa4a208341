"""F1: the environment fingerprint, and fresh private copies of the target."""

from __future__ import annotations

import subprocess

from benchtui.core.workspace import fingerprint, library_commit, make_session_copy


def git(cwd, *args):
    return subprocess.run(
        ["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


def test_git_target_is_fingerprinted_by_commit_and_dirty_flag(tmp_path):
    target = tmp_path / "lib"
    target.mkdir()
    (target / "rule.rs").write_text("fn reduce() {}\n")
    git(target, "init", "-q")
    git(target, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "x", "--allow-empty")
    git(target, "add", "rule.rs")
    git(target, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "rule")
    head = git(target, "rev-parse", "HEAD")
    assert fingerprint(target) == f"git:{head}"
    (target / "notes.txt").write_text("untracked files are not part of the copy\n")
    assert fingerprint(target) == f"git:{head}"
    (target / "rule.rs").write_text("fn reduce() { bug() }\n")
    assert fingerprint(target) == f"git:{head}+dirty"
    assert library_commit(fingerprint(target)) == head


def test_plain_directory_is_content_hashed_and_tools_are_versioned(tmp_path):
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "a").write_text("1")
    before = fingerprint(tmp_path / "t")
    assert before.startswith("sha256:")
    (tmp_path / "t" / "a").write_text("2")
    assert fingerprint(tmp_path / "t") != before
    assert fingerprint(tmp_path / "t", ["no-such-tool-xyz"]).endswith("no-such-tool-xyz=missing")


def test_each_session_gets_a_fresh_copy_at_the_pinned_commit(tmp_path):
    target = tmp_path / "lib"
    target.mkdir()
    (target / "rule.rs").write_text("original\n")
    git(target, "init", "-q")
    git(target, "add", "rule.rs")
    git(target, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "rule")
    copy = make_session_copy(target, tmp_path / "s1" / "work")
    (copy / "rule.rs").write_text("an agent edited its copy\n")
    assert (target / "rule.rs").read_text() == "original\n"
    again = make_session_copy(target, tmp_path / "s1" / "work")  # a retry starts over
    assert (again / "rule.rs").read_text() == "original\n"
    assert git(again, "rev-parse", "HEAD") == git(target, "rev-parse", "HEAD")


SECRETS = [
    ".env",
    ".env.local",
    "config/.ENV.production",
    "deploy/id_rsa",
    ".aws/credentials",
    "tls/server.pem",
]


def plant_secrets(root):
    for name in SECRETS:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("OPENAI_API_KEY=sk-planted\n")


def test_secret_files_never_reach_a_session_copy_of_a_plain_directory(tmp_path):
    target = tmp_path / "t"
    (target / "src").mkdir(parents=True)
    (target / "src" / "rule.rs").write_text("fn reduce() {}\n")
    (target / "env.rs").write_text("// not a secret: only the listed names are\n")
    before = fingerprint(target)
    plant_secrets(target)
    assert fingerprint(target) == before  # secrets are no part of the identity (nor of the copy)
    copy = make_session_copy(target, tmp_path / "copy")
    kept = sorted(str(p.relative_to(copy)) for p in copy.rglob("*") if p.is_file())
    assert kept == ["env.rs", "src/rule.rs"]
    assert fingerprint(copy) == before


def test_secret_files_committed_to_a_git_target_are_removed_from_the_copy(tmp_path):
    target = tmp_path / "lib"
    target.mkdir()
    (target / "rule.rs").write_text("fn reduce() {}\n")
    plant_secrets(target)
    git(target, "init", "-q")
    git(target, "add", "-A")
    git(target, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "with secrets")
    copy = make_session_copy(target, tmp_path / "copy")
    kept = sorted(str(p.relative_to(copy)) for p in copy.rglob("*") if p.is_file() and ".git" not in p.parts)
    assert kept == ["rule.rs"]
    assert library_commit(fingerprint(copy)) == git(target, "rev-parse", "HEAD")
