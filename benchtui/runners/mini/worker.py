"""The session worker: one forked process per session, running mini-swe-agent's DefaultAgent.

Imported only by the zygote (which set MSWEA_* and LITELLM_* before), never by the engine. The
agent's model is `model.MeteredModel` (every call authorised and charged by the engine); its
commands run in `sandbox`; the certificate blocks it printed go back to the engine to verify.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import resource
import signal
import socket
import sys
import tempfile
import threading
import traceback
from pathlib import Path
from typing import Any

import litellm
import openai
from minisweagent.agents.default import DefaultAgent

from benchtui.core import workspace
from benchtui.core.certificates import MAX_CERTIFICATE_CHARS, blocks_in_messages
from benchtui.runners.kit import bubblewrap as sandbox
from benchtui.runners.kit import observation, reaper
from benchtui.runners.kit import resources as processes
from benchtui.runners.mini import billing
from benchtui.runners.mini.actions import strip_actions
from benchtui.runners.mini.model import MeteredModel, model_kwargs, root_cause
from benchtui.runners.mini.ping import CLIENT_REFUSED
from benchtui.runners.mini.profile import load_templates
from benchtui.runners.mini.protocol import MAX_BLOCKS_BYTES, MessageTooLarge, ParentGone, WorkerChannel
from benchtui.runners.mini.resources import Limits, Watched

MAX_BLOCKS = 50
# A longer block is cut, and still over the certificate limit: rejected as too large (final).
MAX_BLOCK_CHARS = MAX_CERTIFICATE_CHARS + 1024


def certificate_blocks(messages: list[dict[str, Any]]) -> list[str]:
    """Certificate blocks in what the model wrote and what its commands printed (not the prompt),
    at most MAX_BLOCKS of them and MAX_BLOCKS_BYTES as JSON (escapes can make a character 12
    bytes), so that the report always fits in one message to the engine."""
    blocks: list[str] = []
    size = 0
    for block in blocks_in_messages(messages):
        block = block[:MAX_BLOCK_CHARS]
        if block in blocks:
            continue
        size += len(json.dumps(block)) + 2
        if len(blocks) >= MAX_BLOCKS or size > MAX_BLOCKS_BYTES:
            return blocks
        blocks.append(block)
    return blocks


def _classify(exc: BaseException) -> tuple[str, str, bool]:
    """(exit status, reason, infrastructure error?) for an exception out of the agent loop."""
    reason = f"{type(exc).__name__}: {str(exc)[:500]}"
    if isinstance(exc, litellm.exceptions.ContextWindowExceededError):
        return "ContextWindowExceeded", reason, False
    refused = getattr(exc, "client_refused", None)
    if refused is not None:  # not the server's failure: it never saw the call
        return "ApiError", f"{CLIENT_REFUSED} (nothing sent, nothing charged): {refused}", True
    if isinstance(exc, openai.APIError | billing.CallDeadline):
        n = getattr(exc, "requests_made", 1)
        reason += root_cause(exc)
        return "ApiError", f"model API failed ({n} request{'s' if n != 1 else ''}): {reason}", True
    if isinstance(exc, ParentGone):
        return "ParentGone", reason, True
    return "WorkerError", f"worker failed: {reason}", True


def run_session(request: dict[str, Any], channel: WorkerChannel) -> dict[str, Any]:
    paths, profile, model = request["paths"], request["profile"], request["model"]
    disk = profile["max_disk_mb"] * 1024 * 1024
    # With `volume`, the copy is a filesystem of its own with `disk` bytes free: the kernel's bound.
    mounted = bool(request.get("volume"))
    workdir = workspace.make_session_copy(
        Path(paths["target"]), Path(paths["workdir"]), disk if mounted else None
    )
    channel.send("copy", fingerprint=workspace.fingerprint(workdir))
    sandboxed = profile["environment"] == "bubblewrap"
    outputs = observation.SavedOutputs(workdir, sandbox.WORKDIR if sandboxed else str(workdir))
    # No file the session writes may pass the disk limit (the kernel's bound; the copy's growth in
    # all is watched). SIGXFSZ ignored: a local command gets EFBIG (bwrap resets it: killed there).
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (disk, disk))
    limits = Limits(
        max_processes=profile["max_processes"],
        max_disk_mb=profile["max_disk_mb"],
        command_output_bytes=profile["command_output_bytes"],
        trajectory_output_bytes=profile["trajectory_output_bytes"],
        observation_chars=profile["observation_chars"],
    )
    cgroup = processes.join_pids_cgroup(limits.max_processes)
    if cgroup is not None:
        channel.send("cgroup", path=str(cgroup))
    templates = load_templates(Path(paths["templates"]))
    billing.observe_http()
    agent_model = MeteredModel(
        channel=channel,
        margin=profile["prompt_token_margin"],
        max_output_tokens=model["max_output_tokens"],
        retries=profile["retries"],
        backoff_s=profile["retry_backoff_s"],
        api_key=request["api_key"],
        deadline_s=profile["request_timeout_s"],
        observation_chars=profile["observation_chars"],
        outputs=outputs,
        budget_line=bool(request.get("count_actions")),
        action_format=profile.get("action_format", "tool_call"),
        model_name=model["name"],
        model_kwargs=model_kwargs(model, profile["request_timeout_s"]),
        cost_tracking="ignore_errors",
        observation_template=templates["observation_template"],
        format_error_template=templates["format_error_template"],
    )
    class_path, env_kwargs = sandbox.environment(
        profile["environment"],
        workdir=workdir,
        session_dir=Path(paths["session_dir"]),
        pred=paths["pred"],
        timeout=profile["command_timeout_s"],
        secret_names=sorted(request["secrets"]),
        tmp_bytes=disk,
        gate=paths.get("gate"),
    )
    module, _, name = class_path.rpartition(".")
    polled = [Path(paths["session_dir"]) / "tmp", *([] if mounted else [workdir])]
    watched = Watched(limits, polled, cgroup)
    admit = (lambda: _admit(channel)) if request.get("count_actions") else None
    env = getattr(importlib.import_module(module), name)(watched=watched, admit=admit, **env_kwargs)
    agent = DefaultAgent(
        agent_model,
        env,
        system_template=templates["system_template"],
        instance_template=templates[request.get("instance", "instance_template")],
        step_limit=profile["step_limit"],
        cost_limit=0,
        output_path=Path(paths["trajectory"]),
    )
    status, error, infra = "", None, False
    try:
        status = agent.run(
            task=request["task"] or "", budget=request.get("budget", ""), **request.get("template_vars", {})
        ).get("exit_status", "")
    except Exception as exc:
        status, error, infra = _classify(exc)
        traceback.print_exc()
    finally:
        getattr(env, "cleanup", lambda: None)()
    unusable = agent_model.format_error
    return {
        "exit_status": status,
        "steps": agent.n_calls,
        "blocks": certificate_blocks(strip_actions(agent.messages, agent_model.action_format)),
        "limits": limits.hits,
        "error": error,
        "infra_error": infra,
        "meter_rtt_ms": round(1000 * channel.authorise_s / max(channel.authorisations, 1), 3),
        "actions": agent_model.actions,
        **({"format_error": unusable.kind, "format_detail": unusable.detail} if unusable else {}),
    }


def _admit(channel: WorkerChannel) -> dict[str, Any] | None:
    """Ask the engine for a `shell_actions` unit before a command runs; refused, the model sees why
    as the command's output (nothing was run)."""
    answer = channel.ask("use", counters=["shell_actions"])
    if answer.get("ok"):
        return None
    return {"output": str(answer.get("message", "refused")), "returncode": 126, "exception_info": ""}


def _terminate(signum: int, frame: Any) -> None:
    reaper.kill_tree(os.getpid(), include_root=False)
    os._exit(128 + signum)


def _watch_engine(sock: socket.socket) -> None:
    """If the engine dies, its end of the socket closes: stop everything at once."""
    import select

    poller = select.poll()
    poller.register(sock.fileno(), select.POLLRDHUP)
    while True:
        if poller.poll():
            _terminate(signal.SIGHUP, None)


def main(request: dict[str, Any], sock: socket.socket) -> int:
    """Entry point in the freshly forked child of the zygote."""
    os.setsid()  # our own session: the terminal's Ctrl-C goes to the engine only
    reaper.prctl(reaper.PR_SET_CHILD_SUBREAPER, 1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, _terminate)
    channel = WorkerChannel(sock)
    channel.send("hello", pid=os.getpid())
    threading.Thread(target=_watch_engine, args=(sock,), daemon=True).start()
    log = os.open(request["paths"]["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    settings = {k: v for k, v in os.environ.items() if k.startswith(("MSWEA_", "LITELLM_"))}
    os.environ.clear()  # the engine's environment now, not the zygote's from its start
    os.environ.update({**request["env"], **settings, **request["secrets"]})
    os.environ["MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT"] = "1"  # retries are MeteredModel's, each authorised
    os.chdir(request["paths"]["session_dir"])
    # Temporary files (mini-swe-agent's bubblewrap makes a dir per session) go where the engine
    # removes them, even when this process is killed.
    tempfile.tempdir = os.path.join(request["paths"]["session_dir"], "tmp")
    os.makedirs(tempfile.tempdir, exist_ok=True)
    try:
        outcome = run_session(request, channel)
    except BaseException as exc:
        traceback.print_exc()
        outcome = {
            "exit_status": "WorkerError",
            "steps": 0,
            "blocks": [],
            "infra_error": True,
            "error": f"worker failed: {type(exc).__name__}: {str(exc)[:500]}",
        }
    with contextlib.suppress(ParentGone):
        try:
            channel.send("done", **outcome)
        except MessageTooLarge as exc:  # cannot happen within the bounds above; never a lost report
            channel.send("done", **{**outcome, "blocks": [], "error": str(exc)[:500], "infra_error": False})
    sys.stdout.flush()
    sys.stderr.flush()
    reaper.kill_tree(os.getpid(), include_root=False)
    return 0


def warm_up() -> None:
    """Do in the zygote what every worker's first call would otherwise do again: load the
    tokenizer, and take litellm's HTTP path once (lazy imports, client set-up) against a local
    port that refuses the connection. Single-threaded: the zygote must stay safe to fork."""
    litellm.suppress_debug_info = True  # no "Give Feedback / Get Help" banners in worker logs
    billing.observe_http()
    litellm.token_counter(model="gpt-4o", messages=[{"role": "user", "content": "warm up"}])
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))  # bound, not listening: connections are refused at once
        with contextlib.suppress(Exception):
            litellm.completion(
                model="openai/warm-up",
                messages=[{"role": "user", "content": "warm up"}],
                api_base=f"http://127.0.0.1:{closed.getsockname()[1]}/v1",
                api_key="none",
                max_retries=0,
                timeout=2,
            )
