"""Messages a person can act on: a typo'd key gets a suggestion, a closed pipe is a quiet exit,
`report -o` says what it wrote, `report` without runs says so, `verify` without pred is a set-up
error with the install hint, and `ctl status` of a failed run says it failed and why."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from support import benchtui, write_campaign

from benchtui.core.errors import BadInput
from benchtui.engine import campaign as campaign_file


@pytest.mark.parametrize(
    ("wrong", "right", "suggested"),
    [
        (
            "[budget]\n",
            "[budget]\ntotl_usd = 1\n",
            "budget.totl_usd: unknown key (did you mean `total_usd`?)",
        ),
        ("parallelism = 4", "paralelism = 4", "paralelism: unknown key (did you mean `parallelism`?)"),
        (
            "latency_s = 0.0",
            "latency_sec = 0.0",
            "runners.fake: latency_sec: unknown key (did you mean `latency_s`?)",
        ),
        (
            "input_usd_per_mtok = 3.0\n",
            "input_usd_per_mtok = 3.0\nmax_output_token = 5\n",
            "models.0.max_output_token: unknown key (did you mean `max_output_tokens`?)",
        ),
    ],
)
def test_a_typod_key_gets_the_closest_known_key(tmp_path, wrong, right, suggested):
    path = write_campaign(tmp_path)
    text = path.read_text()
    if wrong == "[budget]\n":
        text = text.replace("[budget]\n", right, 1).replace("total_usd = 0.20\n", "", 1)
    else:
        text = text.replace(wrong, right, 1)
    path.write_text(text)
    with pytest.raises(BadInput) as caught:
        campaign_file.load(path)
    assert suggested in str(caught.value), str(caught.value)


def test_a_key_far_from_any_known_one_gets_no_suggestion(tmp_path):
    path = write_campaign(tmp_path)
    path.write_text(path.read_text().replace("parallelism = 4", "parallelism = 4\nzzqqxx = 1"))
    with pytest.raises(BadInput, match=r"zzqqxx: unknown key$"):
        campaign_file.load(path)


def test_a_closed_pipe_is_a_quiet_exit(tmp_path):
    write_campaign(tmp_path, sessions=3)
    assert benchtui("t.toml", "--no-ui", cwd=tmp_path).returncode == 0
    # `benchtui report | head -1`: the reader stops early; no "Broken pipe", no traceback.
    proc = subprocess.run(
        f"{sys.executable} -m benchtui report --format json | head -c 1",
        shell=True,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        executable="/bin/bash",
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdout == "{" and proc.stderr == "", proc.stderr
    schema = subprocess.run(
        f"set -o pipefail; {sys.executable} -m benchtui schema | head -c 1",
        shell=True,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        executable="/bin/bash",
    )
    assert schema.returncode == 0 and schema.stderr == "", schema.stderr


def test_report_o_says_what_it_wrote(tmp_path):
    write_campaign(tmp_path, sessions=1)
    assert benchtui("t.toml", "--no-ui", cwd=tmp_path).returncode == 0
    done = benchtui("report", "-o", tmp_path / "out.html", "--format", "html", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    size = (tmp_path / "out.html").stat().st_size
    assert (
        done.stdout == ""
        and done.stderr.strip() == f"report: wrote {tmp_path / 'out.html'} (html, {size} bytes, from 1 run)"
    )


def test_report_with_no_runs_says_there_is_none_to_report(tmp_path):
    done = benchtui("report", cwd=tmp_path)
    assert done.returncode == 2
    assert "no run to report" in done.stderr and "nothing to resume" not in done.stderr


def test_verify_without_pred_is_a_setup_error_with_the_install_hint(tmp_path):
    cert = tmp_path / "cert.json"
    cert.write_text('{"rule": "R", "source": {}, "bundle": {}}')
    bare_path = tmp_path / "bin"
    bare_path.mkdir()
    done = benchtui("verify", cert, cwd=tmp_path, env={"PATH": str(bare_path)})
    assert done.returncode == 2, done.stdout + done.stderr
    assert "cargo install --locked --path problemreductions-cli" in done.stderr
    assert "INCONCLUSIVE" not in done.stdout


def test_ctl_status_of_a_failed_run_says_it_failed_and_why_without_its_target(tmp_path):
    write_campaign(
        tmp_path,
        sessions=2,
        total="10",
        extra_runners='[runners.stub]\nkind = "support.stub_runners:Outage"\ndown = ["fake/model-a", "fake/model-b"]\n',
    )
    done = benchtui("t.toml", "--no-ui", "--runner", "stub", cwd=tmp_path, env=_support_path())
    assert done.returncode == 75, done.stderr
    shutil.rmtree(tmp_path / "target")  # a stopped run's status needs no checkout
    status = benchtui("ctl", "status", cwd=tmp_path, env=_support_path())
    assert status.returncode == 0, status.stderr
    head = status.stdout.splitlines()[0]
    assert "failed: 4 of 4 sessions ended in infrastructure errors" in head and "Connection refused" in head


def test_ctl_status_of_a_failed_run_shows_its_reason_as_text(tmp_path):
    # A reason quotes runners' errors, which can carry what an agent wrote: before, ctl status
    # printed the last one raw (an escape sequence ran in the terminal).
    reason = "APIConnectionError: \\u001b]0;owned\\u0007\\u009b2J\\u202eok"
    write_campaign(
        tmp_path,
        sessions=2,
        total="10",
        extra_runners='[runners.stub]\nkind = "support.stub_runners:Outage"\n'
        f'down = ["fake/model-a", "fake/model-b"]\nreason = "{reason}"\n',
    )
    done = benchtui("t.toml", "--no-ui", "--runner", "stub", cwd=tmp_path, env=_support_path())
    assert done.returncode == 75, done.stderr
    status = benchtui("ctl", "status", cwd=tmp_path, env=_support_path())
    head = status.stdout.splitlines()[0]
    assert "APIConnectionError: \ufffd]0;owned\ufffd\ufffd2J\ufffdok" in head, head
    assert not [c for c in status.stdout if c in "\x1b\x07\x9b\u202e"]


def _support_path() -> dict[str, str]:
    """The stub runners are found by dotted path: the tests folder on the subprocess's path."""
    from support import ROOT

    return {"PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "tests"), os.environ.get("PYTHONPATH")]))}


@pytest.mark.parametrize(
    ("sent", "said"), [("SIGTERM", "SIGTERM received: a second SIGTERM"), ("SIGINT", "Ctrl-C again")]
)
def test_the_first_stop_names_what_was_sent_headless(tmp_path, sent, said):
    """A supervisor's SIGTERM is not told to press Ctrl-C; a Ctrl-C (SIGINT) is."""
    import signal

    from support import popen

    write_campaign(tmp_path, sessions=3, latency=1.0, parallelism=1)
    proc = popen("t.toml", "--no-ui", cwd=tmp_path)
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("start "):
            break
    proc.send_signal(getattr(signal, sent))
    out = proc.stdout.read()
    assert proc.wait(timeout=60) == 130
    (stopping,) = [line for line in out.splitlines() if "stopping: no new sessions" in line]
    assert said in stopping
    assert ("Ctrl-C again" in stopping) == (sent == "SIGINT")


def test_help_lists_every_command_before_the_options(capsys):
    from benchtui.cli import main as cli
    from benchtui.cli.stopsignals import StopSignals

    with pytest.raises(SystemExit):
        cli.main_run(["--help"], StopSignals())
    text = capsys.readouterr().out
    assert set(cli.SUMMARIES) == {*cli.COMMANDS, *cli.RUNS}, "a command without its line in `benchtui --help`"
    first_option = text.index("--no-ui  ")
    for name, summary in cli.SUMMARIES.items():
        assert f"  {name:<8} {summary}" in text
        assert text.index(f"  {name:<8} ") < first_option
