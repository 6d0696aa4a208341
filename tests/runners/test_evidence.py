"""The evidence ledger: one typed JSON line per step, on disk when `record` returns; a torn last
line (a SIGKILL mid-write) is cut when the next attempt opens it, never a broken ledger."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap

from benchtui.runners.kit.evidence import FILE, Evidence


def test_each_record_is_on_disk_when_it_returns_and_a_sigkill_loses_nothing_recorded(tmp_path):
    script = textwrap.dedent(
        f"""
        import os, signal, sys
        from pathlib import Path
        from benchtui.runners.kit.evidence import Evidence
        evidence = Evidence(Path({str(tmp_path)!r}), 1)
        for i in range(50):
            evidence.record("tool", argv=["pred", str(i)], request=f"g{{i}}", free=False)
        # A record torn mid-write, then the kill: as a SIGKILL inside write() leaves it.
        os.write(evidence._log.fd, b'{{"v": 1, "kind": "action", "comm')
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True)
    assert done.returncode == -signal.SIGKILL
    evidence = Evidence(tmp_path, 2)  # the next attempt opens it: the torn line is cut
    evidence.record("generation", input_tokens=3, output_tokens=4, cost_usd="0.000069", charged=True)
    evidence.close()
    records = [json.loads(line) for line in (tmp_path / FILE).read_text().splitlines()]
    assert [r["argv"][1] for r in records[:50]] == [str(i) for i in range(50)]
    assert records[50]["kind"] == "generation" and records[50]["attempt"] == 2 and len(records) == 51
    assert all(r["v"] == 1 for r in records)


def test_hostile_text_is_bounded_in_a_record(tmp_path):
    evidence = Evidence(tmp_path, 1)
    evidence.record("action", command="x" * 10**6, exit=0)
    evidence.close()
    (record,) = [json.loads(line) for line in (tmp_path / FILE).read_text().splitlines()]
    assert len(record["command"]) == 2000
    assert os.path.getsize(tmp_path / FILE) < 3000
