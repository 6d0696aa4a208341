"""F1: the environment fingerprint, and fresh private copies of the target."""

from __future__ import annotations

import subprocess

from benchtui.environment import fingerprint, library_commit, make_session_copy


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
