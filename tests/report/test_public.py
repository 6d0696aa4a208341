"""`benchtui report --public`: aggregates per model and nothing that names a buggy rule, a
certificate, an instance, a hypothesis, a prompt, an observation or a trajectory; a guard checks
the very bytes written (and `--check-public FILE`), so a leak or a hand edit is refused."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import trio
from support import benchtui
from support.mini import FIND_BUG, RULE, pred_on_path, run_campaign, write_campaign
from support.real_parts import require
from support.report import run_campaign as run_fake
from support.scripted_llm import Reply, ScriptedLLM

from benchtui.cli import main as cli
from benchtui.engine.shortlist import INVENTORY
from benchtui.report import build, public, public_guard
from benchtui.report.browser import dump_dom, find_chromium, screenshot
from benchtui.report.public_html import embedded
from benchtui.report.public_html import render as render_page
from benchtui.runners.mini.profile import DEFAULT_TEMPLATES

MARKERS = ("MARKER_PROMPT_7f3a", "MARKER_OBS_c41e", "MARKER_CERT_9b2d", "MARKER_HYP_e5a0")
CERTIFICATE_WORDS = ("source", "bundle", "target_config", "violation", "claimed_source_solution", "note")


@pytest.fixture(scope="module")
def hunted(tmp_path_factory) -> Path:
    """A real mini-swe-agent session against the scripted server: its prompt carries a marker (the
    templates), so does what its command printed (an observation) and its certificate's note; the
    stand-in pred confirms the certificate (a verified bug in RULE)."""
    tmp_path = tmp_path_factory.mktemp("hunted")
    with pytest.MonkeyPatch.context() as monkeypatch:
        pred_on_path(tmp_path, monkeypatch)
        monkeypatch.setenv("SCRIPTED_API_KEY", "sk-test-scripted-0000")
        templates = tmp_path / "templates.yaml"
        text = DEFAULT_TEMPLATES.read_text()
        templates.write_text(
            text.replace("instance_template: |\n", f"instance_template: |\n  {MARKERS[0]}\n", 1)
        )
        steps = [Reply(f"echo {MARKERS[1]}", 900, 20), *FIND_BUG]
        steps[-2] = Reply(steps[-2].command.replace("vertex 0 is copied", MARKERS[2]), 1900, 300)
        with ScriptedLLM(steps) as llm:
            path = write_campaign(tmp_path, llm.url, runner={"templates": str(templates)})
            prep, _ = trio.run(run_campaign, path, tmp_path / "runs")
    return prep.run_dir


def everything_in(run_dir: Path) -> str:
    return "\n".join(
        p.read_text(errors="replace") for p in run_dir.rglob("*") if p.is_file() and p.name != ".lock"
    )


def test_the_markers_are_in_the_run_and_none_reaches_the_public_board(hunted, tmp_path, capsys):
    inside = everything_in(hunted)
    for marker in MARKERS[:3]:
        assert marker in inside  # planted where the answer key lives: trajectory, evidence, outcomes
    assert cli.main(["report", str(hunted), "--format", "json"]) == 0
    full = capsys.readouterr().out
    assert RULE in full and MARKERS[2] not in full  # the full report names the bug's rule
    for fmt in ("json", "html"):
        out = tmp_path / f"board.{fmt}"
        assert cli.main(["report", str(hunted), "--public", "--format", fmt, "-o", str(out)]) == 0
        text = out.read_text()
        for secret in (*MARKERS, RULE, "MaximumIndependentSet", "MinimumVertexCover", *CERTIFICATE_WORDS):
            assert secret not in text, (fmt, secret)
        assert cli.main(["report", "--check-public", str(out), str(hunted)]) == 0
    board = json.loads((tmp_path / "board.json").read_text())
    (row,) = board["models"]
    assert (row["bugs"], row["judged_by"], row["trials"], row["first_attempt_accepts"]) == (
        1,
        "verifier",
        1,
        1,
    )
    assert row["programs"]["pred"][0].startswith("pred ") and "@sha256:" in row["programs"]["pred"][0]
    assert row["runners"] == ["mini-swe-agent"] and row["benchtui"] and row["dates"]["first"]
    assert row["library_commits"] and row["tokens"] > 0 and row["spent_usd"] > 0


SHORTLIST = """name = "s"
runner = "fake"

[protocol]
kind = "shortlist"
shortlist_size = 2
triage = {{ model_calls = 8, shell_actions = 12 }}

[budget]
total_usd = 10
per_session_usd = 0.05

[runners.fake]
kind = "fake"
cost_usd = 0.03
rules = {rules}
bug_sessions = {{ "fake/model-a" = [0] }}

[[models]]
name = "fake/model-a"
input_usd_per_mtok = 3.0
output_usd_per_mtok = 15.0

[environment]
path = "target"
"""


def test_hypotheses_never_reach_the_public_board(tmp_path, monkeypatch):
    """A shortlist campaign: its triage's hypotheses (they name the rules they suspect) stay out;
    bugs@K is on the board, as counts."""
    rules = [f"{MARKERS[3]}_R{i} -> T{i}" for i in range(4)]
    (tmp_path / "target").mkdir()
    (tmp_path / "s.toml").write_text(SHORTLIST.format(rules=json.dumps(rules)))
    assert benchtui("s.toml", "--no-ui", cwd=tmp_path).returncode == 0
    run_dir = tmp_path / "runs" / "s"
    assert f"scripted: {rules[0]} looks fragile" in everything_in(run_dir)  # the hypothesis, in the journal
    out = tmp_path / "board.html"
    assert cli.main(["report", str(run_dir), "--public", "-o", str(out)]) == 0
    assert MARKERS[3] not in out.read_text() and "fragile" not in out.read_text()
    (row,) = public.board(build([run_dir])).models
    assert row.bugs_at == {"bugs@10": 1, "bugs@25": 1, "bugs@50": 1}
    # The guard knows the shortlist's words (the rule inventory put aside: they come from it too)
    (run_dir / INVENTORY).rename(tmp_path / "inventory")
    leaked = public.board(build([run_dir]))
    hypotheses = [line for line in everything_in(run_dir).split('"') if line.endswith("looks fragile")]
    update = {"runners": [hypotheses[-1]]}
    leaked = leaked.model_copy(update={"models": [row.model_copy(update=update)]})
    monkeypatch.setattr("benchtui.cli.public.board", lambda report: leaked)
    assert cli.main(["report", str(run_dir), "--public", "-o", str(tmp_path / "leak.json")]) == 2
    assert not (tmp_path / "leak.json").exists()


@pytest.fixture
def fake_run(tmp_path) -> Path:
    return run_fake(tmp_path, bugs={"fake/model-a": [0, 2], "fake/model-b": [1]}, tasks=["rA1", "rB2"], n=4)


def test_the_guard_refuses_a_leak_on_the_bytes_it_writes_and_writes_nothing(
    fake_run, tmp_path, capsys, monkeypatch
):
    made = public.board

    def leaky(report):  # a bug in how the board is built: a rule name where a runner kind goes
        row = made(report).models[0]
        return made(report).model_copy(
            update={"models": [row.model_copy(update={"runners": ["rA1"]}), *made(report).models[1:]]}
        )

    monkeypatch.setattr("benchtui.cli.public.board", leaky)
    out = tmp_path / "board.json"
    assert cli.main(["report", str(fake_run), "--public", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "refused to write the public board" in err and "'rA1'" in err and err.count("\n") == 1
    assert not out.exists()


def board_text(fake_run: Path, fmt: str, capsys) -> str:
    assert cli.main(["report", str(fake_run), "--public", "--format", fmt]) == 0
    return capsys.readouterr().out


TAMPERED_JSON = {
    "a certificate added": (
        lambda b: {**b, "models": [{**b["models"][0], "certificate": {"rule": "x"}}, *b["models"][1:]]},
        "holds 'certificate'",
    ),
    "a key the schema has not": (
        lambda b: {**b, "models": [{**b["models"][0], "rules_found": 2}, *b["models"][1:]]},
        "not the board's schema at models.0.rules_found",
    ),
    "a rule where a model goes": (
        lambda b: {**b, "models": [{**b["models"][0], "model": "rA1"}, *b["models"][1:]]},
        "names what its runs know (a rule, a task or a text of theirs): 'rA1'",
    ),
    "markup in a model name": (
        lambda b: {**b, "models": [{**b["models"][0], "model": "<b>x</b>"}, *b["models"][1:]]},
        "not the board's schema at models.0.model",
    ),
}


@pytest.mark.parametrize("case", list(TAMPERED_JSON))
def test_the_guard_refuses_a_hand_tampered_json_board(fake_run, tmp_path, capsys, case):
    edit, message = TAMPERED_JSON[case]
    board = json.loads(board_text(fake_run, "json", capsys))
    path = tmp_path / "board.json"
    path.write_text(json.dumps(edit(board)))
    assert cli.main(["report", "--check-public", str(path), str(fake_run)]) == 2
    err = capsys.readouterr().err
    assert f"report: {path} is not publishable: " in err and message in err and err.count("\n") == 1


def test_the_guard_refuses_a_hand_edited_page(fake_run, tmp_path, capsys):
    page = board_text(fake_run, "html", capsys)
    path = tmp_path / "board.html"
    path.write_text(page)
    assert cli.main(["report", "--check-public", str(path), str(fake_run)]) == 0
    capsys.readouterr()
    for edited in (
        page.replace("</table>", "</table><p>rB2 is where it breaks</p>"),  # a line of text added
        page.replace('"fake/model-a"', '"rA1"'),  # the data changed, the table not
        page.replace("fake/model-a</td>", "fake/model-a rB2</td>"),  # the table changed, the data not
    ):
        assert edited != page
        path.write_text(edited)
        assert cli.main(["report", "--check-public", str(path)]) == 2
        assert "not publishable" in capsys.readouterr().err
    # The page re-rendered from its own data is what was written: a whole page passes.
    data = embedded(page)
    assert data is not None and render_page(public.Board.model_validate_json(data)) == page


def test_the_board_has_the_aggregates_per_model(fake_run, capsys):
    board = json.loads(board_text(fake_run, "json", capsys))
    assert board["board"] == "benchtui public board" and board["ranked_by"] == "bugs"
    rows = {row["model"]: row for row in board["models"]}
    a = rows["fake/model-a"]
    assert a["bugs"] == 1 and a["bug_rate"]["hits"] == 2 and a["judged_by"] == "runner"  # rA1, twice
    assert a["cap_hits"] == {"skipped_budget": 0, "ended_by_a_counter": 0, "by_counter": {}}
    assert a["runners"] == ["fake"] and a["dates"]["first"] <= a["dates"]["last"]
    assert board["fairness"] == {"fair": True, "findings": 0}
    assert {(c["a"], c["b"], c["test"]) for c in board["comparisons"]} == {
        ("fake/model-a", "fake/model-b", "mcnemar_exact")
    }
    assert public_guard.check_json(json.dumps(board)) == []


def test_public_is_json_or_html(fake_run, capsys):
    assert cli.main(["report", str(fake_run), "--public", "--format", "text"]) == 2
    assert "--public writes json or html" in capsys.readouterr().err


def test_the_public_page_opens_offline_in_headless_chromium(fake_run, tmp_path, capsys):
    """The page as a reader's browser shows it: the leaderboard drawn from its embedded board,
    no script run and nothing fetched (the page's policy forbids any request)."""
    require("headless Chromium", find_chromium(), "install Debian's `chromium` (.ci/run does)")
    page = tmp_path / "board.html"
    page.write_text(board_text(fake_run, "html", capsys))
    source = page.read_text()
    assert "default-src 'none'" in source
    assert not re.search(r"<script(?![^>]*application/json)|<link|<img|@import|url\(", source, re.IGNORECASE)
    dom = dump_dom(page)
    assert "fake/model-a" in dom and "fake/model-b" in dom
    assert "rA1" not in dom and "rB2" not in dom  # the tasks, and so the buggy rule, are not shown
    png = screenshot(page, tmp_path / "board.png", size=(1000, 800))
    from PIL import Image

    with Image.open(png) as image:
        histogram = image.convert("L").histogram()
    assert sum(histogram[:235]) / sum(histogram) > 0.01, "the page rendered blank"


ESCAPED = {
    "plain": "fake/certificate-bundle",
    "JSON escapes": "fake/\\u0063ertificate-\\u0062undle",
    "upper-case escapes": "fake/\\u0043ERTIFICATE-\\u0042UNDLE",
    "an HTML entity inside": "fake/&#99;ertificate-&#x62;undle",
    "an escaped entity": "fake/\\u0026#99;ertificate-b&#117;ndle",
}


@pytest.mark.parametrize("case", list(ESCAPED))
def test_the_guard_decodes_what_it_checks_before_looking_for_the_answer_keys_words(
    fake_run, tmp_path, capsys, case
):
    """A forbidden word is refused however it is spelled: JSON escapes, HTML entities, one
    inside the other; the issue's own example is the second case."""
    board = json.loads(board_text(fake_run, "json", capsys))
    text = json.dumps(board).replace('"fake/model-a"', f'"{ESCAPED[case]}"', 1)
    assert ESCAPED[case] in text
    path = tmp_path / "board.json"
    path.write_text(text)
    assert cli.main(["report", "--check-public", str(path)]) == 2
    err = capsys.readouterr().err
    assert "holds 'certificate'" in err and "holds 'bundle'" in err


def test_an_escaped_word_in_a_page_is_refused_as_the_word():
    for spelled in ("&#99;ertificate", "&amp;#99;ertificate", "\\u0063ertificate", "&#92;u0063ertificate"):
        problems = public_guard.check_html(f"<html><body><p>{spelled}</p></body></html>")
        assert "holds 'certificate': a field of the answer key" in problems, spelled
