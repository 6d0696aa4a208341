"""The certificate verifier (benchtui.targets.problem_reductions) and `benchtui verify`, against a stand-in `pred`.

tests/stand_in_pred.py is a STAND-IN for the real `pred` (its interface, exactly) with one planted
bug (MaximumIndependentSet -> MinimumVertexCover extraction); tests/test_real_pred.py runs the
verifier against the real `pred`.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
import trio
from support import certificates, results_schema
from support.mini import STAND_IN_PRED

from benchtui.cli.main import main as cli
from benchtui.targets.problem_reductions import find_blocks, parse_block, parse_value, verify, verify_async

PRED = str(STAND_IN_PRED)


def stand_in(*args: str, cwd: Path) -> dict:
    return json.loads(
        subprocess.run([PRED, *args], cwd=cwd, check=True, capture_output=True, text=True).stdout
    )


def certificate(tmp_path: Path, target: str, *, violation: str = "suboptimal_extraction", **extra) -> dict:
    """A certificate built the way an agent builds one: pred create, pred reduce."""
    source = stand_in("create", "MIS", "--graph", "0-1,1-2", cwd=tmp_path)
    (tmp_path / "source.json").write_text(json.dumps(source))
    bundle = stand_in("reduce", "source.json", "--to", target, "--json", cwd=tmp_path)
    return {
        "rule": f"MaximumIndependentSetTo{target}",
        "violation": violation,
        "source": source,
        "bundle": bundle,
        **extra,
    }


def contract(name: str) -> dict:
    """A certificate the tests build themselves (support.certificates), by its contract name."""
    return certificates.certificate(name)


def test_a_genuine_round_trip_failure_is_accepted(tmp_path):
    verdict = verify(certificate(tmp_path, "MinimumVertexCover", target_config="0,1,0"), pred=PRED)
    assert verdict.accepted, verdict
    assert verdict.details["observed"] == "suboptimal_extraction"
    assert verdict.details["source_optimum"] == "Max(2)" and verdict.details["round_trip"] == "Max(1)"


def test_a_correct_rule_is_rejected_whatever_the_certificate_claims(tmp_path):
    claim = certificate(
        tmp_path,
        "MaximumClique",
        violation="unsound_extraction",
        target_config="1,0,0",
        claimed_source_solution=[1, 1, 0],
    )
    verdict = verify(claim, pred=PRED)
    assert verdict.status == "rejected" and verdict.details["cause"] == "no_violation"


def test_the_contract_certificates_are_rejected():
    wrong = verify(contract("certificate.wrong-target.json"), pred=PRED)
    assert wrong.status == "rejected" and wrong.details["cause"] == "wrong_target", wrong
    example = verify(contract("certificate.example.json"), pred=PRED)  # the round trip recovers the optimum
    assert example.status == "rejected" and example.details["cause"] == "no_violation", example


@pytest.mark.parametrize(
    "cert",
    [
        [],
        "text",
        {},
        {"rule": "R"},
        {"rule": "R", "violation": "made_up", "source": {"type": "A"}, "bundle": {"target": {"type": "B"}}},
        {"rule": "R", "violation": "unsound_extraction", "source": {"type": "A"}, "bundle": {}},
        {
            "rule": "R",
            "violation": "unsound_extraction",
            "source": {"type": "A"},
            "bundle": {"target": {"type": "B"}},
            "target_config": "one,two",
        },
    ],
)
def test_malformed_certificates_are_rejected_without_calling_pred(cert):
    verdict = verify(cert, pred="/nonexistent/pred")
    assert verdict.status == "rejected" and verdict.details["cause"] == "malformed"


def test_certificate_blocks_are_found_and_bad_ones_reported():
    text = (
        'I found it.\nCERTIFICATE_START\n```json\n{"rule": "R"}\n```\nCERTIFICATE_END\n'
        "say CERTIFICATE_START inline is not a block\nCERTIFICATE_START\n{not json\nCERTIFICATE_END\n"
        "CERTIFICATE_START\n[1, 2]\nCERTIFICATE_END\nCERTIFICATE_START\nunterminated"
    )
    blocks = find_blocks(text)
    assert len(blocks) == 3
    assert parse_block(blocks[0]) == ({"rule": "R"}, "")
    assert parse_block(blocks[1])[0] is None and "not JSON" in parse_block(blocks[1])[1]
    assert parse_block(blocks[2]) == (None, "not a JSON object")


def test_a_pred_timeout_is_inconclusive_never_a_bug(tmp_path, monkeypatch):
    monkeypatch.setenv("STAND_IN_PRED_HANG", "solve")
    started = time.monotonic()
    verdict = verify(certificate(tmp_path, "MinimumVertexCover"), pred=PRED, timeout=0.5)
    assert not verdict.accepted and verdict.status == "inconclusive" and verdict.details["cause"] == "timeout"
    assert time.monotonic() - started < 5


def test_a_missing_pred_is_inconclusive(tmp_path):
    verdict = verify(contract("certificate.example.json"), pred=str(tmp_path / "no-pred"))
    assert verdict.status == "inconclusive" and verdict.details["cause"] == "pred_missing"


@pytest.mark.trio
async def test_async_verification_agrees_and_a_hung_pred_is_killed(tmp_path, monkeypatch):
    genuine = certificate(tmp_path, "MinimumVertexCover")
    assert (await verify_async(genuine, pred=PRED)).accepted
    assert (await verify_async(contract("certificate.wrong-target.json"), pred=PRED)).status == "rejected"
    monkeypatch.setenv("STAND_IN_PRED_HANG", "reduce")
    with trio.fail_after(5):
        verdict = await verify_async(genuine, pred=PRED, timeout=0.3)
    assert verdict.details["cause"] == "timeout"
    await trio.sleep(0.1)
    assert not [p for p in os.listdir("/proc") if p.isdigit() and _is_hung_stand_in(p)]


def _is_hung_stand_in(pid: str) -> bool:
    """A stand-in pred this test started (a child of this process: other tests on the machine
    hang stand-ins of their own) that is still running."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return False
    state, parent = fields[0], int(fields[1])
    return b"stand_in_pred.py\0reduce" in cmdline and state != "Z" and parent == os.getpid()


@pytest.mark.parametrize(
    "raw, valid, number",
    [
        ("Max(2)", True, 2.0),
        ("Min(-14)", True, -14.0),
        ("Max(None)", False, None),
        ("Or(true)", True, None),
        ("Or(false)", False, None),
        ("SolutionSize(3, valid)", True, 3.0),
        (7, True, 7.0),
    ],
)
def test_pred_values_are_read(raw, valid, number):
    value = parse_value(raw)
    assert (value.valid, value.number) == (valid, number)


def test_the_cli_exit_status_says_the_verdict(tmp_path, capsys, monkeypatch):
    genuine = tmp_path / "genuine.json"
    genuine.write_text(json.dumps(certificate(tmp_path, "MinimumVertexCover")))
    log = tmp_path / "agent.log"
    log.write_text(f"noise\nCERTIFICATE_START\n{genuine.read_text()}\nCERTIFICATE_END\n")
    wrong = certificates.write(tmp_path, "certificate.wrong-target.json")
    assert cli(["verify", str(genuine), "--pred", PRED]) == 0
    assert capsys.readouterr().out.startswith("ACCEPTED")
    assert cli(["verify", str(log), "--pred", PRED, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "accepted"
    assert cli(["verify", str(wrong), "--pred", PRED]) == 1
    assert cli(["verify", str(tmp_path / "missing.json"), "--pred", PRED]) == 2
    monkeypatch.setenv("STAND_IN_PRED_HANG", "reduce")
    assert cli(["verify", str(genuine), "--pred", PRED, "--timeout", "0.3"]) == 4


def test_a_bug_pred_shows_counts_whatever_violation_was_claimed_and_both_are_shown(tmp_path):
    claim = certificate(tmp_path, "MinimumVertexCover", violation="unsound_extraction")
    verdict = verify(claim, pred=PRED)
    assert verdict.accepted, verdict
    assert (verdict.details["claimed_violation"], verdict.details["observed"]) == (
        "unsound_extraction",
        "suboptimal_extraction",
    )
    assert "claimed unsound_extraction" in verdict.reason


def logging_pred(tmp_path: Path) -> tuple[str, Path]:
    """The stand-in behind a wrapper that logs every command line it gets."""
    log, wrapper = tmp_path / "pred.log", tmp_path / "logging-pred"
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec {PRED} "$@"\n')
    wrapper.chmod(0o755)
    return str(wrapper), log


def test_the_bundles_own_path_is_followed(tmp_path):
    cert = certificate(tmp_path, "MinimumVertexCover")
    assert len(cert["bundle"]["path"]) == 3  # MIS/One -> MIS/i32 -> MVC/i32
    pred, log = logging_pred(tmp_path)
    assert verify(cert, pred=pred).accepted
    assert "reduce source.json --via via.json --json" in log.read_text().splitlines()
    cert["bundle"]["path"][1]["variant"]["weight"] = "Two"  # a route pred refuses: reduce --to
    log.unlink()
    assert verify(cert, pred=pred).accepted
    assert "reduce source.json --to MinimumVertexCover/SimpleGraph/i32 --json" in log.read_text()


def test_a_target_config_pred_refuses_shows_nothing_and_is_rejected(tmp_path):
    claim = certificate(tmp_path, "MaximumClique", violation="unsound_extraction", target_config="1,0")
    verdict = verify(claim, pred=PRED)
    assert verdict.status == "rejected" and "3 variables" in verdict.details["extract_error"], verdict


@pytest.mark.trio
async def test_a_malformed_certificate_is_rejected_but_never_handed_on_as_a_certificate(tmp_path):
    from support.judging import pred_verification, report_of

    from benchtui.runners.kit.verdict import judge

    made_up = {
        "rule": "R",
        "violation": "made_up",
        "source": {"type": "A"},
        "bundle": {"target": {"type": "B"}},
    }
    report = report_of(json.dumps(made_up), steps=3)
    outcome = await judge(
        report, pred_verification(tmp_path / "certificates.json", PRED, timeout=5), fingerprint=""
    )
    assert outcome.result == "rejected" and "malformed" in outcome.reason
    assert outcome.certificate is None  # the results schema admits only the benchmark's violations
    assert json.loads((tmp_path / "certificates.json").read_text())[0]["certificate"] == made_up


def test_a_file_without_any_certificate_is_bad_input_not_a_rejection(tmp_path, capsys):
    cases = {
        "empty-object.json": "{}",
        "schema.json": json.dumps(results_schema()),
        "rows.jsonl": '{"session": "s", "state": "done"}\n{"session": "t", "state": "done"}\n',
        "notes.log": "the agent found nothing\n",
    }
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
        assert cli(["verify", str(tmp_path / name), "--pred", PRED]) == 2, name
        assert "no certificate found" in capsys.readouterr().err
    (tmp_path / "claim.json").write_text('{"rule": "R"}')  # a certificate, malformed: rejected
    assert cli(["verify", str(tmp_path / "claim.json"), "--pred", PRED]) == 1


def test_a_trajectory_is_read_message_by_message_and_its_prompt_example_is_skipped(tmp_path, capsys):
    genuine = json.dumps(certificate(tmp_path, "MinimumVertexCover"))
    example = json.dumps(contract("certificate.wrong-target.json"))
    block = f"CERTIFICATE_START\n{genuine}\nCERTIFICATE_END\n"
    trajectory = {
        "trajectory_format": "mini-swe-agent-1.1",
        "messages": [
            {
                "role": "system",
                "content": f"print certificates like\nCERTIFICATE_START\n{example}\nCERTIFICATE_END\n",
            },
            {"role": "user", "content": "find a bug"},
            {"role": "assistant", "content": f"Here it is:\n{block}"},
            {"role": "tool", "content": "<output/>", "extra": {"raw_output": block}},
        ],
    }
    (tmp_path / "attempt-1.traj.json").write_text(json.dumps(trajectory, indent=1))
    assert cli(["verify", str(tmp_path / "attempt-1.traj.json"), "--pred", PRED]) == 0
    verdicts = capsys.readouterr().out.splitlines()
    assert len(verdicts) == 1 and verdicts[0].startswith("ACCEPTED"), verdicts  # once, and not the example
