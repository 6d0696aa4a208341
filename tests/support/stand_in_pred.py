#!/usr/bin/env python3
"""A STAND-IN for problem-reductions' `pred` CLI with one PLANTED BUG, for tests that need a
confirmed certificate (the real pred's rules are correct on the instances tests use).

It speaks the real pred 0.5.0's interface and output shapes for a few graph problems: aliases
(MIS, MVC; there is no MaxClique), `TYPE/variant` specs whose values select the variant (default:
the type's default variant), multi-step paths and `reduce --via`, comma configs only, `Wrote FILE`
on stderr with `-o`, JSON keys sorted, exit 1 for errors and 2 for usage errors, plain `solve`
leaving `solution` out when there is none, bundle solving exiting 1 when the target has none.

- MaximumIndependentSet -> MaximumClique      (complement graph; One and i32 weights; correct)
- MaximumIndependentSet/One -> /i32           (a cast; correct)
- MaximumIndependentSet -> MinimumVertexCover (i32; BUG: extraction copies vertex 0 instead of
  complementing it), so `--to MVC` from a unit-weight MIS takes the path MIS/One -> MIS/i32 -> MVC.

STAND_IN_PRED_HANG=<subcommand> makes that subcommand hang (to test timeouts).

STAND_IN_PRED_TRANSCRIPT=<build>.jsonl switches to REPLAY mode: the answers of the real pred that
`../shared/pred-transcripts/` recorded (its README's replay algorithm, exactly): file arguments are
matched by the sha256 of their bytes, the `-o` value is `@out`, a hit writes the recorded stdout,
stderr and `-o` output with `@file:<sha256>`/`@out` tokens put back as the caller named them and
exits with the recorded status; a miss prints `not recorded: <argv as JSON>` and exits 97.

STAND_IN_PRED_OLD_CLI=<folder> makes it ANSWER AS AN OLDER CLI whose answers that folder records
(`../shared/pred-transcripts/pred-0.3.0/`, its README): `--version` (version.txt), `--help`
(help.txt) and `<subcommand> --help` (help-<subcommand>.txt), `list --json` (list.json,
list.stderr), `list --rules …` refused as recorded (list-rules.stdout/.stderr/.exit: clap's exit 2),
`export-graph -o FILE` (writes graph.json's bytes, `Wrote FILE` on stderr as export.stdout shows),
and no `extract` (clap's `unrecognized subcommand`, exit 2). The rest (`reduce`, `solve`,
`evaluate`, `create`) answer as STAND_IN_PRED_TRANSCRIPT's build or the planted-bug stand-in do;
a call of those files that is not recorded (`export-graph` without `-o`) is a miss (exit 97).

STAND_IN_PRED_ANSWERS=<file.json> DOCTORS it, in either mode: `{"reduce": {"stdout": "",
"stderr": "...", "exit": 101}}` answers every call of that subcommand so (`"signal": 9` then
kills it by that signal, as the out-of-memory killer does; `"hang": true` never answers); the
other subcommands answer as before. Tests build preds that crash elsewhere, refuse an instance,
or reduce one that the real build panics on.
"""

import hashlib
import itertools
import json
import os
import sys
import time

ALIASES = {"MIS": "MaximumIndependentSet", "MVC": "MinimumVertexCover", "VC": "MinimumVertexCover"}
SENSE = {"MaximumIndependentSet": "Max", "MaximumClique": "Max", "MinimumVertexCover": "Min"}
DEFAULT_WEIGHT = {"MaximumIndependentSet": "One", "MaximumClique": "One", "MinimumVertexCover": "i32"}
RULES = {
    ("MaximumIndependentSet", "One"): [("MaximumClique", "One"), ("MaximumIndependentSet", "i32")],
    ("MaximumIndependentSet", "i32"): [("MaximumClique", "i32"), ("MinimumVertexCover", "i32")],
}
NO_WITNESS = (
    "Bundle solving requires a witness-capable target problem and witness-capable reduction path; "
    "the target has no solution."
)


class PredError(Exception):
    def __init__(self, message, code=1):
        super().__init__(message)
        self.code = code


def option(args, name, default=None):
    return args[args.index(name) + 1] if name in args else default


def load(path):
    try:
        return json.loads(sys.stdin.read() if path == "-" else open(path).read())
    except OSError:
        raise PredError(f"Failed to read {path}") from None
    except ValueError:
        raise PredError("Failed to parse JSON") from None


def spec(text):
    """`TYPE[/value...]` -> (type, weight); values may come in any order."""
    name, *values = text.split("/")
    name = ALIASES.get(name, name)
    if name not in SENSE:
        raise PredError(f"invalid value '{text}' for '--to <TO>'", 2)
    weight = next((v for v in values if v in ("One", "i32")), DEFAULT_WEIGHT[name])
    return name, weight


def variant(weight):
    return {"graph": "SimpleGraph", "weight": weight}


def config_of(text):
    values = []
    for part in text.split(","):
        try:
            values.append(int(part))
        except ValueError:
            raise PredError(f"Invalid config value '{part}': invalid digit found in string") from None
    return values


def evaluate(problem, config):
    kind, data = problem["type"], problem["data"]
    n, edges, weights = data["graph"]["num_vertices"], data["graph"]["edges"], data["weights"]
    if len(config) != n:
        raise PredError(f"Config has {len(config)} values but {kind} has {n} variables")
    chosen = {v for v in range(n) if config[v] == 1}
    if kind == "MaximumIndependentSet":
        valid = not any(set(e) <= chosen for e in edges)
    elif kind == "MaximumClique":
        present = {frozenset(e) for e in edges}
        valid = all(frozenset(p) in present for p in itertools.combinations(sorted(chosen), 2))
    else:
        valid = all(config[a] or config[b] for a, b in edges)
    size = sum(weights[v] for v in chosen)
    return f"{SENSE[kind]}({size if valid else 'None'})", valid, size


def brute_force(problem):
    """(best config, its evaluation) or (None, the evaluation of no solution)."""
    best = None
    for config in itertools.product((0, 1), repeat=problem["data"]["graph"]["num_vertices"]):
        text, valid, size = evaluate(problem, list(config))
        maximise = SENSE[problem["type"]] == "Max"
        if valid and (best is None or (size > best[2] if maximise else size < best[2])):
            best = (list(config), text, size)
    return (best[0], best[1]) if best else (None, f"{SENSE[problem['type']]}(None)")


def find_path(start, goal):
    paths = [[start]]
    while paths:
        path = paths.pop(0)
        if path[-1] == goal:
            return path
        paths += [path + [step] for step in RULES.get(path[-1], []) if step not in path]
    return None


def reduce_along(source, path):
    problem = source
    for name, weight in path[1:]:
        data = problem["data"]
        n, edges = data["graph"]["num_vertices"], data["graph"]["edges"]
        if name == "MaximumClique":
            present = {frozenset(e) for e in edges}
            edges = [list(p) for p in itertools.combinations(range(n), 2) if frozenset(p) not in present]
        graph = {"edges": edges, "num_vertices": n}
        problem = {
            "data": {"graph": graph, "weights": data["weights"]},
            "type": name,
            "variant": variant(weight),
        }
    steps = [{"name": name, "variant": variant(weight)} for name, weight in path]
    return {"path": steps, "source": source, "target": problem}


def extract(bundle, config):
    for step in reversed(bundle["path"][1:]):
        if step["name"] == "MinimumVertexCover":
            config = [config[0]] + [1 - x for x in config[1:]]  # the planted bug
    return config


def round_trip(bundle, target_config, target_eval, solver):
    source_config = extract(bundle, target_config)
    return {
        "evaluation": evaluate(bundle["source"], source_config)[0],
        "intermediate": {
            "evaluation": target_eval,
            "problem": bundle["target"]["type"],
            "solution": target_config,
        },
        "problem": bundle["source"]["type"],
        "reduced_to": bundle["target"]["type"],
        "solution": source_config,
        "solver": solver,
    }


def create(args):
    if not args or "--graph" not in args:
        print(
            f"{args[0] if args else 'pred create'}\n  --graph  Graph edge list (e.g., 0-1,1-2,2-3)",
            file=sys.stderr,
        )
        raise SystemExit(2)
    name, weight = spec(args[0])
    edges = [[int(x) for x in e.split("-")] for e in option(args, "--graph").split(",") if e]
    n = max((max(e) for e in edges), default=-1) + 1
    weights = [int(w) for w in option(args, "--weights", ",".join(["1"] * n)).split(",")]
    if weight == "One" and any(w != 1 for w in weights):
        raise PredError("Non-unit weights are not supported for the default unit-weight variant.")
    return {
        "data": {"graph": {"edges": edges, "num_vertices": n}, "weights": weights},
        "type": name,
        "variant": variant(weight),
    }


def reduce(args):
    source = load(args[0])
    start = (source["type"], source["variant"]["weight"])
    if "--via" in args:
        route = load(option(args, "--via"))["path"]
        path = [start] + [(s["to"]["name"], s["to"]["variant"]["weight"]) for s in route]
        if (route[0]["from"]["name"], route[0]["from"]["variant"]["weight"]) != start or any(
            b not in RULES.get(a, []) for a, b in itertools.pairwise(path)
        ):
            raise PredError("The reduction route does not fit the problem")
        return reduce_along(source, path)
    goal = spec(option(args, "--to"))
    path = find_path(start, goal)
    if path is None:
        raise PredError(f"No witness-capable reduction path from {'/'.join(start)} to {'/'.join(goal)}")
    return reduce_along(source, path)


def solve(args):
    data, solver = load(args[0]), option(args, "--solver", "ilp")
    if "path" in data:
        config, text = brute_force(data["target"])
        if config is None:
            raise PredError(NO_WITNESS)
        return round_trip(data, config, text, solver)
    config, text = brute_force(data)
    out = {"evaluation": text, "problem": data["type"], "solver": solver}
    return out if config is None else {**out, "solution": config}


def rule_list():
    rules = [
        {"overhead": "", "source": f"{a}/SimpleGraph/{wa}", "target": f"{b}/SimpleGraph/{wb}"}
        for (a, wa), targets in RULES.items()
        for b, wb in targets
    ]
    return {"num_rules": len(rules), "rules": rules}


def run(command, args):
    if command == "list" and "--rules" in args:
        return rule_list()
    if command == "create":
        return create(args)
    if command == "reduce":
        return reduce(args)
    if command == "solve":
        return solve(args)
    if command == "evaluate":
        problem, config = load(args[0]), config_of(option(args, "--config"))
        return {"config": config, "problem": problem["type"], "result": evaluate(problem, config)[0]}
    if command == "extract":
        bundle, config = load(args[0]), config_of(option(args, "--config"))
        n = bundle["target"]["data"]["graph"]["num_vertices"]
        if len(config) != n:
            raise PredError(f"Target config has {len(config)} values but target problem has {n} variables")
        return round_trip(bundle, config, evaluate(bundle["target"], config)[0], "external")
    raise PredError(f"unrecognized subcommand '{command}'", 2)


OUTPUT_FLAGS = ("-o", "--output")


def recorded_argv(argv):
    """(the argv as recorded, {token: the caller's text}, the -o path or None) -- README steps 1-2."""
    tokens, names, out, expect_out = [], {}, None, False
    for arg in argv:
        if expect_out:
            out, expect_out = arg, False
            tokens.append("@out")
        elif arg in OUTPUT_FLAGS:
            expect_out = True
            tokens.append(arg)
        elif arg.startswith("--output="):
            out = arg[len("--output=") :]
            tokens.append("--output=@out")
        elif arg.startswith("-o") and len(arg) > 2 and not arg.startswith("--"):
            out = arg[2:]
            tokens.append("-o@out")
        elif arg != "-" and os.path.isfile(arg):
            with open(arg, "rb") as f:
                token = "@file:" + hashlib.sha256(f.read()).hexdigest()
            names.setdefault(token, arg)
            tokens.append(token)
        else:
            tokens.append(arg)
    if out is not None:
        names["@out"] = out
    return tokens, names, out


def put_back(text, names):
    """Each `@file:<sha256>` token (and `@out`) as the caller named it (README step 5)."""
    for token in sorted(names, key=len, reverse=True):
        text = text.replace(token, names[token])
    return text


def replay(transcript, argv):
    tokens, names, out = recorded_argv(argv)
    stdin = sys.stdin.read() if "-" in tokens else None
    with open(transcript, encoding="utf-8") as f:
        for line in f:
            record = json.loads(line)
            if record["argv"] == tokens and record["stdin"] == stdin:
                break
        else:
            if os.environ.get("STAND_IN_PRED_MISSES"):  # tests assert that a design made no miss
                with open(os.environ["STAND_IN_PRED_MISSES"], "a", encoding="utf-8") as log:
                    log.write(json.dumps(tokens) + "\n")
            print(f"not recorded: {json.dumps(tokens)}", file=sys.stderr)
            return 97
    sys.stdout.write(put_back(record["stdout"], names))
    sys.stderr.write(put_back(record["stderr"], names))
    if out is not None and "@out" in record["outputs"]:
        with open(out, "w", encoding="utf-8") as f:
            f.write(put_back(record["outputs"]["@out"], names))
    return record["exit"]


def doctored(argv):
    """The answer STAND_IN_PRED_ANSWERS gives this call (its exit status), or None."""
    path = os.environ.get("STAND_IN_PRED_ANSWERS")
    if not path or not argv:
        return None
    with open(path, encoding="utf-8") as f:
        answer = json.load(f).get(argv[0])
    if answer is None:
        return None
    sys.stdout.write(answer.get("stdout", ""))
    sys.stderr.write(answer.get("stderr", ""))
    sys.stdout.flush()
    sys.stderr.flush()
    if answer.get("hang"):
        time.sleep(3600)
    if "signal" in answer:
        os.kill(os.getpid(), answer["signal"])
    return answer.get("exit", 0)


UNRECOGNIZED = (
    "error: unrecognized subcommand '{0}'\n\nUsage: pred [OPTIONS] <COMMAND>\n\n"
    "For more information, try '--help'.\n"
)
OLD_CLI_OWN = ("--version", "-V", "--help", "-h", "list", "export-graph", "extract")


def old_cli(folder, argv):
    """The older CLI's recorded answer to this call (its exit status), or None for the calls it
    leaves to the transcript or the stand-in (reduce, solve, evaluate, create)."""
    if not argv or (argv[0] not in OLD_CLI_OWN and "--help" not in argv):
        return None

    def recorded(name):
        return open(os.path.join(folder, name), encoding="utf-8").read()

    def miss():
        print(f"not recorded: {json.dumps(argv)}", file=sys.stderr)
        return 97

    command, args = argv[0], argv[1:]
    if command in ("--version", "-V") and not args:
        sys.stdout.write(recorded("version.txt"))
        return 0
    if command == "extract":
        sys.stderr.write(UNRECOGNIZED.format("extract"))
        return 2
    if argv in (["--help"], ["-h"]):
        sys.stdout.write(recorded("help.txt"))
        return 0
    if args == ["--help"]:
        name = f"help-{command}.txt"
        if not os.path.isfile(os.path.join(folder, name)):
            return miss()
        sys.stdout.write(recorded(name))
        return 0
    if command == "list" and "--rules" in args:
        sys.stdout.write(recorded("list-rules.stdout"))
        sys.stderr.write(recorded("list-rules.stderr"))
        return int(recorded("list-rules.exit").split()[-1])
    if command == "list" and args == ["--json"]:
        sys.stdout.write(recorded("list.json"))
        sys.stderr.write(recorded("list.stderr"))
        return 0
    if command == "export-graph" and len(args) == 2 and args[0] in OUTPUT_FLAGS:
        with open(os.path.join(folder, "graph.json"), "rb") as f, open(args[1], "wb") as out:
            out.write(f.read())
        print(f"Wrote {args[1]}", file=sys.stderr)
        return 0
    return miss()


def main(argv):
    if (status := doctored(argv)) is not None:
        return status
    old = os.environ.get("STAND_IN_PRED_OLD_CLI")
    if old and (status := old_cli(old, argv)) is not None:
        return status
    if os.environ.get("STAND_IN_PRED_TRANSCRIPT"):
        return replay(os.environ["STAND_IN_PRED_TRANSCRIPT"], argv)
    if argv[:1] in (["--version"], ["-V"]):
        print("pred 0.5.0-stand-in")
        return 0
    command, args = argv[0], argv[1:]
    if os.environ.get("STAND_IN_PRED_HANG") == command:
        time.sleep(3600)
    try:
        out = run(command, args)
    except PredError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return exc.code
    text = json.dumps(out, indent=2, sort_keys=True)
    if "-o" in args:
        with open(option(args, "-o"), "w") as f:
            f.write(text)
        print(f"Wrote {option(args, '-o')}", file=sys.stderr)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
