"""A scripted model for the benchmark's REAL Top50 runner (its mini-swe-agent, one `bash` tool):
triage writes a shortlist of 50 rules and freezes it with `commit-top50`; an episode whose rule
has a certificate in `certificates` writes it under $PRB_ARTIFACT_DIR and submits it; every other
answer runs the benchmark's finish line (which the runner does not see: each episode runs to its
10 generations). The rules are the checkout's `src/rules/*.rs` names, as the runner lists them.
Usage reported per call: `usage(call, n)` (n: the model's calls so far), default 1000 in, 50 out.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from support.scripted_upstream import Answer, Call

SKIP_RULES = {"mod", "traits", "graph_helpers", "analysis", "cost", "registry", "graph"}
"""As the benchmark's `model_api.list_rules` skips them."""
FINISH = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
EPISODE = re.compile(r"Investigate only rule (\S+) \(")


def inventory(library: Path) -> list[str]:
    return [p.stem for p in sorted((library / "src" / "rules").glob("*.rs")) if p.stem not in SKIP_RULES]


class Top50Model:
    def __init__(
        self,
        library: Path,
        certificates: dict[str, dict[str, dict[str, Any]]],
        usage: Callable[[str, int], tuple[int, int]] = lambda model, n: (1000, 50),
    ) -> None:
        """`certificates`: per upstream model name, rule -> the certificate its episode submits."""
        rules = inventory(library)
        wanted = [r for c in certificates.values() for r in c]
        self.shortlist = list(dict.fromkeys([*wanted, *rules]))[:50]
        self.certificates = certificates
        self.usage = usage
        self.served: dict[str, int] = {}
        self._lock = threading.Lock()

    def __call__(self, call: Call) -> Answer:
        model = str(call.body.get("model"))
        with self._lock:
            self.served[model] = n = self.served.get(model, 0) + 1
        inp, out = self.usage(model, n)
        messages = call.body.get("messages") or []
        said = sum(1 for m in messages if m.get("role") == "assistant")
        task = "\n".join(str(m.get("content")) for m in messages[:2])
        if "commit-top50" in task:
            command = (
                f"cat > shortlist.json <<'EOF'\n{json.dumps(self.shortlist)}\nEOF"
                if said == 0
                else "commit-top50 shortlist.json"
            )
        else:
            found = EPISODE.search(task)
            cert = self.certificates.get(model, {}).get(found.group(1)) if found else None
            if cert is not None and said == 0:
                command = f"cat > \"$PRB_ARTIFACT_DIR/cert.json\" <<'EOF'\n{json.dumps(cert)}\nEOF"
            elif cert is not None and said == 1:
                command = 'submit "$PRB_ARTIFACT_DIR/cert.json"'
            else:
                command = FINISH
        return Answer(tool="bash", arguments={"command": command}, input_tokens=inp, output_tokens=out)
