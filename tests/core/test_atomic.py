"""core/atomic: the append-only log's close."""

from __future__ import annotations

from benchtui.core.atomic import AppendLog


def test_closing_a_log_twice_leaves_the_file_that_reused_its_number_open(tmp_path):
    first = AppendLog(tmp_path / "a.jsonl")
    first.close()
    second = AppendLog(tmp_path / "b.jsonl")  # the kernel hands out the lowest free number: first's
    first.close()  # without the guard: closes second's file
    second.append(b'{"still": "written"}\n')
    second.close()
    assert (tmp_path / "b.jsonl").read_bytes() == b'{"still": "written"}\n'
