#!/usr/bin/env python3
"""A STAND-IN for problem-reductions' `pred` CLI, for tests only (the real one is a Rust binary).

It speaks the subset of pred's interface the verifier and the bug-hunting prompt use — `create`,
`reduce --to`, `solve --solver brute-force`, `extract --config`, `evaluate --config`, `--json` —
for three graph problems, with one deliberately buggy rule so tests have a genuine round-trip
failure to find:

- MaximumIndependentSet -> MaximumClique      (complement graph; correct)
- MaximumIndependentSet -> MinimumVertexCover (same graph; BUG: extraction copies vertex 0
  instead of complementing it)

STAND_IN_PRED_HANG=<subcommand> makes that subcommand hang (to test timeouts).
"""

import itertools
import json
import os
import sys
import time

ALIASES = {"MIS": "MaximumIndependentSet", "MaxClique": "MaximumClique", "MVC": "MinimumVertexCover"}
SENSE = {"MaximumIndependentSet": "Max", "MaximumClique": "Max", "MinimumVertexCover": "Min"}
RULES = {("MaximumIndependentSet", "MaximumClique"), ("MaximumIndependentSet", "MinimumVertexCover")}


def fail(message):
    print(f"Error: {message}", file=sys.stderr)
    sys.exit(1)


def option(args, name, default=None):
    return args[args.index(name) + 1] if name in args else default


def load(path):
    try:
        return json.loads(sys.stdin.read() if path == "-" else open(path).read())
    except (OSError, ValueError) as exc:
        fail(f"cannot read {path}: {exc}")


def config_of(text):
    return [int(x) for x in text.strip("[] ").replace(" ", "").split(",") if x]


def evaluate(problem, config):
    kind, data = problem["type"], problem["data"]
    n, edges, weights = data["graph"]["num_vertices"], data["graph"]["edges"], data["weights"]
    if kind not in SENSE:
        fail(f"unknown problem {kind}")
    if len(config) != n or any(x not in (0, 1) for x in config):
        fail(f"config must have {n} entries of 0/1")
    adjacent = {frozenset(e) for e in edges}
    chosen = [v for v in range(n) if config[v]]
    if kind == "MaximumIndependentSet":
        valid = not any(frozenset(e) <= set(chosen) for e in edges)
    elif kind == "MaximumClique":
        valid = all(frozenset(p) in adjacent for p in itertools.combinations(chosen, 2))
    else:
        valid = all(config[a] or config[b] for a, b in edges)
    size = sum(weights[v] for v in chosen)
    return f"{SENSE[kind]}({size if valid else 'None'})", valid, size


def brute_force(problem):
    n = problem["data"]["graph"]["num_vertices"]
    best = None
    for config in itertools.product((0, 1), repeat=n):
        text, valid, size = evaluate(problem, list(config))
        better = best is None or (size > best[2] if SENSE[problem["type"]] == "Max" else size < best[2])
        if valid and better:
            best = (list(config), text, size)
    return (best[0], best[1]) if best else ([0] * n, f"{SENSE[problem['type']]}(None)")


def reduce_to(source, target_type):
    if (source["type"], target_type) not in RULES:
        fail(f"no reduction from {source['type']} to {target_type}")
    data = source["data"]
    n, edges = data["graph"]["num_vertices"], data["graph"]["edges"]
    if target_type == "MaximumClique":
        present = {frozenset(e) for e in edges}
        edges = [list(p) for p in itertools.combinations(range(n), 2) if frozenset(p) not in present]
    target = {
        "data": {"graph": {"edges": edges, "num_vertices": n}, "weights": data["weights"]},
        "type": target_type,
        "variant": source["variant"],
    }
    steps = [
        {"name": source["type"], "variant": source["variant"]},
        {"name": target_type, "variant": source["variant"]},
    ]
    return {"path": steps, "source": source, "target": target}


def extract(bundle, target_config):
    if bundle["target"]["type"] == "MaximumClique":
        return list(target_config)
    return [target_config[0]] + [1 - x for x in target_config[1:]]  # the planted bug


def round_trip(bundle, target_config, target_eval, solver):
    source_config = extract(bundle, target_config)
    return {
        "problem": bundle["source"]["type"],
        "solver": solver,
        "reduced_to": bundle["target"]["type"],
        "solution": source_config,
        "evaluation": evaluate(bundle["source"], source_config)[0],
        "intermediate": {
            "problem": bundle["target"]["type"],
            "solution": target_config,
            "evaluation": target_eval,
        },
    }


def create(args):
    kind = ALIASES.get(args[0], args[0])
    edges = [[int(x) for x in e.split("-")] for e in option(args, "--graph", "").split(",") if e]
    n = max((max(e) for e in edges), default=-1) + 1
    weights = [int(w) for w in option(args, "--weights", ",".join(["1"] * n)).split(",")]
    return {
        "data": {"graph": {"edges": edges, "num_vertices": n}, "weights": weights},
        "type": kind,
        "variant": {"graph": "SimpleGraph", "weight": "One"},
    }


def main(argv):
    if argv[:1] == ["--version"]:
        print("pred 0.0.0-stand-in")
        return
    command, args = argv[0], argv[1:]
    if os.environ.get("STAND_IN_PRED_HANG") == command:
        time.sleep(3600)
    if command == "create":
        out = create(args)
    elif command == "reduce":
        out = reduce_to(load(args[0]), ALIASES.get(option(args, "--to"), option(args, "--to")))
    elif command == "evaluate":
        config = config_of(option(args, "--config"))
        out = {
            "problem": load(args[0])["type"],
            "config": config,
            "result": evaluate(load(args[0]), config)[0],
        }
    elif command == "solve":
        data = load(args[0])
        solver = option(args, "--solver", "brute-force")
        if "path" in data:
            config, text = brute_force(data["target"])
            out = round_trip(data, config, text, solver)
        else:
            config, text = brute_force(data)
            out = {"problem": data["type"], "solver": solver, "solution": config, "evaluation": text}
    elif command == "extract":
        bundle, config = load(args[0]), config_of(option(args, "--config"))
        out = round_trip(bundle, config, evaluate(bundle["target"], config)[0], "external")
    else:
        fail(f"unknown command {command}")
    text = json.dumps(out, indent=1)
    if "-o" in args:
        with open(option(args, "-o"), "w") as f:
            f.write(text)
    else:
        print(text)


if __name__ == "__main__":
    main(sys.argv[1:])
