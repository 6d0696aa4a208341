"""Item 7 of issue 15: everything that becomes a file name or a number is checked up front:
exit 2, one line, nothing written, nothing paid."""

from __future__ import annotations

import pytest
from support import benchtui, campaign_toml, write_campaign
from support.hostile import assert_one_line, run_cli

GOOD = campaign_toml()


def model(name: str) -> str:
    return GOOD.replace("fake/model-a", name)


CASES = {
    "model name of 300 characters": (model("m" * 300), "at most 200"),
    "model name of 201 bytes": (model("é" * 100 + "x"), "201 bytes"),
    "NUL in a model name": (model("a\\u0000b"), "control character '\\x00'"),
    "newline in a model name": (model("a\\nb"), "control character '\\n'"),
    "escape code in a model name": (model("a\\u001b[2Jb"), "control character '\\x1b'"),
    "run name of 300 characters": (GOOD.replace('name = "t"', f'name = "{"t" * 300}"'), "at most 200"),
    "sessions_per_model = 10**12": (
        GOOD.replace("sessions_per_model = 5", "sessions_per_model = 1000000000000"),
        "sessions_per_model",
    ),
    "repeats = 10**12": (
        GOOD.replace("sessions_per_model = 5", 'tasks = ["a"]\nrepeats = 1000000000000'),
        "repeats",
    ),
    "tasks x repeats x models over the bound": (
        GOOD.replace("sessions_per_model = 5", 'tasks = ["a", "b"]\nrepeats = 300000'),
        "more than 1,000,000 sessions",
    ),
    "NUL in a task": (GOOD.replace("sessions_per_model = 5", 'tasks = ["a\\u0000"]'), "a task name"),
    "parallelism = 10**21": (
        GOOD.replace("parallelism = 4", "parallelism = 1000000000000000000000"),
        "10000",
    ),
    "a budget past exact money": (GOOD.replace("total_usd = 0.20", "total_usd = 1e30"), "total_usd"),
    "a price past exact money": (
        GOOD.replace("input_usd_per_mtok = 3.0", "input_usd_per_mtok = 1e300", 1),
        "input_usd_per_mtok",
    ),
    "max_output_tokens = 10**23": (
        GOOD.replace(
            "output_usd_per_mtok = 15.0", "output_usd_per_mtok = 15.0\nmax_output_tokens = 10" + "0" * 22, 1
        ),
        "max_output_tokens",
    ),
    "a session share that rounds to $0": (
        GOOD.replace("per_session_usd = 0.03\n", "").replace("total_usd = 0.20", "total_usd = 0.000000001"),
        "rounds to $0",
    ),
    "a negative wall_time_s": (GOOD.replace("latency_s", "wall_time_s = -1\nlatency_s"), "wall_time_s"),
    "wall_time_s = nan": (GOOD.replace("latency_s", "wall_time_s = nan\nlatency_s"), "wall_time_s"),
    "latency_s = inf": (GOOD.replace("latency_s = 0.0", "latency_s = inf"), "latency_s"),
    "a control character in a runner profile name": (
        GOOD.replace("[runners.fake]", '[runners."fa\\u0007ke"]\nkind = "fake"\n[runners.fake]'),
        "runner profile name",
    ),
}


@pytest.mark.parametrize("case", list(CASES), ids=[c.replace(" ", "_") for c in CASES])
def test_a_bad_name_or_number_is_one_line_exit_2_and_nothing_written(tmp_path, capsys, case):
    write_campaign(tmp_path)
    text, phrase = CASES[case]
    (tmp_path / "t.toml").write_text(text)
    assert_one_line(*run_cli(capsys, tmp_path, "t.toml", "--no-ui"), phrase)
    assert not (tmp_path / "runs").exists()
    assert not (tmp_path / "calls.jsonl").exists()  # nothing paid


@pytest.mark.parametrize(
    ("variable", "value", "phrase"),
    [
        ("BENCHTUI_MODELS", "{x", "BENCHTUI_MODELS: cannot parse"),
        ("BENCHTUI_BUDGET", "{x", "BENCHTUI_BUDGET: cannot parse"),
        ("BENCHTUI_RUNNERS", "[" * 100_000, "cannot parse"),
        ("BENCHTUI_PARALLELISM", "many", "environment variable BENCHTUI_PARALLELISM"),
        ("BENCHTUI_NAME", "../escape", "environment variable BENCHTUI_NAME"),
    ],
)
def test_a_malformed_environment_value_is_one_line_exit_2(
    tmp_path, capsys, monkeypatch, variable, value, phrase
):
    write_campaign(tmp_path)
    monkeypatch.setenv(variable, value)
    assert_one_line(*run_cli(capsys, tmp_path, "t.toml", "--no-ui"), phrase)
    assert not (tmp_path / "runs").exists()


def test_a_name_at_the_bound_runs(tmp_path, capsys):
    """The bounds are not too tight: 200-byte run and model names make a working run dir."""
    write_campaign(tmp_path, name="r" * 200, models=("m" * 200, "fake/model-b"), sessions=1, total="1")
    done = benchtui(f"{'r' * 200}.toml", "--no-ui", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "runs" / ("r" * 200) / "results" / f"{'m' * 200}.json").exists()
