"""The one decoder of stored verdicts (`Verdict.from_json`, under `Judgement.from_json`): this
version's verdicts round-trip; those of earlier releases — their cause inside `details`, spelled
`pred_error`/`pred_missing`, or missing; no `judged_by`; a fake runner's claim without a status —
read as the typed verdict they meant; and nothing a file holds makes it raise."""

from __future__ import annotations

import json

import pytest
from support import ROOT

from benchtui.core.outcome import Judgement, Looked, OutcomeDetails
from benchtui.core.target import CAUSES, STATUS_OF_CAUSE, Verdict
from benchtui.story.outcome import certificates

PRED = "benchtui.targets.problem_reductions (pred round trip)"
RUNDIRS = ROOT / "tests" / "fixtures" / "rundirs"


@pytest.mark.parametrize("cause", CAUSES)
def test_every_cause_round_trips_with_the_status_it_implies(cause):
    verdict = Verdict.of(cause, f"because {cause}", verifier="v", found_by="route", evidence={"exit": 3})
    assert verdict.status == STATUS_OF_CAUSE.get(cause, "rejected")
    assert Verdict.from_json(json.loads(json.dumps(verdict.to_json()))) == verdict


def test_a_cause_outside_the_closed_set_is_refused():
    with pytest.raises(ValueError, match="unknown verdict cause 'pred_error'"):
        Verdict("inconclusive", "x", "pred_error")  # type: ignore[arg-type]


# As 7c05ec7's problem-reductions verifier wrote them: the cause in `details`, pred's own spellings.
OLD_PRED = [
    ({"cause": "pred_error", "pred": "exit 2"}, "inconclusive", "tool_error"),
    ({"cause": "pred_missing"}, "inconclusive", "tool_missing"),
    ({"cause": "timeout"}, "inconclusive", "timeout"),
    ({"cause": "wrong_target"}, "rejected", "wrong_target"),
    ({"found_by": "reduce-solve-extract", "observed": "unsound_extraction"}, "accepted", "violation"),
    ({}, "rejected", "no_violation"),
]


@pytest.mark.parametrize(("details", "status", "cause"), OLD_PRED)
def test_an_old_pred_verdict_reads_with_its_cause_renamed_and_lifted(details, status, cause):
    old = {"verifier": PRED, "judged_by": "verifier", "status": status, "reason": "r", "details": details}
    verdict = Verdict.from_json(old)
    assert (verdict.status, verdict.cause, verdict.judged_by) == (status, cause, "verifier")
    assert "cause" not in verdict.evidence and "found_by" not in verdict.evidence
    assert verdict.found_by == details.get("found_by", "")
    assert {k: v for k, v in details.items() if k not in ("cause", "found_by")} == dict(verdict.evidence)


def test_before_judged_by_the_verifier_is_known_by_its_name():
    pred = Verdict.from_json({"verifier": PRED, "status": "accepted", "reason": "r", "details": {}})
    assert pred.judged_by == "verifier" and pred.accepted
    fake = Verdict.from_json({"verifier": "none: fake runner", "status": "accepted", "reason": "claimed"})
    assert fake.judged_by == "runner"


def test_an_old_fake_claim_without_a_status_is_unverified_not_rejected():
    # 0a81a35 wrote {"verifier": ...}, 7c05ec7 added judged_by: the claim is the session's result.
    for line in [
        (RUNDIRS / "finished" / "outcomes" / "fake_model-a.jsonl").read_text().splitlines()[0],
        (RUNDIRS / "untargeted" / "outcomes" / "acme_coder-xl.jsonl").read_text().splitlines()[0],
    ]:
        details = OutcomeDetails.from_json(json.loads(line))
        assert details.judgement is not None
        verdict = details.judgement.verdict
        assert "status" not in json.loads(line)["verify_details"]
        assert (verdict.status, verdict.cause, verdict.judged_by) == ("unverified", "unverified", "runner")
        assert not verdict.accepted


def test_an_old_unverified_verdict_of_a_target_without_a_verifier():
    line = (RUNDIRS / "unverified" / "outcomes" / "acme_coder-xl.jsonl").read_text().splitlines()[0]
    judgement = OutcomeDetails.from_json(json.loads(line)).judgement
    assert judgement is not None
    assert (judgement.verdict.status, judgement.verdict.cause) == ("unverified", "unverified")
    assert [(c.status, c.cause) for c in judgement.checked] == [("unverified", "")]


@pytest.mark.parametrize(
    "stored",
    [
        None,
        [],
        "accepted",
        3,
        {"status": ["accepted"]},
        {"status": "accepted", "details": [1]},
        {"cause": {}},
    ],
)
def test_whatever_a_file_holds_decodes_without_raising(stored):
    verdict = Verdict.from_json(stored)
    assert verdict.cause in CAUSES and not (verdict.accepted and verdict.judged_by == "verifier")
    Judgement.from_json(stored)


def test_a_certificates_file_entry_round_trips_through_its_one_decoder():
    """`attempt-N.certificates.json`: a judged certificate and one refused for want of a submit
    read back as written (Looked), the viewer's rows from them; what is not an entry is skipped."""
    judged = Looked({"rule": "A -> B"}, Verdict.of("violation", "bug", verifier="v", found_by="solve"))
    refused = Looked("not json {", refused="not verified: the session's 2 submits are spent")
    stored = json.loads(json.dumps([judged.to_json(), refused.to_json(), 7, None]))
    assert [Looked.from_json(e) for e in stored] == [judged, refused, None, None]
    rows = certificates(stored)
    assert [(c, v.cause if v else None, why) for c, v, why in rows] == [
        ({"rule": "A -> B"}, "violation", ""),
        ("not json {", None, "not verified: the session's 2 submits are spent"),
    ]
    assert rows[0][1] is not None and rows[0][1].found_by == "solve"


@pytest.mark.parametrize(
    "entry", [{}, {"refused": 3}, {"refused": ""}, {"verdict": "accepted"}, {"verdict": [1]}]
)
def test_a_hostile_certificates_entry_is_a_verdict_that_confirms_nothing(entry):
    looked = Looked.from_json(entry)
    assert looked is not None and looked.verdict is not None and looked.refused == ""
    assert not looked.verdict.accepted and looked.verdict.cause in CAUSES
