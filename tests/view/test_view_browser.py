"""`benchtui view` in the system's headless Chromium, clicked through as a person would: from the
leaderboard to a model, to a session, where the command's output, the REJECTED reason and the
verifier's replay are; the same from the static export opened from disk; and a running campaign
whose new sessions appear without a reload."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from support import last_states, write_campaign
from support.view import SESSION, browser, served, until

SCREENSHOTS = os.environ.get("BENCHTUI_VIEW_SCREENSHOTS")
"""A folder to save the pages' screenshots in (the docs' pictures), when set."""


def shoot(page, name: str) -> None:
    if SCREENSHOTS:
        Path(SCREENSHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SCREENSHOTS) / name), full_page=True)


def click_through(page) -> None:
    """Campaign -> leaderboard's model -> its session -> the story, checking what each shows."""
    leaderboard = page.locator("#leaderboard")
    leaderboard.get_by_role("link", name="openai/scripted-a").click()
    page.wait_for_url(re.compile(r"models/openai_scripted-a\.html"))
    assert page.locator("h1").inner_text() == "model openai/scripted-a"
    shoot(page, "view-model.png")
    page.get_by_role("link", name=SESSION).click()
    page.wait_for_url(re.compile(rf"sessions/{SESSION}/index\.html"))
    timeline = page.locator("ol.timeline")
    assert "Wrote source.json" in timeline.inner_text()  # a command's output as the model saw it
    submits = page.locator("p.submit")
    assert submits.nth(0).inner_text().startswith("submit bad.json REJECTED malformed certificate: not JSON")
    assert "ACCEPTED" in submits.nth(1).inner_text()
    replay = page.locator(".replay").last.inner_text()
    assert "found_by\tbrute-force" in replay and "source_optimum\tMax(2)" in replay
    assert "benchtui verify " in page.locator("#verdicts ~ p.note").first.inner_text()
    shoot(page, "view-session.png")
    page.get_by_role("link", name="whole output").first.click()
    assert "Wrote source.json" in page.locator("#whole").inner_text()


def test_from_the_leaderboard_to_a_session_served(mini_run, tmp_path):
    with served(mini_run, cwd=tmp_path) as url, browser() as chromium:
        page = chromium.new_page(viewport={"width": 1280, "height": 900})
        dialogs = []
        page.on("dialog", lambda d: dialogs.append(d.message))
        answer = page.goto(url)
        assert answer.status == 200 and "script-src 'self'" in answer.headers["content-security-policy"]
        assert page.locator("h1").inner_text().startswith("Campaign mini")
        shoot(page, "view-campaign.png")
        page.goto(url + "sessions.html")
        page.locator("#filters select[name=state]").select_option("done")
        assert page.locator("#shown-count").inner_text() == "1 of 1 sessions"
        shoot(page, "view-sessions.png")
        page.goto(url + "report.html")  # the report links each model to the viewer's page
        page.locator("#leaderboard").get_by_role("link", name="openai/scripted-a").click()
        page.wait_for_url(re.compile(r"models/openai_scripted-a\.html"))
        page.goto(url)
        click_through(page)
        assert not dialogs


def test_the_export_opens_from_disk(mini_run, tmp_path):
    out = tmp_path / "export"
    done = subprocess.run(
        [sys.executable, "-m", "benchtui", "view", str(mini_run), "--export", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "private" in done.stderr and "answer key" in (out / "PRIVATE.txt").read_text()
    shutil.move(str(mini_run), str(tmp_path / "gone"))  # no server and no run dir: the files alone
    try:
        with browser() as chromium:
            page = chromium.new_page()
            requests = []
            page.on("request", lambda r: requests.append(r.url))
            page.goto((out / "index.html").as_uri())
            assert "hold the answer key" in page.locator("#private").inner_text()
            click_through(page)
            page.goto((out / "sessions.html").as_uri() + "?state=error")  # the filter's script runs from disk
            assert page.locator("#shown-count").inner_text() == "0 of 1 sessions"
            assert all(u.startswith("file://") for u in requests), requests
    finally:
        shutil.move(str(tmp_path / "gone"), str(mini_run))


def test_a_running_campaign_shows_new_sessions_without_a_reload(tmp_path):
    # 8 sessions of 4 s: the campaign outlasts the viewer's and Chromium's start on a loaded machine.
    # Its budget fits all 8 ($0.03 each): a session skipped for money would never show done.
    campaign = write_campaign(
        tmp_path, sessions=8, parallelism=1, latency=4.0, models=("fake/model-a",), total="0.30"
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "benchtui", str(campaign), "--no-ui", "--state-dir", str(tmp_path / "runs")],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    run_dir = tmp_path / "runs" / "t"
    try:
        until(lambda: (run_dir / "control.sock").exists(), "the campaign to start")
        with served(run_dir, cwd=tmp_path) as url, browser() as chromium:
            page = chromium.new_page()
            page.goto(url + "sessions.html")
            assert page.locator("body").get_attribute("data-live")
            page.evaluate("window.loadedOnce = true")  # gone if the page were reloaded
            last = page.locator("#rows tr").last.locator("td.state")
            assert last.inner_text() in ("pending", "running")
            last.filter(has_text="done").wait_for(timeout=120_000)
            assert page.evaluate("window.loadedOnce") is True
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=30)
    states = [rec["state"] for rec in last_states(run_dir).values()]
    assert states == ["done"] * 8, states
