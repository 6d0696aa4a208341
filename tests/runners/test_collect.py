"""What runners collect from an agent's workdir, and its output: never through a link, only
regular files, bounded in size and lines; the log keeps a head and a tail within its cap."""

from __future__ import annotations

import os
import resource
import time

import pytest

from benchtui.runners.kit import collect
from benchtui.runners.kit.agentlog import CappedLog
from benchtui.runners.kit.collect import MAX_LINES, Refused, certificate_lines, read_beneath, top_files


def test_a_link_is_never_followed_at_any_depth(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text('{"rule": "SECRET"}\n')
    workdir = tmp_path / "workdir"
    (workdir / "real").mkdir(parents=True)
    (workdir / "certificates.jsonl").symlink_to(secret)
    (workdir / "sub").symlink_to(tmp_path)  # a linked folder on the way
    (workdir / "real" / "f").write_text("ok")
    assert read_beneath(workdir, "real/f") == b"ok"
    for name in ("certificates.jsonl", "sub/secret"):
        with pytest.raises(Refused, match="symbolic link"):
            read_beneath(workdir, name)
    assert "symbolic link" in certificate_lines(workdir).problem
    with pytest.raises(ValueError):
        read_beneath(workdir, "../secret")


def test_special_files_are_refused_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    started = time.monotonic()
    with pytest.raises(Refused, match="a FIFO"):
        read_beneath(tmp_path, "fifo")
    assert time.monotonic() - started < 1  # an open for reading would wait for a writer
    with pytest.raises(Refused, match="a character device"):
        read_beneath(collect.Path("/dev"), "null")
    with pytest.raises(Refused, match="a folder"):
        read_beneath(tmp_path.parent, tmp_path.name)
    assert read_beneath(tmp_path, "missing") is None


def test_a_sparse_gigabyte_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "certificates.jsonl"
    with path.open("wb") as f:
        f.truncate(1 << 30)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert "larger than 8,388,608 bytes" in certificate_lines(tmp_path).problem
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 50_000  # kB


def test_a_million_lines_give_at_most_max_lines_certificates(tmp_path):
    (tmp_path / "certificates.jsonl").write_text('{"rule": "r"}\n' * 500_000)
    found = certificate_lines(tmp_path)
    assert len(found.lines) == MAX_LINES and "more than 1,000 certificate lines" in found.problem
    (tmp_path / "certificates.jsonl").write_text("x\n" * 1_000_000 + '{"rule": "last"}\n')
    assert certificate_lines(tmp_path).lines == ['{"rule": "last"}']


def test_deep_lines_are_the_models_malformed_output_not_a_crash(tmp_path):
    (tmp_path / "certificates.jsonl").write_text("{" * 100_000 + "\n" + '{"rule": "ok"}\n')
    found = certificate_lines(tmp_path)
    assert found.lines == ['{"rule": "ok"}'] and "line 1: nested deeper than 64 levels" in found.problem


def test_top_files_skip_links_and_mark_what_they_refuse(tmp_path):
    (tmp_path / "trajectory.json").write_text("{}")
    (tmp_path / "link").symlink_to("/etc/passwd")
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "big").write_bytes(b"x" * 101)
    files = top_files(tmp_path, limit=100)
    assert files["trajectory.json"] == b"{}" and "link" not in files and "fifo" not in files
    assert b"not collected" in files["big"]


def test_the_log_keeps_its_head_and_tail_and_says_what_it_cut(tmp_path):
    path = tmp_path / "agent.log"
    data = bytes(range(256)) * 4000  # 1,024,000 bytes
    with CappedLog(path, head=1000, tail=3000) as log:
        for i in range(0, len(data), 777):
            log.write(data[i : i + 777])
    kept = path.read_bytes()
    cut = len(data) - 4000
    assert (
        kept == data[:1000] + b"\n[benchtui: %d bytes of the agent's output cut here]\n" % cut + data[-3000:]
    )
    short = tmp_path / "short.log"
    with CappedLog(short, head=1000, tail=3000) as log:
        log.write(b"a" * 3500)
    assert short.read_bytes() == b"a" * 3500  # nothing cut, nothing marked
