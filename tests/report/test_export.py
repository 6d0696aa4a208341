"""`benchtui export` attacked: whatever is wrong in the run dir or the output folder is one line,
exit 2, and nothing written or overwritten; a folder appears whole or not at all."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from support import submissions as S
from support import top50_stub

from benchtui.cli.main import main
from benchtui.report import export as export_module
from benchtui.report import top50_runs

RUNS = {"vendor/model-a": {"accepted": {"3": 1, "12": 2}}, "vendor/model-b#1": {"accepted": {"40": 1}}}


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return top50_stub.run(tmp_path_factory.mktemp("made"), RUNS)


def copy_of(run_dir: Path, tmp_path: Path) -> Path:
    import shutil

    return Path(shutil.copytree(run_dir, tmp_path / "run", symlinks=True))


def refused(capsys: pytest.CaptureFixture[str], argv: list[str], says: str) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("benchtui: ") and "\n" not in err, err
    assert says in err, err


def nothing_in(folder: Path) -> None:
    """No folder written and no staging folder left beside it."""
    assert not folder.exists()
    assert not [p for p in folder.parent.iterdir() if p.name.startswith(f".{folder.name}.export-")]


def test_export_writes_the_manifest_beside_the_submissions(made: Path, tmp_path: Path) -> None:
    assert main(["export", str(made), "--submissions", str(tmp_path / "out")]) == 0
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["manifest.json", "submissions"]
    entries = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert [set(e) for e in entries] == [{"model", "session", "attempt", "label", "sha256", "file"}] * 4
    assert all(
        not Path(e["file"]).is_absolute() and (tmp_path / "out" / e["file"]).is_file() for e in entries
    )
    assert len(list((tmp_path / "out" / "submissions").iterdir())) == 4


def test_an_empty_folder_may_be_written_into(made: Path, tmp_path: Path) -> None:
    (tmp_path / "board").mkdir()
    assert main(["export", str(made), "--board", str(tmp_path / "board")]) == 0
    assert len(list((tmp_path / "board").glob("*.json"))) == 4


def test_a_folder_with_anything_in_it_is_refused_and_kept(
    made: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "mine.txt").write_text("keep me")
    refused(capsys, ["export", str(made), "--submissions", str(tmp_path / "out")], "exists and is not empty")
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["mine.txt"]
    (tmp_path / "file").write_text("x")
    refused(capsys, ["export", str(made), "--board", str(tmp_path / "file")], "is not a folder")
    assert (tmp_path / "file").read_text() == "x"


def test_a_second_export_into_the_same_folder_is_refused(
    made: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["export", str(made), "--submissions", str(tmp_path / "out")]) == 0
    before = {p: p.read_bytes() for p in (tmp_path / "out").rglob("*") if p.is_file()}
    capsys.readouterr()
    refused(capsys, ["export", str(made), "--submissions", str(tmp_path / "out")], "not empty")
    assert {p: p.read_bytes() for p in (tmp_path / "out").rglob("*") if p.is_file()} == before


def test_a_link_as_the_output_folder_is_refused(
    made: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "out").symlink_to(tmp_path / "elsewhere")
    refused(capsys, ["export", str(made), "--board", str(tmp_path / "out")], "symbolic link")
    assert not list((tmp_path / "elsewhere").iterdir())


def test_the_export_never_writes_into_a_run_dir(
    made: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = copy_of(made, tmp_path)
    refused(capsys, ["export", str(run), "--submissions", str(run / "export")], "inside the run dir")
    nothing_in(run / "export")


def test_both_folders_are_checked_before_either_is_written(
    made: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "board").mkdir()
    (tmp_path / "board" / "x.json").write_text("{}")
    refused(
        capsys,
        ["export", str(made), "--submissions", str(tmp_path / "out"), "--board", str(tmp_path / "board")],
        "not empty",
    )
    nothing_in(tmp_path / "out")


@pytest.mark.parametrize("argv", [[], ["--submissions", "same", "--board", "same"]])
def test_nothing_or_one_folder_twice_is_refused(
    made: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    os.chdir(tmp_path)
    refused(capsys, ["export", str(made), *argv], "--submissions")


def _session_file(run: Path) -> Path:
    return run / top50_runs.submission_path("vendor_model-a-0000", 1)


def test_a_linked_session_folder_is_refused(
    made: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = copy_of(made, tmp_path)
    sessions = run / "sessions"
    (sessions / "vendor_model-a-0000").rename(tmp_path / "outside")
    (sessions / "vendor_model-a-0000").symlink_to(tmp_path / "outside")
    refused(
        capsys, ["export", str(run), "--submissions", str(tmp_path / "out")], "symbolic link (not followed)"
    )
    nothing_in(tmp_path / "out")


def test_a_linked_submission_is_refused(
    made: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = copy_of(made, tmp_path)
    target = _session_file(run)
    target.rename(tmp_path / "real.json")
    target.symlink_to(tmp_path / "real.json")
    refused(capsys, ["export", str(run), "--submissions", str(tmp_path / "out")], "attempt-1.submission.json")
    nothing_in(tmp_path / "out")


def test_a_fifo_for_a_submission_is_refused_without_blocking(
    made: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = copy_of(made, tmp_path)
    _session_file(run).unlink()
    os.mkfifo(_session_file(run))
    code: list[int] = []
    worker = threading.Thread(
        target=lambda: code.append(main(["export", str(run), "--board", str(tmp_path / "b")])), daemon=True
    )
    worker.start()
    worker.join(30)
    assert not worker.is_alive(), "the export blocked on a FIFO"
    assert code == [2] and "a FIFO" in capsys.readouterr().err
    nothing_in(tmp_path / "b")


def test_a_huge_submission_is_refused_unread(
    made: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = copy_of(made, tmp_path)
    with _session_file(run).open("r+b") as f:
        f.truncate(1 << 40)  # sparse: a terabyte that costs nothing, would never load
    refused(capsys, ["export", str(run), "--submissions", str(tmp_path / "out")], "larger than")
    nothing_in(tmp_path / "out")


@pytest.mark.parametrize(
    ("damage", "says"),
    [
        (lambda data: data[: len(data) // 2], "not JSON"),
        (
            lambda data: data.replace(b'"runner_version": "0.11.0"', b'"runner_version": "0.12.0"'),
            "runner version '0.12.0'",
        ),
        (
            lambda data: data.replace(b'"model": "vendor/model-a"', b'"model": "vendor/model-b"', 1),
            "in a session of",
        ),
        (lambda data: data.replace(b'"status": "completed"', b'"status": 7', 1), "status"),
    ],
)
def test_a_corrupted_submission_is_refused_naming_it(
    made: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], damage, says: str
) -> None:  # type: ignore[no-untyped-def]
    run = copy_of(made, tmp_path)
    path = _session_file(run)
    path.write_bytes(damage(path.read_bytes()))
    refused(capsys, ["export", str(run), "--submissions", str(tmp_path / "out")], says)
    nothing_in(tmp_path / "out")


def test_a_failed_write_leaves_nothing(
    made: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    writes: list[Path] = []
    real = export_module.atomic_write

    def failing(path: Path, data: bytes, **kw: object) -> None:
        writes.append(path)
        if len(writes) == 3:
            raise OSError(28, "No space left on device", str(path))
        real(path, data)

    monkeypatch.setattr(export_module, "atomic_write", failing)
    refused(capsys, ["export", str(made), "--submissions", str(tmp_path / "out")], "No space left on device")
    nothing_in(tmp_path / "out")


def test_only_finished_runs_are_exported_and_the_rest_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = {"vendor/model-a#0": {"episodes": 20}, "vendor/model-b#1": {"no_file": True}}
    run = top50_stub.run(tmp_path, runs)
    assert main(["export", str(run), "--submissions", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err
    assert (
        "left out vendor_model-a-0000 (attempt 1, done, run_error): run incomplete after episode 20/50" in err
    )
    assert "left out vendor_model-b-0001 (attempt 1, done): no submission" in err
    entries = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert sorted(e["session"] for e in entries) == ["vendor_model-a-0001", "vendor_model-b-0000"]


def test_a_run_its_runner_did_not_certify_is_exported_but_not_on_the_board(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = {"vendor/model-a#0": {"accepted": {"3": 1}, "rankable": False}}
    run = top50_stub.run(tmp_path, runs)
    assert (
        main(["export", str(run), "--submissions", str(tmp_path / "out"), "--board", str(tmp_path / "b")])
        == 0
    )
    assert (
        "left off the board vendor_model-a-0000 (attempt 1): the runner did not certify it"
        in capsys.readouterr().err
    )
    entries = {e["session"]: e for e in json.loads((tmp_path / "out" / "manifest.json").read_text())}
    assert len(entries) == 4 and entries["vendor_model-a-0000"]["label"].startswith("local:")
    assert len(list((tmp_path / "b").glob("*.json"))) == 3


def test_a_board_of_no_certified_run_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = top50_stub.run(
        tmp_path, {"vendor/model-a": {"rankable": False}, "vendor/model-b": {"rankable": False}}, n=1
    )
    refused(
        capsys,
        ["export", str(run), "--submissions", str(tmp_path / "s"), "--board", str(tmp_path / "b")],
        "no finished run its runner certified",
    )
    nothing_in(tmp_path / "b")
    nothing_in(tmp_path / "s")


def test_a_run_dir_without_a_finished_run_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = top50_stub.run(
        tmp_path, {"vendor/model-a": {"episodes": 3}, "vendor/model-b": {"episodes": 0}}, n=1
    )
    refused(capsys, ["export", str(run), "--board", str(tmp_path / "b")], "no finished Top50 run")
    nothing_in(tmp_path / "b")


def test_a_cut_run_exports_its_second_attempt_only(tmp_path: Path) -> None:
    """An attempt cut off mid-way is never merged: --resume runs it again as attempt 2, and only
    that attempt's file is exported (the first stays in the run dir as spent, wasted)."""
    runs = {"vendor/model-a#1": {"crash_attempts": [1], "accepted": {"5": 1}}}
    top50_stub.run(tmp_path, runs, finished=False)
    run = top50_stub.run(tmp_path, runs, resume=True)
    assert (run / top50_runs.submission_path("vendor_model-a-0001", 1)).is_file()
    found = top50_runs.read([run])
    assert found.wasted_attempts == 1
    assert main(["export", str(run), "--submissions", str(tmp_path / "out")]) == 0
    entries = {e["session"]: e for e in json.loads((tmp_path / "out" / "manifest.json").read_text())}
    assert entries["vendor_model-a-0001"]["attempt"] == 2
    kept = (run / top50_runs.submission_path("vendor_model-a-0001", 2)).read_bytes()
    assert (tmp_path / "out" / entries["vendor_model-a-0001"]["file"]).read_bytes() == kept
    assert S.build  # the stand-in writes what support.submissions builds
