"""`benchtui view` as a server and a command: every page under its secret prefix, answered only
to its own address (DNS rebinding), with its security headers; paths that are no page are 404;
an unchanged page is a 304; bad input is one line (exit 2), an export never overwrites."""

from __future__ import annotations

import http.client
from urllib.parse import urlsplit

from support import assert_one_line_error, benchtui
from support.report import run_campaign
from support.view import served

from benchtui.report import build
from benchtui.report.html import Links, render


def get(url: str, path: str = "", headers: dict[str, str] | None = None) -> http.client.HTTPResponse:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    connection.request("GET", parts.path + path if not path.startswith("/") else path, headers=headers or {})
    return connection.getresponse()


def test_pages_only_under_the_secret_prefix_and_only_to_the_viewers_own_address(tmp_path):
    run_dir = run_campaign(tmp_path, n=2)
    with served(run_dir, cwd=tmp_path) as url:
        token = urlsplit(url).path.strip("/")
        assert len(token) >= 20
        page = get(url)
        body = page.read().decode()
        assert page.status == 200 and "Campaign t" in body
        assert page.headers["Content-Security-Policy"].startswith("default-src 'none'; script-src 'self'")
        assert (
            page.headers["X-Frame-Options"] == "DENY" and page.headers["X-Content-Type-Options"] == "nosniff"
        )
        assert get(url, "/").status == 404 and get(url, "/index.html").status == 404  # no token, no page
        assert get(url, f"/{token[:-1]}/index.html").status == 404
        # A web page the browser visits, served from a name rebound to 127.0.0.1, is refused.
        assert get(url, headers={"Host": "attacker.example"}).status == 421
        assert get(url, headers={"Host": f"attacker.example:{urlsplit(url).port}"}).status == 421
        assert get(url, headers={"Host": f"localhost:{urlsplit(url).port}"}).status == 200
        for path in (
            "sessions/../index.html",
            "sessions/..%2F..%2Fledger.toml/index.html",
            "sessions/fake_model-a-0000/files/..%2Fledger.toml.html",
            "sessions/fake_model-a-0000/files/ledger.toml.html",
            "sessions/no-such-session/index.html",
            "campaign.toml",
            "static/../../campaign.toml",
        ):
            answer = get(url, path)
            assert answer.status == 404, (path, answer.status)
            assert "budget" not in answer.read().decode()
        tag = get(url, "sessions.html").headers["ETag"]
        assert get(url, "sessions.html", {"If-None-Match": tag}).status == 304


def test_bad_input_is_one_line_and_an_export_overwrites_nothing(tmp_path):
    run_dir = run_campaign(tmp_path, n=1)
    assert_one_line_error(
        benchtui("view", run_dir, "--host", "0.0.0.0", cwd=tmp_path), "not a loopback address"
    )
    assert_one_line_error(benchtui("view", tmp_path / "nowhere", cwd=tmp_path), "nowhere: does not exist")
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "notes.txt").write_text("mine")
    assert_one_line_error(benchtui("view", run_dir, "--export", kept, cwd=tmp_path), "is not empty")
    assert (kept / "notes.txt").read_text() == "mine" and len(list(kept.iterdir())) == 1
    assert_one_line_error(
        benchtui("view", run_dir, "--export", run_dir / "export", cwd=tmp_path), "inside the run dir"
    )
    assert not (run_dir / "export").exists()
    done = benchtui("view", run_dir, "--export", tmp_path / "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out" / "sessions" / "fake_model-a-0000" / "index.html").is_file()
    assert not [p for p in tmp_path.iterdir() if "benchtui-export" in p.name]  # no staging left


def test_several_runs_each_in_a_folder_of_its_own(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = run_campaign(tmp_path / "a", n=1)
    second = run_campaign(tmp_path / "b", n=1)
    done = benchtui("view", first, second, "--export", tmp_path / "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    index = (tmp_path / "out" / "index.html").read_text()
    assert 'href="t/index.html"' in index and 'href="t-2/index.html"' in index
    assert (tmp_path / "out" / "t-2" / "sessions" / "fake_model-b-0000" / "index.html").is_file()


def test_the_html_report_links_models_and_cells_to_the_viewer(tmp_path):
    run_dir = run_campaign(tmp_path, tasks=["r1", "r2"], n=2)
    report = build([run_dir])
    plain = render(report)
    assert "<a " not in plain  # `benchtui report --format html` alone links nowhere
    linked = render(report, Links(model=lambda m: f"models/{m}.html", cell=lambda m, t: f"cell/{m}/{t}"))
    assert '<a href="models/fake/model-a.html">fake/model-a</a>' in linked
    assert '<a href="cell/fake/model-b/r2">' in linked


def test_a_matrix_cell_links_to_its_session_or_its_sessions(tmp_path):
    from benchtui.view.pages import Viewer

    one = run_campaign(tmp_path, tasks=["r1", "r2"], n=2)  # one session a cell
    page = Viewer([one]).page("index.html").body.decode()
    matrix = page[page.index('id="matrix"') :]
    assert 'href="sessions/fake_model-a-0001/index.html"' in matrix  # model a, task r2
    (tmp_path / "more").mkdir()
    (tmp_path / "more" / "target").mkdir()
    several = run_campaign(tmp_path / "more", tasks=["r1", "r2"], n=4)  # two repeats a cell
    page = Viewer([several]).page("report.html").body.decode()
    assert 'href="sessions.html?model=fake%2Fmodel-b&amp;task=r2"' in page
