"""Which `src/rules/` file is a rule's own (what ties a panic to the rule a certificate names), and
which rules of pred a certificate's `rule` means, against the real builds' rule lists
(`pred list --rules --json`, recorded in `../shared/pred-transcripts/`)."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest
from support.transcripts import BUILDS, need_transcripts

from benchtui.targets.problem_reductions.rules import (
    TASK_RULES,
    Rule,
    of_instance,
    own_files,
    problem,
    rules_named,
)

#: Files of problem-reductions' src/rules/ (8df8ac04) that hold no rule of their own: a panic
#: there is shared code's, never attributed to the rule being reduced.
SHARED_FILES = ("graph", "graph_helpers", "ilp_helpers", "traits", "registry", "cost", "analysis", "mod")


def pred_rules(build: str) -> list[Rule]:
    with open(need_transcripts() / f"{build}.jsonl", encoding="utf-8") as f:
        for line in f:
            record = json.loads(line)
            if record["argv"] == ["list", "--rules", "--json"]:
                return [(r["source"], r["target"]) for r in json.loads(record["stdout"])["rules"]]
    raise AssertionError(f"{build}: no recorded rule list")


@pytest.mark.parametrize(
    ("rule", "stem"),
    [
        (("SteinerTree/SimpleGraph/i32", "ILP/bool"), "steinertree_ilp"),
        (("Satisfiability", "MaximumIndependentSet/SimpleGraph/One"), "sat_maximumindependentset"),
        (("KColoring/SimpleGraph/KN", "QUBO/f64"), "coloring_qubo"),
        (("CircuitSAT", "SpinGlass/SimpleGraph/i32"), "circuit_spinglass"),
        (("MaxCut/SimpleGraph/i32", "SpinGlass/SimpleGraph/i32"), "spinglass_maxcut"),  # both ways
        (("ILP/bool", "ILP/i32"), "ilp_bool_ilp_i32"),
        (("MaximumIndependentSet/SimpleGraph/One", "MaximumIndependentSet/SimpleGraph/i32"),
         "maximumindependentset_casts"),
    ],
)  # fmt: skip
def test_a_rules_own_file(rule, stem):
    assert stem in own_files(rule)


def test_a_name_that_contains_the_rules_is_another_rules_file():
    steiner = ("SteinerTree/SimpleGraph/i32", "ILP/bool")
    assert "steinertreeingraphs_ilp" not in own_files(steiner)
    assert "steinertree_ilp" not in own_files(("SteinerTreeInGraphs/SimpleGraph/i32", "ILP/bool"))


@pytest.mark.parametrize("build", BUILDS)
def test_no_file_is_two_problem_pairs_own_and_shared_files_are_no_rules(build):
    owners: dict[str, set[frozenset[str]]] = defaultdict(set)
    for rule in pred_rules(build):
        for stem in own_files(rule):
            owners[stem].add(frozenset(map(problem, rule)))
    assert [s for s, pairs in owners.items() if len(pairs) > 1] == []
    assert [s for s in SHARED_FILES if s in owners] == []


@pytest.mark.parametrize("build", BUILDS)
def test_every_rule_is_named_by_its_stem_and_its_arrow(build):
    rules = pred_rules(build)
    for source, target in rules:
        stem = f"{problem(source).lower()}_{problem(target).lower()}"
        assert (source, target) in rules_named(stem, rules)
        assert rules_named(f"{source} -> {target}", rules) == [(source, target)]


def test_every_shipped_task_names_its_rule():
    rules = pred_rules("8df8ac04")
    assert all(rule in rules_named(task, rules) for task, rule in TASK_RULES.items())


def test_the_instance_chooses_among_the_variants_a_name_covers():
    rules = pred_rules("8df8ac04")
    named = rules_named("maximumindependentset_maximumclique", rules)
    unit = {"type": "MaximumIndependentSet", "variant": {"graph": "SimpleGraph", "weight": "One"}}
    assert [r for r in named if of_instance(r, unit)] == [
        ("MaximumIndependentSet/SimpleGraph/One", "MaximumClique/SimpleGraph/One")
    ]
    assert rules_named("no_such_rule", rules) == [] and rules_named("Nope -> ILP", rules) == []
