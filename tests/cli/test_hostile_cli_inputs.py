"""`benchtui verify` and `benchtui report` handed hostile files: deep, huge or special files to
verify, a tampered run to report on, and `-o` aimed at what must never be replaced. Each ends in
one line and exit 2 (never a traceback, a hang or NaN), and nothing is written or left behind."""

from __future__ import annotations

import json
import os
import re
import shutil

import pytest
from support import benchtui
from support.report import run_campaign

from benchtui.cli import main as cli


def one_line_refusal(result) -> str:
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda p: p.write_text("[" * 100_000 + "]" * 100_000), "nested too deeply"),
        (lambda p: p.write_text('{"rule": "r", "source": ' * 5_000 + "1" + "}" * 5_000), "nested too deeply"),
        (lambda p: p.write_bytes(b"") or os.truncate(p, 300 << 20), "too large"),
        (lambda p: os.mkfifo(p), "not a regular file"),
        (lambda p: p.mkdir(), "not a regular file"),
    ],
    ids=["deep-array", "deep-certificate", "huge-sparse", "fifo", "folder"],
)
def test_verify_refuses_deep_huge_and_special_files_in_one_line(tmp_path, make, says):
    path = tmp_path / "cert.json"
    make(path)
    assert says in one_line_refusal(benchtui("verify", path, cwd=tmp_path, timeout=30))


def test_verify_refuses_a_device(tmp_path):
    assert "not a regular file" in one_line_refusal(benchtui("verify", "/dev/zero", cwd=tmp_path, timeout=30))


@pytest.fixture
def finished_run(tmp_path):
    return run_campaign(tmp_path, bugs={"fake/model-a": [0, 2]})


@pytest.mark.parametrize("value", ["inf", "nan", "-inf", "1e308", "-0.5"])
def test_report_refuses_a_tampered_ledger_amount(finished_run, tmp_path, value):
    ledger = finished_run / "ledger.toml"
    text = ledger.read_text()
    ledger.write_text(
        re.sub(r"(\[models\.\"fake/model-a\"\][^\[]*?spent_usd = )[0-9.e-]+", rf"\g<1>{value}", text)
    )
    assert ledger.read_text() != text
    for fmt in ("json", "text", "html"):
        result = benchtui("report", finished_run, "--format", fmt, cwd=tmp_path)
        assert "corrupted ledger" in one_line_refusal(result) and result.stdout == ""


@pytest.mark.parametrize("value", ["1e308", "-1e308", "Infinity", "NaN"])
def test_report_refuses_a_tampered_journal_time(finished_run, tmp_path, value):
    journal = finished_run / "sessions.jsonl"
    lines = journal.read_text().splitlines()
    lines[-1] = re.sub(r'"t": ?[0-9.]+', f'"t": {value}', lines[-1])
    journal.write_text("\n".join(lines) + "\n")
    result = benchtui("report", finished_run, "--format", "json", cwd=tmp_path)
    assert "sessions.jsonl" in one_line_refusal(result)
    assert "NaN" not in result.stdout and "Infinity" not in result.stdout


def test_a_json_report_never_holds_nan(finished_run, capsys, monkeypatch):
    # The last guard: whatever got past the readers, json.dumps refuses to write NaN.
    from benchtui.report import CampaignReport as Report

    to_json = Report.to_json
    monkeypatch.setattr(Report, "to_json", lambda self: {**to_json(self), "spent_usd": float("nan")})
    assert cli.main(["report", str(finished_run), "--format", "json"]) == 2
    out, err = capsys.readouterr()
    assert "NaN" not in out and "not finite" in err


def test_model_names_are_text_in_plots_not_mathtext(tmp_path):
    names = ["fake/$\\\\nosuchmacro$", "fake/b$x^{$"]
    run_dir = run_campaign(tmp_path)
    campaign = run_dir / "campaign.toml"
    text = (
        campaign.read_text()
        .replace('"fake/model-a"', f'"{names[0]}"')
        .replace('"fake/model-b"', f'"{names[1]}"')
    )
    # Renaming the models of a finished run: its journal still names the old ones, so run anew.
    shutil.rmtree(run_dir.parent)
    (tmp_path / "c.toml").write_text(text.replace("[environment]\npath", "[environment]\npath"))
    result = benchtui("c.toml", "--no-ui", "--state-dir", "runs2", cwd=tmp_path, timeout=120)
    assert result.returncode == 0, result.stderr
    out = tmp_path / "r.html"
    result = benchtui("report", "--state-dir", "runs2", "--format", "html", "-o", out, cwd=tmp_path)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert "nosuchmacro" in out.read_text()


def test_report_output_never_replaces_run_files_devices_fifos_or_folders(tmp_path, capsys):
    (tmp_path / "one").mkdir()
    (tmp_path / "other").mkdir()
    one = run_campaign(tmp_path / "one")
    other = run_campaign(tmp_path / "other")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    folder = tmp_path / "folder"
    folder.mkdir()
    link = tmp_path / "link-to-ledger"
    link.symlink_to(other / "ledger.toml")
    before = {p: p.read_bytes() for p in other.rglob("*") if p.is_file()}
    for target in [other / "ledger.toml", other / "new.txt", link, fifo, folder, "/dev/null"]:
        assert cli.main(["report", str(one), "-o", str(target)]) == 2, target
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1, err
    assert {p: p.read_bytes() for p in other.rglob("*") if p.is_file()} == before
    assert fifo.is_fifo() and folder.is_dir() and os.path.exists("/dev/null")
    assert not [p for p in tmp_path.rglob(".*.tmp")], "a refused -o left a temporary file"
    out = tmp_path / "report.json"
    assert cli.main(["report", str(one), "--format", "json", "-o", str(out)]) == 0
    assert json.loads(out.read_text())["models"]
