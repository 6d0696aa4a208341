"""Bad input: one clear line on stderr, exit 2, no traceback, nothing written or overwritten."""

from __future__ import annotations

import shutil

import pytest
from support import assert_one_line_error, benchtui, campaign_toml, ledger, write_campaign


def _mutations() -> dict[str, tuple[str, str]]:
    """name -> (campaign text, a phrase the error line must contain)."""
    good = campaign_toml()
    return {
        "malformed TOML": (good.replace('name = "t"', 'name = "t'), "malformed TOML"),
        "unknown top-level key": ("paralelism = 3\n" + good, "paralelism"),
        "unknown budget key": (good.replace("enforce = true", "enforce = true\ntotal = 1"), "budget.total"),
        "unknown runner key": (good.replace("latency_s", "latency"), "latency"),
        "unknown model key": (
            good.replace("input_usd_per_mtok = 3.0\n", "input_usd_per_mtok = 3.0\nprice = 1\n", 1),
            "price",
        ),
        "zero budget": (good.replace("total_usd = 0.20", "total_usd = 0"), "total_usd"),
        "negative budget": (good.replace("total_usd = 0.20", "total_usd = -1.0"), "total_usd"),
        "negative price": (
            good.replace("input_usd_per_mtok = 3.0", "input_usd_per_mtok = -3.0", 1),
            "input_usd_per_mtok",
        ),
        "session budget above model cap": (
            good.replace("per_session_usd = 0.03", "per_session_usd = 0.5"),
            "per_session_usd",
        ),
        "duplicate models": (good.replace("fake/model-b", "fake/model-a"), "duplicate model names"),
        "no models": (good.split("[[models]]")[0] + '[environment]\npath = "target"\n', "models"),
        "unknown runner kind": (good.replace('kind = "fake"', 'kind = "nope"'), "unknown runner kind 'nope'"),
        "unknown active runner": (good.replace('runner = "fake"', 'runner = "other"'), "runner 'other'"),
        "missing environment": (good.replace('path = "target"', 'path = "no-such-dir"'), "does not exist"),
        "missing price": (good.replace("output_usd_per_mtok = 15.0\n", "", 1), "output_usd_per_mtok"),
        "session budget above model cap, as money": (
            good.replace("per_session_usd = 0.03", "per_session_usd = 0.5"),
            "per_session_usd $0.50 exceeds a model's cap $0.10",
        ),
        "unknown key binding id": ('ui = { keys = { kil = "x" } }\n' + good, "unknown binding id kil"),
        # The money cap holds one choice of priced tokens per call (issue 20): a model's own
        # kwargs may not ask for more, here or through litellm's extra_body.
        "several choices in a model's kwargs": (_kwargs(good, "{ n = 8 }"), "litellm.n = 8"),
        "best_of in a model's kwargs": (_kwargs(good, "{ best_of = 3 }"), "litellm.best_of = 3"),
        "choices through extra_body": (
            _kwargs(good, "{ extra_body = { n = 4 } }"),
            "litellm.extra_body.n = 4",
        ),
        "hosted web search in a model's kwargs": (
            _kwargs(good, "{ web_search_options = { search_context_size = 'low' } }"),
            "web search is billed per search",
        ),
        "hosted tools in a model's kwargs": (
            _kwargs(good, "{ tools = [{ type = 'web_search' }] }"),
            "hosted tools cannot be priced",
        ),
        "a dearer service tier": (_kwargs(good, "{ service_tier = 'priority' }"), "service_tier"),
    }


def _kwargs(good: str, table: str) -> str:
    return good.replace("output_usd_per_mtok = 15.0\n", f"output_usd_per_mtok = 15.0\nlitellm = {table}\n", 1)


MUTATIONS = _mutations()


@pytest.mark.parametrize("case", list(MUTATIONS))
def test_bad_campaign_is_one_line_exit_2_and_writes_nothing(tmp_path, case):
    write_campaign(tmp_path)
    text, phrase = MUTATIONS[case]
    (tmp_path / "bad.toml").write_text(text)
    done = benchtui("bad.toml", "--no-ui", cwd=tmp_path)
    assert_one_line_error(done, phrase)
    assert not (tmp_path / "runs").exists()


def test_missing_campaign_file(tmp_path):
    assert_one_line_error(benchtui("nope.toml", "--no-ui", cwd=tmp_path), "no such campaign file")


def test_bad_input_never_overwrites_an_existing_run(tmp_path):
    write_campaign(tmp_path)
    assert benchtui("t.toml", "--no-ui", cwd=tmp_path).returncode == 0
    before = {p: p.read_bytes() for p in (tmp_path / "runs").rglob("*") if p.is_file()}
    (tmp_path / "t.toml").write_text(campaign_toml().replace("total_usd = 0.20", "total_usd = 0"))
    for flags in ([], ["--fresh"], ["--resume"]):
        assert_one_line_error(benchtui("t.toml", "--no-ui", *flags, cwd=tmp_path), "total_usd")
    after = {p: p.read_bytes() for p in (tmp_path / "runs").rglob("*") if p.is_file()}
    assert after == before


@pytest.mark.parametrize(
    "garbage", [b"[totals\nspent_usd = ", b"\x00\xff\xfe", b"totals = 3\n[running.x]\nmodel = 1\n"]
)
def test_corrupted_ledger_on_resume(tmp_path, garbage):
    write_campaign(tmp_path, latency=0.0)
    assert benchtui("t.toml", "--no-ui", cwd=tmp_path).returncode == 0
    (tmp_path / "runs/t/ledger.toml").write_bytes(garbage)
    done = benchtui("t.toml", "--no-ui", "--resume", cwd=tmp_path)
    assert_one_line_error(done, "ledger")
    assert (tmp_path / "runs/t/ledger.toml").read_bytes() == garbage


def test_corrupted_journal_on_resume(tmp_path):
    write_campaign(tmp_path)
    assert benchtui("t.toml", "--no-ui", cwd=tmp_path).returncode == 0
    journal = tmp_path / "runs/t/sessions.jsonl"
    lines = journal.read_text().splitlines(keepends=True)
    lines[2] = "{not json\n"
    journal.write_text("".join(lines))
    assert_one_line_error(
        benchtui("t.toml", "--no-ui", "--resume", cwd=tmp_path), "corrupted journal at line 3"
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("total_usd = 0.20", "total_usd = 0.30"), "changed since it started: budget"),
        (
            ("input_usd_per_mtok = 3.0", "input_usd_per_mtok = 4.0"),
            "model fake/model-a changed (input_usd_per",
        ),
        (("sessions_per_model = 5", "sessions_per_model = 4"), "sessions_per_model lowered (5 -> 4"),
        (("cost_usd = 0.03", "cost_usd = 0.02"), "changed since it started: runners"),
    ],
)
def test_identity_change_on_resume_names_the_changed_keys(tmp_path, change, message):
    """What --resume may not change (a campaign grows only by models and sessions added)."""
    write_campaign(tmp_path)
    assert benchtui("t.toml", "--no-ui", cwd=tmp_path).returncode == 0
    before = ledger(tmp_path / "runs/t")
    (tmp_path / "t.toml").write_text(campaign_toml().replace(*change))
    assert_one_line_error(benchtui("t.toml", "--no-ui", "--resume", cwd=tmp_path), message)
    assert ledger(tmp_path / "runs/t") == before


def test_environment_change_refuses_resume(tmp_path):
    write_campaign(tmp_path)
    assert benchtui("t.toml", "--no-ui", cwd=tmp_path).returncode == 0
    (tmp_path / "target" / "README").write_text("someone edited the target\n")
    assert_one_line_error(benchtui("--resume", "--no-ui", cwd=tmp_path), "environment")


def test_parallelism_and_runner_may_change_on_resume(tmp_path):
    path = write_campaign(tmp_path, extra_runners='[runners.other]\nkind = "fake"\ncost_usd = 0.03\n')
    assert benchtui(path.name, "--no-ui", cwd=tmp_path).returncode == 0
    done = benchtui(path.name, "--no-ui", "--resume", "--parallelism", "9", "--runner", "other", cwd=tmp_path)
    assert done.returncode == 0, done.stderr


def test_resume_with_nothing_to_resume(tmp_path):
    assert_one_line_error(benchtui("--resume", "--no-ui", cwd=tmp_path), "nothing to resume")


def test_bad_flags_are_one_line(tmp_path):
    write_campaign(tmp_path)
    assert_one_line_error(benchtui("t.toml", "--resume", "--fresh", cwd=tmp_path), "not allowed with")
    assert_one_line_error(benchtui("t.toml", "--no-ui", "--parallelism", "0", cwd=tmp_path), "parallelism")


def test_invalid_fixture_files_stay_invalid(tmp_path):
    """Kept as fixtures (Harlequin's habit): real-world broken files must keep failing cleanly."""
    write_campaign(tmp_path)
    for fixture in sorted((__import__("pathlib").Path(__file__).parents[1] / "fixtures/bad").glob("*.toml")):
        shutil.copy(fixture, tmp_path / fixture.name)
        done = benchtui(fixture.name, "--no-ui", cwd=tmp_path)
        assert done.returncode == 2 and "Traceback" not in done.stderr, (fixture.name, done.stderr)


@pytest.mark.parametrize(
    ("variable", "value"), [("BENCHTUI_PARALLELISM", "abc"), ("BENCHTUI_BUDGET__ENFORCE", "maybe")]
)
def test_a_bad_environment_variable_is_blamed_not_the_campaign_file(tmp_path, variable, value):
    write_campaign(tmp_path)
    done = benchtui("t.toml", "--no-ui", cwd=tmp_path, env={variable: value})
    assert_one_line_error(done, f"environment variable {variable}='{value}': ")
    assert "t.toml" not in done.stderr and not (tmp_path / "runs").exists()


def test_schema_help_is_help(tmp_path):
    done = benchtui("schema", "--help", cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.startswith("usage: benchtui schema")


@pytest.mark.parametrize("args", [("check", "bad.toml"), ("check", "bad.toml", "--ping")])
def test_check_and_its_ping_refuse_a_model_asking_for_several_choices(tmp_path, args):
    # The ping sends the model's own kwargs: n = 8 would bill eight answers on a one-answer hold.
    write_campaign(tmp_path)
    (tmp_path / "bad.toml").write_text(_kwargs(campaign_toml(), "{ n = 8 }"))
    done = benchtui(*args, cwd=tmp_path)
    assert_one_line_error(done, "litellm.n = 8")
