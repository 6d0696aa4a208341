"""Stand-in of `python -m benchmark.run_top50` (the contract; see ../README.md)."""

import hashlib
import json
import os
import stat
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
TRUSTED_PRED = "/usr/local/libexec/prb/pred"


def fail(why):
    print(f"stand-in run_top50: {why}", file=sys.stderr)
    sys.exit(1)


def check_baked_state(repo):
    commit = (HERE / "PINNED_COMMIT").read_text().strip()
    if (repo / ".prb-pinned-commit").read_text().strip() != commit:
        fail("rankable source commit marker differs from the image pin")
    listed = {}
    for line in (repo / ".prb-source-manifest").read_text().splitlines():
        digest, name = line.split(maxsplit=1)
        listed[name] = digest
    actual = {p.relative_to(repo).as_posix() for p in (repo / "src").rglob("*") if p.is_file()}
    if not listed or set(listed) != actual:
        fail("rankable source-rule inventory differs from the baked manifest")
    for name, digest in listed.items():
        if hashlib.sha256((repo / name).read_bytes()).hexdigest() != digest:
            fail(f"rankable source differs from the image: {name}")
    pred = os.environ["PRED_BINARY"]
    if os.path.realpath(pred) != TRUSTED_PRED:
        fail(f"rankable runs require the image-owned pred at {TRUSTED_PRED}")
    info = os.stat(TRUSTED_PRED)
    if (
        stat.S_IMODE(info.st_mode) != 0o750
        or info.st_uid != 0
        or info.st_gid != int(os.environ["PRB_ORACLE_GID"])
    ):
        fail(f"pred is not root:oracle 0750 ({oct(info.st_mode)} {info.st_uid}:{info.st_gid})")
    for name in ("MSWEA_GLOBAL_CONFIG_DIR", "MSWEA_COST_TRACKING", "LITELLM_LOCAL_MODEL_COST_MAP"):
        if name not in os.environ:
            fail(f"{name} is not set")
    if os.geteuid() != 0:
        fail("rankable Top50 runs require the root runner privilege boundary")
    ids = [int(os.environ[k]) for k in ("PRB_AGENT_UID", "PRB_ORACLE_UID", "PRB_EVIDENCE_GID")]
    if len(set(ids)) != 3:
        fail("agent, oracle and evidence ids must differ")
    # The agent's shims run this interpreter as the agent: it must reach it; pred it must not run.
    pid = os.fork()
    if pid == 0:
        os.setgroups([ids[2]])
        os.setgid(ids[0])
        os.setuid(ids[0])
        ok = os.access(sys.executable, os.X_OK) and not os.access(TRUSTED_PRED, os.X_OK)
        os._exit(0 if ok else 3)
    _, status = os.waitpid(pid, 0)
    if status != 0:
        fail("the agent user cannot run the interpreter, or can run pred")
    return commit


def request(config, api_base, key, model, messages):
    """One generation as LiteLLM makes it (num_retries 2): a 401 after its retries stops the run."""
    body = json.dumps({"model": model.split("/", 1)[-1], "messages": messages, "max_tokens": 8192}).encode()
    tries = 0
    while True:
        tries += 1
        req = urllib.request.Request(
            f"{api_base.rstrip('/')}/chat/completions",
            data=body,
            method="POST",
            headers={"content-type": "application/json", "authorization": f"Bearer {key}"},
        )
        try:
            with urllib.request.urlopen(req, timeout=60) as answer:
                return json.loads(answer.read())
        except urllib.error.HTTPError as exc:
            if exc.code == 401 and tries >= 3:
                raise RuntimeError(f"AuthenticationError: {exc.read()[:200]!r}") from None
            if exc.code != 401 and tries >= config.get("max_tries", 30):
                raise RuntimeError(f"APIError {exc.code}") from None
            time.sleep(config.get("retry_sleep_s", 0.05))


def persist(result, output):
    destination = Path(output)
    destination.parent.mkdir(parents=True, exist_ok=True)
    temporary = destination.with_name(f".{destination.name}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps(result, indent=2), encoding="utf-8")
    os.replace(temporary, destination)


def main():
    config = (
        json.loads((HERE.parent / "standin.json").read_text())
        if (HERE.parent / "standin.json").exists()
        else {}
    )
    model, api_base, key = os.environ["MODEL_NAME"], os.environ["API_BASE"], os.environ["API_KEY"]
    output, repo = os.environ["OUTPUT"], Path(os.environ["REPO_DIR"])
    commit = check_baked_state(repo)
    Path("/tmp/prb-standin-was-here").write_text("private /tmp\n")
    rules = sorted(p.stem for p in (repo / "src" / "rules").glob("*.rs"))[:50]
    total = config.get("episodes", 50)
    meta = {
        "model": model,
        "library_commit": commit,
        "runner_version": "0.11.0",
        "pred_version": (HERE / "PINNED_VERSION").read_text().strip(),
        "prompt_id": "stand-in",
        "safety_controls": {},
        "created_at": "2026-01-01T00:00:00+00:00",
        "inference_parameters": {"max_tokens": 8192},
    }

    def result(episodes, error, shortlist):
        doc = {
            "model": model,
            "status": "run_error" if error else "completed",
            "rankable": error is None and len(episodes) == 50,
            "shortlist": [{"rule": r, "hypothesis": ""} for r in shortlist] if shortlist else None,
            "triage": {"ledger": {}, "messages": [], "tokens_k": 0, "usage": None},
            "episodes": episodes,
        }
        if error:
            doc["run_error"] = error
        return {**doc, **meta}

    try:
        for _ in range(config.get("triage_calls", 2)):
            request(config, api_base, key, model, [{"role": "user", "content": "triage " * 50}])
    except RuntimeError as exc:
        persist(result([], f"triage infrastructure error: {exc}", None), output)
        return
    if config.get("no_shortlist"):
        persist(result([], "triage ended without a valid frozen Top50", None), output)
        return
    episodes = []
    error = None
    for index, rule in enumerate(rules[:total], 1):
        try:
            for call in range(config.get("calls", 2)):
                request(config, api_base, key, model, [{"role": "user", "content": f"{rule} step {call}"}])
        except RuntimeError as exc:
            error = f"episode {index} ({rule}) infrastructure error: {exc}"
            episodes.append(
                {
                    "index": index,
                    "rule": rule,
                    "hypothesis": "",
                    "status": "run_error",
                    "accepted_submit_attempt": None,
                    "ledger": {},
                    "messages": [],
                    "tokens_k": 0,
                    "usage": None,
                }
            )
            break
        accepted = index in config.get("accept", [])
        submit = (
            [
                {
                    "attempt": 1,
                    "accepted": True,
                    "rule": rule,
                    "reason": "stand-in",
                    "certificate": config["certificate"],
                }
            ]
            if accepted
            else []
        )
        episodes.append(
            {
                "index": index,
                "rule": rule,
                "hypothesis": "",
                "status": "bug_found" if accepted else "completed",
                "accepted_submit_attempt": 1 if accepted else None,
                "ledger": {"submit": submit},
                "messages": [],
                "tokens_k": 0.1,
                "usage": None,
            }
        )
        persist(result(episodes, f"run incomplete after episode {index}/{len(rules)}", rules), output)
        time.sleep(config.get("episode_sleep_s", 0))
        if config.get("hang_after") == index:
            time.sleep(3600)
        if config.get("crash_after") == index:
            os._exit(9)
    if error is None and len(episodes) < 50:
        error = f"run incomplete after episode {len(episodes)}/50"
    persist(result(episodes, error, rules), output)
    plant = config.get("plant")
    if plant:
        os.unlink(output)
        if plant == "symlink":
            os.symlink("/etc/passwd", output)
        elif plant == "fifo":
            os.mkfifo(output)
        elif plant == "huge":
            with open(output, "wb") as f:
                f.truncate(config.get("huge_bytes", 1 << 30))
        elif plant == "garbage":
            Path(output).write_bytes(b"\x00not json")
    print(f"Top50 {'run_error' if error else 'completed'} ({len(episodes)}/50 episodes) -> {output}")


if __name__ == "__main__":
    main()
