"""A session whose agent printed markup, scripts, `javascript:` links, ANSI and bidi controls and
50 MB of output: in the browser nothing of it runs (no dialog, no request to any other origin),
every page still opens, and the viewer's Content-Security-Policy blocks what escaping would not."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from support.report import run_campaign
from support.view import browser, served

HOSTILE = (
    '<script>alert("script")</script><img src=x onerror="alert(\'img\')">'
    "<a href=\"javascript:alert('link')\">click me</a><svg onload=\"alert('svg')\"></svg>"
    '<img src="http://127.0.0.2:9/beacon.png"><link rel="stylesheet" href="http://127.0.0.3:9/x.css">'
    '<iframe src="http://127.0.0.4:9/"></iframe><meta http-equiv="refresh" content="0;url=http://127.0.0.5:9/">'
    "\x1b[31mred\x1b]0;a title\x07 \u202egnp.exe\u202c \x00 {{ 7*7 }}"
)
OTHER_ORIGINS = ("127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5")
HUGE = 50 * 1024 * 1024


def hostile_run(tmp_path):
    run_dir = run_campaign(tmp_path, bugs={"fake/model-a": [0]}, n=2)
    session = run_dir / "sessions" / "fake_model-a-0000"
    session.mkdir(parents=True, exist_ok=True)
    huge = (HOSTILE + "\n") * (HUGE // (len(HOSTILE) + 1))
    messages = [
        {"role": "system", "content": HOSTILE},
        {"role": "user", "content": HOSTILE},
        {"role": "assistant", "content": HOSTILE, "extra": {"actions": [{"command": HOSTILE}]}},
        # What the model saw is the observation policy's head and tail; the runner keeps the rest.
        {"role": "tool", "content": huge[:20_000] + HOSTILE, "extra": {"raw_output": huge}},
        {"role": "exit", "content": HOSTILE},
    ]
    (session / "attempt-1.traj.json").write_text(json.dumps({"info": {}, "messages": messages}))
    steps = [
        {
            "kind": "generation",
            "attempt": 1,
            "n": 1,
            "cost_usd": HOSTILE,
            "worst_case": HOSTILE,
            "charged": True,
        },
        {"kind": "tool", "attempt": 1, "argv": [HOSTILE], "granted": False, "refused_by": HOSTILE},
        {"kind": "submit", "attempt": 1, "file": HOSTILE, "verdict": "rejected", "reason": HOSTILE},
        {"kind": "action", "attempt": 1, "n": 1, "command": HOSTILE, "saved": HOSTILE},
    ]
    (session / "evidence.jsonl").write_text("".join(json.dumps(s) + "\n" for s in steps))
    verdict = {"status": "rejected", "reason": HOSTILE, "details": {HOSTILE: HOSTILE, "found_by": HOSTILE}}
    (session / "attempt-1.certificates.json").write_text(
        json.dumps([{"certificate": {"rule": HOSTILE}, "verdict": verdict}])
    )
    (session / "attempt-1.worker.log").write_text(HOSTILE * 1000)
    return run_dir


def visit_everything(page, start: str, requests: list[str]) -> None:
    page.goto(start + "sessions/fake_model-a-0000/index.html")
    story = page.locator("#story").inner_text()
    assert '<script>alert("script")</script>' in story  # shown as text, exactly
    assert "␛[31m" in story and "⟨U+202E⟩" in story and "\u202e" not in story
    page.locator("#next-page").click()  # a message larger than a page's share starts the next page
    assert page.evaluate("1 + 1") == 2  # responsive after a 50 MB message
    assert "⟨U+202E⟩" in page.locator("ol.timeline").inner_text()
    page.get_by_role("link", name="whole output").click()
    assert page.locator("#whole").inner_text().startswith('<script>alert("script")</script>')
    assert "part 1 of " in page.locator(".pager").first.inner_text()
    page.go_back()
    page.get_by_role("link", name="attempt-1.worker.log").click()
    assert "onerror" in page.locator("#whole").inner_text()
    for name in ("index.html", "sessions.html", "report.html"):
        page.goto(start + name)


def test_nothing_an_agent_printed_runs_served(tmp_path):
    run_dir = hostile_run(tmp_path)
    with served(run_dir, cwd=tmp_path) as url, browser() as chromium:
        page = chromium.new_page()
        dialogs, requests = [], []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.on("request", lambda r: requests.append(r.url))
        answer = page.goto(url + "sessions/fake_model-a-0000/index.html")
        csp = answer.headers["content-security-policy"]
        assert "default-src 'none'" in csp and "script-src 'self'" in csp and "'unsafe-inline'" not in csp
        visit_everything(page, url, requests)
        page.goto(url + "sessions/fake_model-a-0000/index.html")
        with pytest.raises(Exception, match="Content Security Policy|Refused|CSP"):
            page.add_script_tag(content="window.injected = true")  # an inline script: refused
        assert page.evaluate("window.injected") is None
        assert not dialogs, dialogs
        origin = url.split("/", 3)[:3]
        strangers = [r for r in requests if r.split("/", 3)[:3] != origin]
        assert not strangers and not any(o in r for r in requests for o in OTHER_ORIGINS), strangers


def test_nothing_an_agent_printed_runs_from_an_export(tmp_path):
    run_dir = hostile_run(tmp_path)
    out = tmp_path / "export"
    done = subprocess.run(
        [sys.executable, "-m", "benchtui", "view", str(run_dir), "--export", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    with browser() as chromium:
        page = chromium.new_page()
        dialogs, requests = [], []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.on("request", lambda r: requests.append(r.url))
        visit_everything(page, out.as_uri() + "/", requests)
        assert not dialogs, dialogs
        assert all(r.startswith("file://") for r in requests), [
            r for r in requests if not r.startswith("file://")
        ]
