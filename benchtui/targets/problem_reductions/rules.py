"""Rules by their names: as pred lists them, as a certificate or a campaign task names them, and
which `src/rules/` files are a rule's own source (what ties a panic's location to the rule).

pred names a rule by its source and target variants (`SteinerTree/SimpleGraph/i32 -> ILP/bool`,
`pred list --rules`); problem-reductions keeps it in `src/rules/<source>_<target>.rs`, the problem
names lower-cased (`steinertree_ilp.rs`), a few of them abbreviated (`sat_`, `coloring_`,
`circuit_`), a file sometimes holding both directions of a pair (`spinglass_maxcut.rs` also has
MaxCut -> SpinGlass), and a problem's variant casts in `<problem>_casts.rs`. Campaign tasks are
those file stems.
"""

from __future__ import annotations

from collections.abc import Iterable

Rule = tuple[str, str]
"""(source spec, target spec) as `pred list --rules` prints them: `TYPE/value/value`."""

#: stem -> (source spec, target spec), each a rule of `pred list --rules` (checked by a test).
TASK_RULES: dict[str, Rule] = {
    "maximumindependentset_maximumclique": (
        "MaximumIndependentSet/SimpleGraph/i32",
        "MaximumClique/SimpleGraph/i32",
    ),
    "minimumvertexcover_maximumindependentset": (
        "MinimumVertexCover/SimpleGraph/i32",
        "MaximumIndependentSet/SimpleGraph/i32",
    ),
    "sat_maximumindependentset": ("Satisfiability", "MaximumIndependentSet/SimpleGraph/One"),
    "spinglass_qubo": ("SpinGlass/SimpleGraph/f64", "QUBO/f64"),
    "spinglass_maxcut": ("SpinGlass/SimpleGraph/i32", "MaxCut/SimpleGraph/i32"),
    "coloring_qubo": ("KColoring/SimpleGraph/KN", "QUBO/f64"),
    "maximumindependentset_maximumsetpacking": (
        "MaximumIndependentSet/SimpleGraph/One",
        "MaximumSetPacking/One",
    ),
    "graphpartitioning_maxcut": ("GraphPartitioning/SimpleGraph", "MaxCut/SimpleGraph/i32"),
    "hamiltoniancircuit_travelingsalesman": (
        "HamiltonianCircuit/SimpleGraph",
        "TravelingSalesman/SimpleGraph/i32",
    ),
    "exactcoverby3sets_maximumsetpacking": ("ExactCoverBy3Sets", "MaximumSetPacking/One"),
}

#: The problem names problem-reductions' rule files abbreviate (sat_maximumindependentset.rs is
#: Satisfiability -> MIS, coloring_qubo.rs KColoring -> QUBO, circuit_spinglass.rs CircuitSAT ->
#: SpinGlass, as of 8df8ac04).
FILE_NAMES: dict[str, tuple[str, ...]] = {
    "Satisfiability": ("sat",),
    "KSatisfiability": ("ksat",),
    "KColoring": ("coloring",),
    "CircuitSAT": ("circuit",),
}


def problem(spec: str) -> str:
    """The problem's type name of a spec (`SteinerTree/SimpleGraph/i32` -> `SteinerTree`)."""
    return spec.split("/")[0].strip()


def values(spec: str) -> list[str]:
    """The variant values of a spec, sorted (pred accepts them in any order)."""
    return sorted(v.strip() for v in spec.split("/")[1:])


def _name(spec: str) -> str:
    return problem(spec).lower()


def _alnum(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


def file_names(spec: str) -> set[str]:
    """What a rule file's stem calls a problem: its name lower-cased, an abbreviation, or the name
    with its variant values (`ilp_bool` in ilp_bool_ilp_i32.rs)."""
    name = problem(spec)
    found = {name.lower(), *FILE_NAMES.get(name, ())}
    if values(spec):
        found.add("_".join([name.lower(), *(v.lower() for v in spec.split("/")[1:])]))
    return found


def own_files(rule: Rule) -> set[str]:
    """The `src/rules/` stems that are the rule's own source: `<source>_<target>` (either order: a
    file may hold both directions of a pair), and `<problem>_casts` for a cast between variants."""
    source, target = rule
    stems = {f"{a}_{b}" for a in file_names(source) for b in file_names(target)}
    stems |= {f"{b}_{a}" for a in file_names(source) for b in file_names(target)}
    if problem(source) == problem(target):
        stems |= {f"{a}_casts" for a in file_names(source)}
    return stems


def rule_of(task: str, rules: list[Rule]) -> Rule | None:
    """The (source, target) rule a task stem names, or None when pred has no such rule."""
    if task in TASK_RULES:
        return TASK_RULES[task] if TASK_RULES[task] in rules else None
    matches = [(s, t) for s, t in rules if f"{_name(s)}_{_name(t)}" == task]
    return matches[0] if len(matches) == 1 else None


def _names_side(side: str, spec: str) -> bool:
    """Whether one side of a certificate's `A -> B` names a pred spec (type, and values if given)."""
    given, *given_values = [p.strip() for p in side.split("/")]
    kinds = {_alnum(problem(spec)), *FILE_NAMES.get(problem(spec), ())}
    return _alnum(given) in kinds and (not given_values or sorted(given_values) == values(spec))


def rules_named(name: str, rules: Iterable[Rule]) -> list[Rule]:
    """The rules of pred a certificate's `rule` may mean: `SRC -> TGT` (types, or specs with
    variant values), `SrcToTgt`, or a `src/rules/` stem (`steinertree_ilp`): every rule that file
    holds, both directions and every variant (the instance's variant tells them apart)."""
    name = name.strip()
    if "->" in name:
        left, right = name.split("->", 1)
        return [(s, t) for s, t in rules if _names_side(left, s) and _names_side(right, t)]
    stem, joined = name.lower(), _alnum(name)
    return [
        (s, t)
        for s, t in rules
        if stem in own_files((s, t))
        or joined in {f"{_alnum(a)}to{_alnum(b)}" for a in file_names(s) for b in file_names(t)}
    ]


def of_instance(rule: Rule, source: dict[str, object]) -> bool:
    """Whether a source instance is of the rule's declared source variant (its type and values)."""
    variant = source.get("variant")
    given = variant if isinstance(variant, dict) else {}
    return problem(rule[0]) == source.get("type") and values(rule[0]) == sorted(
        str(v) for v in given.values()
    )
