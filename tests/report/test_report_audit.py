"""The fairness audit: a runner switched mid-run (`benchtui ctl runner`), an outage that hit one
model, different prompts or limits (token or logical), sessions stopped by a counter far more
often for one model, an unenforced budget: each is a finding that names what differs, and the
report is then not fair. Identical limits pass."""

from __future__ import annotations

import json

import pytest
import trio
from support import journal, start
from support.report import LOGICAL, prepare, run_campaign

from benchtui.cli import main as cli


async def in_thread(capsys, *argv) -> tuple[int, str]:
    """`benchtui ARGV` in a thread (it blocks; the campaign runs meanwhile)."""
    rc = await trio.to_thread.run_sync(cli.main, list(map(str, argv)))
    out, err = capsys.readouterr()
    return rc, out + err


def fairness(capsys, run_dir) -> dict:
    assert cli.main(["report", str(run_dir), "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)["fairness"]


@pytest.mark.trio
async def test_switching_the_runner_mid_run_makes_the_audit_unfair_naming_it(tmp_path, capsys):
    prep = prepare(
        tmp_path,
        n=6,
        cap="1",
        total="2",
        latency=0.1,
        bugs={"fake/model-a": [0]},
        extra='[runners.alt]\nkind = "fake"\ncost_usd = 0.01\n',
    )
    run_dir = prep.run_dir
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            scheduler, _ = await start(prep, nursery)
            while not any(r["state"] == "done" for r in journal(run_dir)):
                await trio.sleep(0.01)
            assert (await in_thread(capsys, "ctl", run_dir, "pause"))[0] == 0  # running ones go on
            rc, out = await in_thread(capsys, "report", run_dir, "--format", "json")  # mid-run
            assert rc == 0
            mid = json.loads(out)
            assert mid["fairness"]["fair"] is True
            assert sum(m["ran"] for m in mid["models"]) < 12
            rc, out = await in_thread(capsys, "ctl", run_dir, "runner", "alt")
            assert (rc, out.strip()) == (0, "campaign t: runner alt for sessions not yet started")
            assert scheduler.runner == "alt"
            assert (await in_thread(capsys, "ctl", run_dir, "resume"))[0] == 0
    used = {r["runner"] for r in journal(run_dir) if r["state"] == "done"}
    assert used == {"fake", "alt"}
    audit = fairness(capsys, run_dir)
    assert audit["fair"] is False
    (finding,) = [f for f in audit["findings"] if f.startswith("runner")]
    assert "switched mid-run" in finding and "fake (" in finding and "alt (" in finding
    assert cli.main(["report", str(run_dir)]) == 0
    text = capsys.readouterr().out
    assert "Fairness audit: UNFAIR" in text and finding in text


def test_an_outage_that_hit_one_model_is_a_finding(tmp_path, capsys):
    down = '[runners.flaky]\nkind = "support.report:ProviderRunner"\ndown = ["fake/model-b"]\n'
    run_dir = run_campaign(tmp_path, n=4, cap="1", total="2", runner="flaky", extra=down, finished=False)
    audit = fairness(capsys, run_dir)
    assert audit["fair"] is False
    assert audit["findings"] == [
        "infrastructure errors: the shares of sessions differ markedly between models: "
        "fake/model-a 0 of 4 (0%), fake/model-b 3 of 4 (75%)"
    ]  # the circuit breaker stopped model-b after 3 such errors in a row: its 4th stays pending
    by_model = {m["model"]: m for m in audit["models"]}
    assert by_model["fake/model-b"]["infra_errors"] == {"sessions": 3, "share": 0.75}


def test_an_outage_of_one_session_is_not_yet_a_pattern(tmp_path, capsys):
    # One failure apart is below MARKED_COUNT: a blip, not an unfair comparison.
    down = '[runners.flaky]\nkind = "support.report:ProviderRunner"\ndown = ["fake/model-b"]\n'
    run_dir = run_campaign(tmp_path, n=1, cap="1", total="2", runner="flaky", extra=down, finished=False)
    assert fairness(capsys, run_dir)["fair"] is True


def test_different_prompts_are_a_finding(tmp_path, capsys):
    prompts = '[runners.p]\nkind = "support.report:ProviderRunner"\nprompts = { "fake/model-a" = "aaa", "fake/model-b" = "bbb" }\n'
    run_dir = run_campaign(tmp_path, n=3, cap="1", total="2", runner="p", extra=prompts)
    audit = fairness(capsys, run_dir)
    assert audit["findings"] == [
        "prompt: sessions of the same task got different prompts in 1 task(s): "
        "the campaign (fake/model-a aaa, fake/model-b bbb)"
    ]
    same = '[runners.p]\nkind = "support.report:ProviderRunner"\nprompts = { "fake/model-a" = "aaa", "fake/model-b" = "aaa" }\n'
    other = tmp_path / "same"
    other.mkdir()
    assert (
        fairness(capsys, run_campaign(other, n=3, cap="1", total="2", runner="p", extra=same))["fair"] is True
    )


def test_prompts_are_compared_per_task_and_summarised(tmp_path, capsys):
    """Ten tasks, each its own prompt, the same for both models: fair (comparing hashes over all
    sessions called every multi-task campaign unfair); one model's prompt differing on a task is
    a finding naming the task, and the report summarises the hashes instead of listing them."""
    tasks = [f"r{i}" for i in range(10)]
    same = (
        '[runners.p]\nkind = "support.report:ProviderRunner"\nper_task = true\n'
        'prompts = { "fake/model-a" = "aaa", "fake/model-b" = "aaa" }\n'
    )
    run_dir = run_campaign(tmp_path, n=10, cap="1", total="2", runner="p", extra=same, tasks=tasks)
    audit = fairness(capsys, run_dir)
    assert audit["fair"] is True, audit["findings"]
    for m in audit["models"]:
        assert m["prompts"] == {"tasks": 10, "distinct": 10, "sessions": 10, "tasks_with_several": 0}
    assert cli.main(["report", str(run_dir)]) == 0
    text = capsys.readouterr().out
    assert "prompts 10 tasks, 10 distinct prompts over 10 sessions" in text
    assert "aaa-r3" not in text  # hashes summarised, not listed
    other = tmp_path / "other"
    other.mkdir()
    differ = same.replace('"fake/model-b" = "aaa"', '"fake/model-b" = "bbb"')
    audit = fairness(
        capsys, run_campaign(other, n=10, cap="1", total="2", runner="p", extra=differ, tasks=tasks)
    )
    (finding,) = audit["findings"]
    assert finding.startswith("prompt: sessions of the same task got different prompts in 10 task(s): r0 (")
    assert finding.endswith("and 7 more task(s)")


def test_unequal_token_limits_and_an_unenforced_budget_are_findings(tmp_path, capsys):
    run_dir = run_campaign(tmp_path, n=2, cap="1", total="2", enforce=False, max_output_b=1024)
    findings = fairness(capsys, run_dir)["findings"]
    assert any(f.startswith("budget: not enforced") for f in findings)
    assert (
        "token limits: max_output_tokens differs between models: fake/model-a 4096, fake/model-b 1024"
        in findings
    )


def counting(tries_a: int, tries_b: int) -> str:
    """Sessions of each model try that many model calls (the limit is 3)."""
    return (
        '[runners.counting]\nkind = "support.report:CounterRunner"\n[runners.counting.tries]\n'
        f'"fake/model-a" = {{ model_calls = {tries_a} }}\n"fake/model-b" = {{ model_calls = {tries_b} }}\n'
        + LOGICAL
    )


def test_two_models_with_identical_limits_pass_the_audit(tmp_path, capsys):
    run_dir = run_campaign(tmp_path, n=4, cap="1", total="2", runner="counting", extra=counting(5, 5))
    audit = fairness(capsys, run_dir)
    assert audit["fair"] is True, audit["findings"]
    for m in audit["models"]:
        assert m["logical"]["limits"]["model_calls"] == {"3": 4}
        assert m["logical"]["limits"]["tools.pred solve"] == {"2": 4}
        assert m["logical"]["ended_by_counter"] == {"sessions": 4, "share": 1.0}
        assert m["logical"]["ended_by_submit"] == {"sessions": 0, "share": 0.0}
    assert cli.main(["report", str(run_dir)]) == 0
    assert "logical budgets: model_calls 3 ×4, shell_actions 5 ×4" in capsys.readouterr().out


def test_sessions_stopped_by_a_counter_are_flagged_per_model_not_called_unfair(tmp_path, capsys):
    """A model that spends its calls is behaving, not treated differently: shown, not a finding."""
    run_dir = run_campaign(tmp_path, n=4, cap="1", total="2", runner="counting", extra=counting(5, 1))
    audit = fairness(capsys, run_dir)
    assert audit["fair"] is True and audit["findings"] == []
    ended = {m["model"]: m["logical"]["ended_by_counter"]["sessions"] for m in audit["models"]}
    assert ended == {"fake/model-a": 4, "fake/model-b": 0}


def test_pooled_runs_whose_limits_differ_are_a_finding_naming_the_counter_and_the_values(tmp_path, capsys):
    run_campaign(tmp_path, n=2, cap="1", total="2", extra=LOGICAL)
    latest = run_campaign(tmp_path, fresh=True, n=2, cap="1", total="2", extra=LOGICAL)
    (earlier,) = latest.parent.glob("t.*")  # --fresh moved the first run aside
    assert fairness(capsys, latest)["fair"] is True
    # The identity files still say "same campaign"; the frozen campaign of one run says otherwise.
    frozen = latest / "campaign.toml"
    assert "model_calls = 3\n" in frozen.read_text()
    frozen.write_text(frozen.read_text().replace("model_calls = 3\n", "model_calls = 5\n"))
    # Not pooled unless asked: the one line names the budget that differs.
    assert cli.main(["report", str(earlier), str(latest), "--format", "json"]) == 2
    refused = capsys.readouterr().err
    assert "cannot pool" in refused and "logical budgets: model_calls 3 vs 5" in refused
    assert cli.main(["report", str(earlier), str(latest), "--format", "json", "--pool-anyway"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["fairness"]["findings"] == [
        f"pooled anyway: logical budgets: model_calls 3 vs 5 ({earlier} vs {latest})",
        "logical budget: sessions ran under different limits of model_calls: "
        "fake/model-a: 3 (2), 5 (2); fake/model-b: 3 (2), 5 (2)",
    ]
    assert {m["model"]: m["logical"]["limits"]["model_calls"] for m in report["models"]} == {
        "fake/model-a": [3, 5],
        "fake/model-b": [3, 5],
    }
