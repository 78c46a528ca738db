"""Hostile inputs, table-driven: scenarios, traces, sweeps, CLI options
and output paths. Every case must exit 2, print a message naming the file, line or key
(and the bad value or what is allowed), and leave the folder exactly as it was.

The CLI runs in-process (typer's CliRunner) inside an empty working folder, so a case that
wrongly simulated and wrote ``results/`` or a half-written ``--out`` is caught.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from typer.testing import CliRunner

from wmtsim.interfaces.cli.main import app
from wmtsim.studies.sweeps.sweep import load_sweep, run_sweep


@dataclass(frozen=True)
class Case:
    """argv (``{d}`` is the working folder), files to create first, text the error has."""

    argv: tuple[str, ...]
    expect: tuple[str, ...]
    files: dict[str, bytes | str] = field(default_factory=dict)


def scen(body: str, *expect: str) -> Case:
    return Case(("run", "{d}/s.toml"), ("s.toml", *expect), {"s.toml": body})


def trace(body: bytes | str, *expect: str) -> Case:
    return Case(("check", "{d}/t.jsonl"), expect, {"t.jsonl": body})


SWEEP = ('scenario = "paper_poisoning"\npolicies = ["wmt"]\n'
         '[parameters.rho]\nvalues = [0.8, 0.9]\n[design]\nkind = "grid"\ntrajectories = 5\n')


def sweep(body: str, *expect: str) -> Case:
    return Case(("sweep", "{d}/w.toml", "--out", "{d}/out", "--no-progress"),
                ("w.toml", *expect), {"w.toml": body})


Q = '{"op": "query", "id": "q"}\n'
T = '{"op": "task", "id": "t", "parent": "q"}\n{"op": "activate", "id": "t"}\n'
A = '{"op": "action", "id": "a", "parent": "t"}\n'

VARY = ("--vary", "stubs.selector_noise=0:0.4", "--vary", "stubs.poison_boost=0:0.1",
        "--levels", "2", "--n", "2", "--no-progress", "--no-charts")
ATT = ("--from", "a3_no_semantic", "--to", "wmt", "--n", "3", "--no-charts")
RUN_MANIFEST = '{"command": "run", "n": 3}'
SCREEN = ("--knob", "rho", "-r", "2", "--n", "3", "--no-charts")
TUNE = ("--trials", "2", "--batch", "2", "--n", "3", "--knob", "rho", "--no-charts",
        "--no-progress")
ATTACK = ("-p", "wmt", "--budget", "1", "--trials", "2", "--n", "5", "--n-holdout", "5",
          "--no-charts")


def _other_study() -> str:
    """An Optuna journal holding a user's study (not wmtsim's)."""
    return ('{"op_code":0,"worker_id":"w","study_name":"my-thesis-study",'
            '"directions":[1]}\n')

CASES: dict[str, Case] = {
    # --- scenarios: top level ----------------------------------------------------------
    "n-zero": scen("n = 0\n", "n:", "0 is invalid", "[1, 10000000]"),
    "n-huge": scen("n = 10000001\n", "n:", "[1, 10000000]"),
    "n-float": scen("n = 1.5\n", "n:", "1.5"),
    "seed-negative": scen("seed = -1\n", "seed:", "-1"),
    "seed-2^63": scen("seed = 9223372036854775808\n", "seed:", "9223372036854775807"),
    "name-empty": scen('name = ""\n', "name:", "1 to 200"),
    "name-nul": scen('name = "a\\u0000b"\n', "name:", "control characters"),
    "name-newline": scen('name = "a\\nb"\n', "name:", "line breaks"),
    "name-long": scen(f'name = "{"x" * 201}"\n', "name:", "1 to 200"),
    "name-number": scen("name = 5\n", "name:", "a string"),
    "policies-empty": scen("policies = []\n", "policies:", "non-empty"),
    "policies-unknown": scen('policies = ["bogus"]\n', "policies[0]", "'bogus'", "wmt"),
    "policies-repeated": scen('policies = ["wmt", "wmt"]\n', "policies:", "at most once"),
    "paper-unknown": scen('paper = "table9"\n', "paper:", "table4"),
    "top-unknown-key": scen("bogus = 1\n", "bogus:", "unknown key", "allowed"),
    # --- scenarios: [world] --------------------------------------------------------------
    "p_success-high": scen("[world]\np_success = 1.5\n", "world.p_success", "[0, 1]"),
    "p_success-nan": scen("[world]\np_success = nan\n", "world.p_success", "NaN"),
    "p_success-inf": scen("[world]\np_success = inf\n", "world.p_success", "inf"),
    "p_success-string": scen('[world]\np_success = "high"\n', "world.p_success", "'high'"),
    "n_actions-reversed": scen("[world]\nn_actions = [3, 1]\n", "world.n_actions",
                               "min <= max"),
    "n_actions-float": scen("[world]\nn_actions = [1e8, 1e8]\n", "world.n_actions",
                            "integers"),
    "n_actions-huge": scen("[world]\nn_actions = [200000, 200000]\n", "world.n_actions",
                           "100,000"),
    "n_actions-one": scen("[world]\nn_actions = [3]\n", "world.n_actions", "pair"),
    # n_subtasks: fixed, range or distribution; each error names the sub-key.
    "n_subtasks-zero": scen("[world]\nn_subtasks = 0\n", "world.n_subtasks", "0 is invalid",
                            "a pair [min, max]", "dist"),
    "n_subtasks-string": scen('[world]\nn_subtasks = "many"\n', "world.n_subtasks",
                              "'many'", "values = [...], p = [...]"),
    "n_subtasks-p-sum": scen("[world]\nn_subtasks = {values = [2, 3], p = [0.5, 0.6]}\n",
                             "world.n_subtasks.p", "[0.5, 0.6]", "sum to 1", "1.1"),
    "n_subtasks-p-length": scen("[world]\nn_subtasks = {values = [2, 3, 4], p = [0.5, 0.5]}\n",
                                "world.n_subtasks.p", "3 probabilities, one per value"),
    "n_subtasks-p-negative": scen("[world]\nn_subtasks = {values = [2, 3], p = [1.5, -0.5]}\n",
                                  "world.n_subtasks.p", "1.5", "[0, 1]"),
    "n_subtasks-values-repeated": scen(
        "[world]\nn_subtasks = {values = [2, 2], p = [0.5, 0.5]}\n",
        "world.n_subtasks.values", "[2, 2]", "distinct integers"),
    "n_subtasks-values-zero": scen("[world]\nn_subtasks = {values = [0, 1], p = [0.5, 0.5]}\n",
                                   "world.n_subtasks.values", "0 is invalid", "[1, 100000]"),
    "n_subtasks-unknown-key": scen("[world]\nn_subtasks = {values = [2], probs = [1.0]}\n",
                                   "world.n_subtasks.probs", "the keys values and p"),
    "n_subtasks-dist-unknown": scen(
        '[world]\nn_subtasks = {dist = "zipf", mean = 2.0, min = 1, max = 4}\n',
        "world.n_subtasks.dist", "'zipf'", "poisson"),
    "n_subtasks-dist-mean": scen(
        '[world]\nn_subtasks = {dist = "poisson", mean = 0.0, min = 1, max = 4}\n',
        "world.n_subtasks.mean", "0.0 is invalid", "(0, 1e+06]"),
    "n_subtasks-dist-max": scen(
        '[world]\nn_subtasks = {dist = "poisson", mean = 2.0, min = 3, max = 2}\n',
        "world.n_subtasks.max", "2 is invalid", "[3, 1002]"),
    "n_subtasks-dist-missing": scen(
        '[world]\nn_subtasks = {dist = "poisson", mean = 2.0, min = 1}\n',
        "world.n_subtasks.max", "dist, mean, min and max"),
    "resume_folded-unknown": scen('[world]\nresume_folded = "sometimes"\n',
                                  "world.resume_folded", "'sometimes'", "new | unfold | hidden"),
    "n_actions-memories": scen("[world]\nn_subtasks = [400, 400]\nn_actions = [400, 400]\n",
                               "world.n_actions", "memories per trajectory"),
    "tokens-overflow": scen("[world]\ntokens_median = 1e6\ntokens_sigma = 5.0\n",
                            "world.tokens_sigma", "2^30", "tokens_sigma <="),
    "tokens_median-1e6": scen("[world]\ntokens_median = 1e6\n", "world.tokens_sigma",
                              "2^30", "tokens_median=1e+06"),
    "task_tokens-3e9": scen("[world]\ntask_tokens = 3000000000\n", "world.task_tokens",
                            "1073741824"),
    "query_tokens-wrap": scen("[world]\nquery_tokens = 4294967336\n", "world.query_tokens",
                              "4294967336"),
    "tokens_sigma-negative": scen("[world]\ntokens_sigma = -1.0\n", "world.tokens_sigma",
                                  "[0, 5]"),
    "max_depth-7": scen("[world]\nmax_depth = 7\n", "world.max_depth", "[1, 6]"),
    "nesting-explodes": scen("[world]\nmax_depth = 6\np_nested = 1.0\n"
                             "nested_subtasks = [20, 20]\n", "world.nested_subtasks",
                             "100,000"),
    "n_globals-10001": scen("[world]\nn_globals = 10001\n", "world.n_globals", "10000"),
    "world-unknown-key": scen("[world]\nbogus = 1\n", "world.bogus", "unknown key"),
    "world-poison": scen("[world]\npoison = []\n", "world.poison", "[[poison]]"),
    "world-not-table": scen("world = 3\n", "world", "a [world] table"),
    # --- scenarios: [params], [stubs], [baselines], [[poison]] ---------------------------
    "rho-zero": scen("[params]\nrho = 0\n", "params.rho", "(0, 1]"),
    "rho-high": scen("[params]\nrho = 1.5\n", "params.rho", "(0, 1]"),
    "M-zero": scen("[params]\nM = 0\n", "params.M", "[1, 2^53]"),
    "M-float": scen("[params]\nM = 2.5\n", "params.M", "2.5"),
    "budget-zero": scen("[params]\nbudget = 0\n", "params.budget", "[1, 2^53]"),
    "budget-2^53+1": scen("[params]\nbudget = 9007199254740993\n", "params.budget", "2^53"),
    "u_success-below-failure": scen("[params]\nu_success = 0.2\n", "params.u_success",
                                    "greater than"),
    "alpha-negative": scen("[params]\nalpha = -1\n", "params.alpha", "[0, inf)"),
    "tau_obs-inf": scen("[params]\ntau_obs = inf\n", "params.tau_obs", "finite"),
    "event_resets_m-int": scen("[params]\nevent_resets_m = 1\n", "params.event_resets_m",
                               "true or false"),
    "params-unknown-key": scen("[params]\nbogus = 1\n", "params.bogus", "unknown key"),
    "top_k-negative": scen("[stubs]\ntop_k = -1\n", "stubs.top_k", "-1"),
    "c_sum-2": scen("[stubs]\nc_sum = 2\n", "stubs.c_sum", "[0, 1]"),
    "dilution-zero": scen("[stubs]\ndilution_tokens = 0\n", "stubs.dilution_tokens", "(0,"),
    "base_tokens-1e20": scen("[stubs]\nbase_tokens = 1e20\n", "stubs.base_tokens", "1e+20"),
    "base_tokens-10^20": scen("[stubs]\nbase_tokens = 100000000000000000000\n",
                              "stubs.base_tokens", "2^53"),
    "stubs-unknown-key": scen("[stubs]\nbogus = 1\n", "stubs.bogus", "unknown key"),
    "baselines-capacity": scen("[baselines]\ncapacity = 0\n", "baselines.capacity",
                               "[1, 100000]"),
    "baselines-unknown-key": scen("[baselines]\nbogus = 1\n", "baselines.bogus",
                                  "unknown key"),
    "poison-kind": scen('[[poison]]\nkind = "bogus"\n', "poison[0].kind", "plausible"),
    "poison-no-kind": scen("[[poison]]\ncount = 1\n", "poison[0].kind", "required"),
    "poison-count": scen('[[poison]]\nkind = "failed"\ncount = 1001\n', "poison[0].count",
                         "[0, 1000]"),
    "poison-tokens": scen('[[poison]]\nkind = "failed"\ntokens = 2000000000\n',
                          "poison[0].tokens", "1073741824"),
    "poison-p_inject": scen('[[poison]]\nkind = "failed"\np_inject = -0.1\n',
                            "poison[0].p_inject", "[0, 1]"),
    "poison-unknown-key": scen('[[poison]]\nkind = "failed"\nbogus = 1\n',
                               "poison[0].bogus", "unknown key"),
    "poison-not-array": scen("poison = 3\n", "poison", "[[poison]]"),
    # --- scenarios: the file itself ------------------------------------------------------
    "toml-duplicate-key": scen("n = 5\nn = 6\n", "'n' is defined twice", "line 2"),
    "toml-syntax": scen("n = \n", "invalid TOML", "line 1"),
    "toml-deep": scen("a = " + "[" * 3000 + "]" * 3000 + "\n", "nested too deeply"),
    "toml-binary": Case(("run", "{d}/s.toml"), ("s.toml", "not UTF-8"),
                        {"s.toml": b"\x00\xff\xfe\x80binary"}),
    "toml-utf16": Case(("run", "{d}/s.toml"), ("s.toml", "not UTF-8"),
                       {"s.toml": "n = 5\n".encode("utf-16")}),
    "scenario-folder": Case(("run", "{d}/sub"), ("sub", "not a regular file"),
                            {"sub/x": ""}),
    "scenario-missing": Case(("run", "{d}/none.toml"), ("none.toml", "no such file")),
    # --- CLI options -----------------------------------------------------------------------
    "opt-n-zero": Case(("run", "paper_poisoning", "--n", "0"), ("--n",)),
    "opt-n-10^12": Case(("run", "paper_poisoning", "--n", str(10**12)), ("--n",)),
    "opt-seed-negative": Case(("run", "paper_poisoning", "--seed", "-1"), ("--seed",)),
    "opt-seed-2^63": Case(("run", "paper_poisoning", "--seed", str(2**63)), ("--seed",)),
    "opt-policy": Case(("run", "paper_poisoning", "--policy", "bogus"),
                       ("--policy", "'bogus'", "allowed")),
    "opt-threads-zero": Case(("run", "paper_poisoning", "--threads", "0"), ("--threads",)),
    "opt-threads-huge": Case(("run", "paper_poisoning", "--threads", "100000"),
                             ("--threads", "allowed")),
    "opt-record-steps": Case(("run", "paper_poisoning", "--record-steps", "-1"),
                             ("--record-steps",)),
    "set-rho": Case(("run", "paper_poisoning", "--set", "rho=2"), ("params.rho", "(0, 1]")),
    "set-unknown": Case(("run", "paper_poisoning", "--set", "bogus=1"),
                        ("bogus", "unknown key")),
    "set-ambiguous": Case(("run", "paper_poisoning", "--set", "top_k=3"),
                          ("top_k", "stubs.top_k", "baselines.top_k")),
    "set-no-equals": Case(("run", "paper_poisoning", "--set", "rho"), ("key=value",)),
    "set-name-nul": Case(("run", "paper_poisoning", "--set", 'name="a\\u0000b"'),
                         ("name", "control characters")),
    "set-no-poison": Case(("run", "paper_poisoning", "--set", "poison[99].count=1"),
                          ("poison[99]",)),
    "set-section": Case(("run", "paper_poisoning", "--set", "nowhere.rho=1"),
                        ("nowhere.rho", "unknown section")),
    "compare-policy": Case(("compare", "paper_poisoning", "--policy", "bogus"),
                           ("--policy", "'bogus'")),
    "compare-n": Case(("compare", "paper_poisoning", "--n", "0"), ("--n",)),
    "calibrate-method": Case(("calibrate", "paper_poisoning", "--method", "bogus"),
                             ("--method", "'bogus'")),
    "calibrate-out-ext": Case(("calibrate", "paper_poisoning", "--out", "{d}/x.toml"),
                              ("--out", "writes a folder")),
    "schema-unknown": Case(("schema", "bogus"), ("'bogus'", "scenario")),
    "analyze-missing": Case(("analyze", "{d}/none"), ("none", "not a sweep folder")),
    "analyze-file": Case(("analyze", "{d}/f.txt"), ("f.txt", "not a sweep folder"),
                         {"f.txt": "x"}),
    "analyze-not-sweep": Case(("analyze", "{d}/plain"), ("plain", "manifest.json"),
                              {"plain/x.txt": "x"}),
    "analyze-metric": Case(("analyze", "{sweep}", "--out", "{d}/an", "--metric", "bogus"),
                           ("--metric", "'bogus'", "tsr")),
    # --- output paths ----------------------------------------------------------------------
    "run-out-file": Case(("run", "paper_poisoning", "--out", "{d}/f"),
                         ("--out", "f'", "is a file"), {"f": "keep"}),
    "run-out-under-file": Case(("run", "paper_poisoning", "--out", "{d}/f/sub"),
                               ("--out", "is a file"), {"f": "keep"}),
    # NUL cannot reach a real command line (argv is C strings); in-process, click refuses.
    "run-out-nul": Case(("run", "paper_poisoning", "--out", "{d}/a\x00b"), ("Usage",)),
    "run-out-long": Case(("run", "paper_poisoning", "--out", "{d}/" + "x" * 300),
                         ("--out", "300 bytes")),
    "run-out-foreign": Case(("run", "paper_poisoning", "--out", "{d}/mine"),
                            ("--out", "not a wmtsim result folder"), {"mine/thesis.tex": "x"}),
    "run-out-dot": Case(("run", "paper_poisoning", "--out", "."), ("--out", "root")),
    "run-out-dotdot": Case(("run", "paper_poisoning", "--out", "{d}/.."), ("--out",)),
    "compare-out-file": Case(("compare", "paper_poisoning", "--out", "{d}/f"),
                             ("--out", "is a file"), {"f": "keep"}),
    "compare-out-foreign": Case(("compare", "paper_poisoning", "--out", "{d}/mine"),
                                ("--out", "not a wmtsim result"), {"mine/a.csv": "1"}),
    "replay-out-ext": Case(("replay", "{trace}", "--out", "{d}/x.txt"), ("--out", ".txt")),
    "replay-out-folder": Case(("replay", "{trace}", "--out", "{d}/x.parquet"),
                              ("--out", "is a folder"), {"x.parquet/keep": "x"}),
    "replay-out-under-file": Case(("replay", "{trace}", "--out", "{d}/f/x.parquet"),
                                  ("--out", "is a file"), {"f": "keep"}),
    "replay-out-nul": Case(("replay", "{trace}", "--out", "{d}/a\x00.csv"), ("Usage",)),
    "sweep-out-file": Case(("sweep", "{d}/w.toml", "--out", "{d}/f", "--no-progress"),
                           ("f", "not a file"), {"w.toml": SWEEP, "f": "keep"}),
    "sweep-out-under-file": Case(("sweep", "{d}/w.toml", "--out", "{d}/f/sub",
                                  "--no-progress"), ("--out", "cannot create"),
                                 {"w.toml": SWEEP, "f": "keep"}),
    "sweep-out-foreign": Case(("sweep", "{d}/w.toml", "--out", "{d}/mine", "--no-progress"),
                              ("mine", "not a sweep folder"),
                              {"w.toml": SWEEP, "mine/thesis.tex": "x"}),
    "sweep-out-nul": Case(("sweep", "{d}/w.toml", "--out", "{d}/a\x00b", "--no-progress"),
                          ("Usage",), {"w.toml": SWEEP}),
    "sweep-resume-nothing": Case(("sweep", "{d}/w.toml", "--out", "{d}/new", "--resume",
                                  "--no-progress"), ("nothing to resume",), {"w.toml": SWEEP}),
    "analyze-out-file": Case(("analyze", "{sweep}", "--out", "{d}/f"), ("--out", "is a file"),
                             {"f": "keep"}),
    "analyze-out-foreign": Case(("analyze", "{sweep}", "--out", "{d}/mine"),
                                ("--out", "not a wmtsim result"), {"mine/x": "x"}),
    "calibrate-out-under-file": Case(("calibrate", "paper_poisoning", "--out",
                                      "{d}/f/x"), ("--out", "is a file"), {"f": "keep"}),
    "schema-out-folder": Case(("schema", "scenario", "--out", "{d}/sub"),
                              ("--out", "is a folder"), {"sub/x": "x"}),
    # --- issue 27: the newer commands keep the promises ----------------------------------
    "claims-out-foreign": Case(("claims", "paper_poisoning", *VARY, "--out", "{d}/mine"),
                               ("--out", "not a wmtsim result"), {"mine/thesis.tex": "x"}),
    "claims-out-run-result": Case(("claims", "paper_poisoning", *VARY, "--out", "{d}/r"),
                                  ("--out", "a result of `wmtsim run`"),
                                  {"r/manifest.json": RUN_MANIFEST, "r/summary.parquet": "x"}),
    "claims-out-dot": Case(("claims", "paper_poisoning", *VARY, "--out", "."), ("--out", "root")),
    "claims-scheduler-garbage": Case(("claims", "paper_poisoning", *VARY, "--out", "{d}/c",
                                      "--scheduler", ":::"), ("--scheduler", "':::'")),
    "attribute-out-foreign": Case(("attribute", "paper_poisoning", *ATT, "--out", "{d}/mine"),
                                  ("--out", "not a wmtsim result"), {"mine/thesis.tex": "x"}),
    "attribute-out-dot": Case(("attribute", "paper_poisoning", *ATT, "--out", "."),
                              ("--out", "root")),
    "attribute-out-dotdot": Case(("attribute", "paper_poisoning", *ATT, "--out", ".."),
                                 ("--out", "root")),
    "attribute-out-run-result": Case(("attribute", "paper_poisoning", *ATT, "--out", "{d}/r"),
                                     ("--out", "a result of `wmtsim run`"),
                                     {"r/manifest.json": RUN_MANIFEST, "r/summary.parquet": "x"}),
    "attribute-out-file": Case(("attribute", "paper_poisoning", *ATT, "--out", "{d}/f"),
                               ("--out", "is a file"), {"f": "keep"}),
    "attribute-out-under-file": Case(("attribute", "paper_poisoning", *ATT, "--out",
                                      "{d}/f/sub"), ("--out", "is a file"), {"f": "keep"}),
    "attribute-out-300": Case(("attribute", "paper_poisoning", *ATT, "--out", "{d}/" + "x" * 300),
                              ("--out", "300 bytes")),
    "attribute-permutations-10^12": Case(("attribute", "paper_poisoning", *ATT,
                                          "--permutations", str(10**12)), ("--permutations",)),
    "calibrate-weight-inf": Case(("calibrate", "paper_poisoning", "--weight", "wmt=inf"),
                                 ("--weight", "'wmt=inf'", "finite")),
    "calibrate-weight-nan": Case(("calibrate", "paper_poisoning", "--weight", "wmt=nan"),
                                 ("--weight", "finite")),
    "calibrate-weight-negative": Case(("calibrate", "paper_poisoning", "--weight", "wmt=-1"),
                                      ("--weight", ">= 0")),
    "calibrate-order-weight-inf": Case(("calibrate", "paper_poisoning", "--order-weight",
                                        "inf"), ("--order-weight",)),
    "calibrate-order-weight-nan": Case(("calibrate", "paper_poisoning", "--order-weight",
                                        "nan"), ("--order-weight",)),
    "calibrate-knob-seed": Case(("calibrate", "paper_poisoning", "--knob", "seed=0:100:int"),
                                ("--knob", "'seed'", "not a numeric knob")),
    "calibrate-knob-n": Case(("calibrate", "paper_poisoning", "--knob", "n=1:100:int"),
                             ("--knob", "'n'", "not a numeric knob")),
    "calibrate-knob-inf": Case(("calibrate", "paper_poisoning", "--knob", "stubs.p_leak=0:inf"),
                               ("--knob", "finite")),
    "calibrate-knob-words": Case(("calibrate", "paper_poisoning", "--knob", "stubs.p_leak=a:b"),
                                 ("--knob", "not numbers")),
    "calibrate-out-mine-toml": Case(("calibrate", "paper_poisoning", "--out", "{d}/mine.toml"),
                                    ("--out", "writes a folder"), {"mine.toml": "n = 5\n"}),
    "calibrate-out-foreign": Case(("calibrate", "paper_poisoning", "--out", "{d}/mine"),
                                  ("--out", "not a wmtsim result"), {"mine/fit.errors.csv": "x"}),
    "compare-budget-2^53+1": Case(("compare", "paper_poisoning", "--budget",
                                   "9007199254740993"), ("--budget", "2^53")),
    "compare-budget-superscript": Case(("compare", "paper_poisoning", "--budget", "\u00b2"),
                                       ("--budget", "'\u00b2'")),
    "compare-budget-out-compare-result": Case(
        ("compare", "paper_poisoning", "--budget", "200", "--out", "{d}/c"),
        ("--out", "a result of `wmtsim compare`"),
        {"c/manifest.json": '{"command": "compare"}', "c/summary.parquet": "x"}),
    "run-out-4k": Case(("run", "paper_poisoning", "--out", "{d}/" + "/".join(["y" * 200] * 21)),
                       ("--out", "bytes long")),
    "run-out-compare-result": Case(("run", "paper_poisoning", "--out", "{d}/c"),
                                   ("--out", "a result of `wmtsim compare`"),
                                   {"c/manifest.json": '{"command": "compare"}'}),
    "sweep-out-run-result": Case(("sweep", "{d}/w.toml", "--out", "{d}/r", "--no-progress"),
                                 ("r", "not a sweep folder"),
                                 {"w.toml": SWEEP, "r/manifest.json": RUN_MANIFEST}),
    "sweep-scheduler-garbage": Case(("sweep", "{d}/w.toml", "--out", "{d}/o", "--no-progress",
                                     "--scheduler", ":::"), ("--scheduler", "':::'"),
                                    {"w.toml": SWEEP}),
    "replay-out-mine-csv": Case(("replay", "{trace}", "--out", "{d}/mine.csv"),
                                ("--out", "not a result of `wmtsim replay`"),
                                {"mine.csv": "a,b\n1,2\n"}),
    "replay-out-mine-parquet": Case(("replay", "{trace}", "--out", "{d}/mine.parquet"),
                                    ("--out", "not a result of `wmtsim replay`"),
                                    {"mine.parquet": "x"}),
    "demo-out-mine": Case(("demo", "--out", "{d}/mine.csv"),
                          ("--out", "not a result of `wmtsim demo`"), {"mine.csv": "thesis\n"}),
    "schema-out-mine": Case(("schema", "scenario", "--out", "{d}/mine.json"),
                            ("--out", "not a result of `wmtsim schema`"), {"mine.json": "{}"}),
    "check-dev-zero": Case(("check", "/dev/zero"), ("/dev/zero", "a device",
                                                    "not a regular file")),
    "trace-line-too-long": trace(Q + '{"op": "global", "id": "' + "g" * (1 << 22) + '"}\n',
                                 "line 2", "longer than"),
    "analyze-garbage-chunk": Case(("analyze", "{damaged}/garbage", "--out", "{d}/an"),
                                  ("cannot read this sweep file", "PAR1")),
    "analyze-truncated-chunk": Case(("analyze", "{damaged}/truncated", "--out", "{d}/an"),
                                    ("cannot read this sweep file",)),
    "analyze-deleted-chunk": Case(("analyze", "{damaged}/deleted", "--out", "{d}/an"),
                                  ("cannot read this sweep file", "No such file")),
    # --- issue 27, round two: screen, tune, attack, compare --parity ---------------------
    "screen-out-foreign": Case(("screen", "paper_poisoning", *SCREEN, "--out", "{d}/mine"),
                               ("--out", "not a wmtsim result"), {"mine/thesis.tex": "x"}),
    "screen-out-run-result": Case(("screen", "paper_poisoning", *SCREEN, "--out", "{d}/r"),
                                  ("--out", "a result of `wmtsim run`"),
                                  {"r/manifest.json": RUN_MANIFEST, "r/summary.parquet": "x"}),
    "screen-out-dot": Case(("screen", "paper_poisoning", *SCREEN, "--out", "."),
                           ("--out", "root")),
    "screen-out-300": Case(("screen", "paper_poisoning", *SCREEN, "--out", "{d}/" + "x" * 300),
                           ("--out", "300 bytes")),
    "screen-trajectories-huge": Case(("screen", "paper_poisoning", "-r", "1001"),
                                     ("--trajectories",)),
    "screen-points-times-n": Case(("screen", "paper_poisoning", "-r", "1000", "--n", "100000"),
                                  ("--trajectories", "20,000,000", "held in memory")),
    "tune-batch-times-n": Case(("tune", "paper_poisoning", "--batch", "10000", "--trials",
                                "10000", "--n", "100000"), ("--batch", "20,000,000")),
    "screen-knob-unknown": Case(("screen", "paper_poisoning", "--knob", "bogus"),
                                ("--knob", "'bogus'", "params.rho")),
    "screen-metric-unknown": Case(("screen", "paper_poisoning", "--metric", "bogus"),
                                  ("--metric", "'bogus'", "tsr")),
    "screen-scheduler-garbage": Case(("screen", "paper_poisoning", *SCREEN, "--out", "{d}/o",
                                      "--scheduler", ":::"), ("--scheduler", "':::'")),
    "tune-out-foreign": Case(("tune", "paper_poisoning", *TUNE, "--out", "{d}/mine"),
                             ("--out", "not a wmtsim result"), {"mine/thesis.tex": "x"}),
    "tune-out-garbage-storage": Case(("tune", "paper_poisoning", *TUNE, "--out", "{d}/mine"),
                                     ("--out", "optuna.journal", "not the work"),
                                     {"mine/optuna.journal": "a user's file\nmore\n"}),
    "tune-out-other-optuna-study": Case(("tune", "paper_poisoning", *TUNE, "--out", "{d}/mine"),
                                        ("--out", "optuna.journal", "not the work"),
                                        {"mine/optuna.journal": _other_study()}),
    "tune-own-result-garbage-storage": Case(
        ("tune", "paper_poisoning", *TUNE, "--out", "{d}/o"),
        ("o/optuna.journal", "line 1", "not a JSON record", "cannot use the tuning study"),
        {"o/manifest.json": '{"command": "tune"}', "o/optuna.journal": "garbage\nmore\n"}),
    "tune-scheduler-unreachable": Case(("tune", "paper_poisoning", *TUNE, "--out", "{d}/o",
                                        "--scheduler", "tcp://127.0.0.1:1"),
                                       ("--scheduler", "cannot connect within")),
    "tune-robust": Case(("tune", "paper_poisoning", "--robust", "q2"), ("--robust", "'q2'")),
    "tune-objective": Case(("tune", "paper_poisoning", "--objective", "tsr:up"),
                           ("--objective", "'tsr:up'", "max | min")),
    "tune-objective-metric": Case(("tune", "paper_poisoning", "--objective", "bogus:max"),
                                  ("--objective", "'bogus'")),
    "tune-trials-huge": Case(("tune", "paper_poisoning", "--trials", str(10**6)),
                             ("--trials",)),
    "tune-batch-one": Case(("tune", "paper_poisoning", "--batch", "1"), ("--batch",)),
    "tune-validate-on-missing": Case(("tune", "paper_poisoning", "--validate-on",
                                      "{d}/none.toml"), ("none.toml",)),
    "attack-scheduler-garbage": Case(("attack", "paper_poisoning", *ATTACK, "--out", "{d}/o",
                                      "--scheduler", ":::"), ("--scheduler", "':::'")),
    "attack-workers-zero": Case(("attack", "paper_poisoning", *ATTACK, "--out", "{d}/o",
                                 "--workers", "0"), ("--workers", "greater than or equal")),
    "attack-out-foreign": Case(("attack", "paper_poisoning", *ATTACK, "--out", "{d}/mine"),
                               ("--out", "not a wmtsim result"), {"mine/thesis.tex": "x"}),
    "attack-out-search-foreign": Case(("attack", "paper_poisoning", *ATTACK, "--out",
                                       "{d}/mine"), ("--out", "search", "not the work"),
                                      {"mine/search/thesis.tex": "x"}),
    "attack-out-search-garbage-log": Case(("attack", "paper_poisoning", *ATTACK, "--out",
                                           "{d}/mine"), ("--out", "search", "not the work"),
                                          {"mine/search/trials.jsonl": "my notes\n"}),
    "attack-out-compare-result": Case(("attack", "paper_poisoning", *ATTACK, "--out", "{d}/c"),
                                      ("--out", "a result of `wmtsim compare`"),
                                      {"c/manifest.json": '{"command": "compare"}'}),
    "attack-out-dot": Case(("attack", "paper_poisoning", *ATTACK, "--out", "."),
                           ("--out", "root")),
    "attack-budget-inf": Case(("attack", "paper_poisoning", "--budget", "inf"),
                              ("--budget", "'inf'", "(0, 64]")),
    "attack-budget-many": Case(("attack", "paper_poisoning", "--budget",
                                ",".join(str(k) for k in range(1, 18))),
                               ("--budget", "at most 16")),
    "attack-trials-huge": Case(("attack", "paper_poisoning", "--trials", str(10**6)),
                               ("--trials",)),
    "attack-space-nan": Case(("attack", "paper_poisoning", "--space", "stealth_relevance=nan"),
                             ("--space", "stealth_relevance", "NaN")),
    "attack-space-unknown": Case(("attack", "paper_poisoning", "--space", "bogus=1"),
                                 ("--space", "'bogus=1'")),
    "attack-kinds": Case(("attack", "paper_poisoning", "--kinds", "bogus"),
                         ("--kinds", "'bogus'")),
    "attack-harm": Case(("attack", "paper_poisoning", "--harm", "bogus"), ("--harm", "'bogus'")),
    "attack-holdout-is-search": Case(("attack", "paper_poisoning", "--seed", "3",
                                      "--holdout-seed", "3"), ("--holdout-seed", "3")),
    "parity-out-foreign": Case(("compare", "paper_poisoning", "--parity", "--out", "{d}/mine"),
                               ("--out", "not a wmtsim result"), {"mine/thesis.tex": "x"}),
    "parity-out-compare-result": Case(("compare", "paper_poisoning", "--parity", "--out",
                                       "{d}/c"), ("--out", "a result of `wmtsim compare`"),
                                      {"c/manifest.json": '{"command": "compare"}'}),
    "parity-out-dot": Case(("compare", "paper_poisoning", "--parity", "--out", "."),
                           ("--out", "root")),
    "compare-budget-and-parity": Case(("compare", "paper_poisoning", "--budget", "200",
                                       "--parity"), ("--budget", "--parity", "one of them")),
    "compare-parity-precision": Case(("compare", "paper_poisoning", "--parity", "--precision",
                                      "0.05"), ("--precision", "--parity")),
    "compare-budget-strict": Case(("compare", "paper_poisoning", "--budget", "200", "--strict"),
                                  ("--strict", "--budget")),
    "parity-policy": Case(("compare", "paper_poisoning", "--parity", "--policy", "bogus"),
                          ("--policy", "'bogus'")),
    # --- traces ------------------------------------------------------------------------------
    "trace-bad-utf8": trace(Q.encode() + b'{"op": "global", "id": "g"}\n'
                            b'{"op": "global", "id": "\xff"}\n', "line 3", "not UTF-8"),
    "trace-utf16": trace(Q.encode("utf-16"), "line 1", "UTF-16"),
    "trace-binary": trace(b"\x00\x01\x02\x03\xfe\xfa\n", "line 1"),
    "trace-surrogate": trace(Q + '{"op": "global", "id": "\\ud800"}\n', "line 2",
                             "surrogate"),
    "trace-deep": trace('{"op": "query", "params": ' + "[" * 50000 + "]" * 50000 + "}\n",
                        "line 1", "nested too deeply"),
    "trace-tokens-1e20": trace(Q + '{"op": "global", "id": "g", "tokens": 1e20}\n',
                               "line 2", "tokens", "1073741824"),
    "trace-tokens-2^31": trace(Q + '{"op": "global", "id": "g", "tokens": 2147483648}\n',
                               "line 2", "tokens"),
    "trace-tol-1e400": trace(Q + '{"op": "expect", "id": "q", "u": 5, "tol": 1e400}\n',
                             "line 2", "1e400", "out of range"),
    "trace-nan": trace(Q + '{"op": "expect", "id": "q", "u": NaN}\n', "line 2", "NaN"),
    "trace-first-not-query": trace(A, "line 1", "first line must be a query"),
    "trace-unknown-op": trace(Q + '{"op": "bogus"}\n', "line 2", "unknown op 'bogus'"),
    "trace-unknown-field": trace(Q + '{"op": "global", "id": "g", "x": 1}\n', "line 2",
                                 "unknown field 'x'"),
    "trace-duplicate-id": trace(Q + T + '{"op": "task", "id": "t", "parent": "q"}\n',
                                "line 4", "duplicate id 't'"),
    "trace-parent-action": trace(Q + T + A + '{"op": "action", "id": "b", "parent": "a"}\n',
                                 "line 5", "not a task"),
    "trace-outcome-task": trace(Q + T + '{"op": "outcome", "id": "t", "result": "success"}\n',
                                "line 4", "outcomes belong to actions"),
    "trace-not-candidate": trace(Q + T + '{"op": "select", "selected": ["t"]}\n', "line 4",
                                 "not in the candidate pool"),
    "trace-empty": trace("\n\n", "empty"),
    "trace-duplicate-key": trace('{"op": "query", "op": "query"}\n', "line 1",
                                 "more than once"),
    "trace-negative-tokens": trace(Q + '{"op": "global", "id": "g", "tokens": -1}\n',
                                   "line 2", ">= 0"),
    "trace-folder": Case(("check", "{d}/tr"), ("tr", "folder"), {"tr/x": ""}),
    "trace-missing": Case(("check", "{d}/none.jsonl"), ("none.jsonl",)),
    "replay-bad-trace": Case(("replay", "{d}/t.jsonl", "--out", "{d}/o/r.parquet"),
                             ("line 2",), {"t.jsonl": Q + '{"op": "bogus"}\n'}),
    # --- sweeps ------------------------------------------------------------------------------
    "sweep-binary": Case(("sweep", "{d}/w.toml", "--out", "{d}/out"), ("w.toml", "UTF-8"),
                         {"w.toml": b"\xff\xfe\x00\x01"}),
    "sweep-duplicate-key": sweep(SWEEP + "trajectories = 6\n", "defined twice"),
    "sweep-two-spellings": sweep(SWEEP + "[parameters.params.rho]\nvalues = [0.5]\n",
                                 "params.rho", "parameters.rho"),
    "sweep-bare-and-section": sweep(SWEEP + "[parameters.p_leak]\nvalues = [0.1]\n"
                                    "[parameters.stubs.p_leak]\nvalues = [0.2]\n",
                                    "stubs.p_leak", "parameters.p_leak"),
    "sweep-ambiguous": sweep(SWEEP + "[parameters.top_k]\nvalues = [1, 2]\n",
                             "parameters.top_k", "baselines.top_k"),
    "sweep-unknown-param": sweep(SWEEP + "[parameters.rhoo]\nvalues = [1]\n",
                                 "parameters.rhoo", "unknown key"),
    "sweep-levels-huge": sweep(SWEEP + "[parameters.tau_obs]\nlow = 0.0\nhigh = 1.0\n"
                               "levels = 10000000000\n", "levels", "1,000,000"),
    "sweep-points-huge": sweep(SWEEP.replace("grid", "random") + "points = 2000000\n",
                               "design.points", "1,000,000"),
    "sweep-grid-huge": sweep(SWEEP + "[parameters.tau_obs]\nlow = 0.0\nhigh = 1.0\n"
                             "levels = 600000\n", "design", "1,200,000 points"),
    "sweep-trajectories-zero": sweep(SWEEP.replace("trajectories = 5", "trajectories = 0"),
                                     "design.trajectories"),
    "sweep-trajectories-huge": sweep(SWEEP.replace("trajectories = 5",
                                                   "trajectories = 1000000000000"),
                                     "design.trajectories", "10,000,000"),
    "sweep-seed-negative": sweep(SWEEP + "seed = -1\n", "design.seed"),
    "sweep-seed-overflow": sweep(SWEEP + "seed = 9223372036854775807\nreplicates = 2\n",
                                 "design.seed"),
    "sweep-unknown-top": sweep("bogus = 1\n" + SWEEP, "bogus", "unknown key"),
    "sweep-kind": sweep(SWEEP.replace('"grid"', '"bogus"'), "design.kind", "grid"),
    "sweep-not-swept": sweep(SWEEP + "[parameters.n]\nvalues = [5]\n", "parameters.n",
                             "cannot be swept"),
    "sweep-invalid-row": sweep(SWEEP.replace("[0.8, 0.9]", "[0.8, 1.9]"), "parameters",
                               "rho"),
    "sweep-deep": sweep("a = " + "[" * 3000 + "]" * 3000 + "\n", "nested too deeply"),
    "sweep-scenario-missing": sweep(SWEEP.replace('"paper_poisoning"', '"none.toml"'),
                                    "scenario", "none.toml"),
    "sweep-missing-file": Case(("sweep", "{d}/none.toml", "--out", "{d}/out"),
                               ("none.toml", "cannot read")),
}

# Session 3's fresh cases: the commands the table did not reach yet
# (dynamics, expect, conformance), one-file results' sidecar manifests, devices and
# oversized files as inputs, huge numbers and empty paths for every command.
DYN = ("-p", "wmt", "--n", "5", "--no-charts")
CASES |= {
    "sweep-dev-zero": Case(("sweep", "/dev/zero", "--out", "{d}/out"),
                           ("/dev/zero", "not a regular file")),
    "sweep-file-17mb": sweep("#" * (17 << 20), "w.toml", "larger than 16 MiB"),
    "run-scenario-17mb": scen("#" * (17 << 20), "larger than 16 MiB"),
    "screen-scenario-dev-zero": Case(("screen", "/dev/zero", "--knob", "rho"),
                                     ("/dev/zero", "not a regular file")),
    "tune-scenario-binary": Case(("tune", "{d}/s.toml", *TUNE),
                                 ("s.toml", "not UTF-8"), {"s.toml": b"\xff\xfe\x00garbage"}),
    "attack-scenario-binary": Case(("attack", "{d}/s.toml", *ATTACK),
                                   ("s.toml", "not UTF-8"), {"s.toml": b"\x80\x81"}),
    "dynamics-scenario-binary": Case(("dynamics", "{d}/s.toml", *DYN),
                                     ("s.toml", "not UTF-8"), {"s.toml": b"\x80\x81"}),
    "dynamics-out-foreign": Case(("dynamics", "paper_poisoning", *DYN, "--out", "{d}/mine"),
                                 ("--out", "not a wmtsim result folder"),
                                 {"mine/thesis.tex": "x"}),
    "dynamics-out-run-result": Case(("dynamics", "paper_poisoning", *DYN, "--out", "{d}/r"),
                                    ("--out", "a result of `wmtsim run`"),
                                    {"r/manifest.json": RUN_MANIFEST}),
    "dynamics-out-dot": Case(("dynamics", "paper_poisoning", *DYN, "--out", "."),
                             ("--out", "working folder")),
    "dynamics-out-file": Case(("dynamics", "paper_poisoning", *DYN, "--out", "{d}/f"),
                              ("--out", "is a file"), {"f": "x"}),
    "dynamics-n-huge": Case(("dynamics", "paper_poisoning", "--n", "100000000000000000000"),
                            ("--n",)),
    "dynamics-policy-unknown": Case(("dynamics", "paper_poisoning", "-p", "bogus"),
                                    ("bogus",)),
    "dynamics-out-dev-null": Case(("dynamics", "paper_poisoning", *DYN, "--out", "/dev/null"),
                                  ("--out", "/dev/null", "is a file")),
    "expect-out-user-trace": Case(("expect", "{trace}", "--out", "{d}/mine.jsonl"),
                                  ("--out", "not a result of `wmtsim expect`"),
                                  {"mine.jsonl": Q + T}),
    "expect-out-is-input": Case(("expect", "{d}/t.jsonl", "--out", "{d}/t.jsonl"),
                                ("--out",), {"t.jsonl": Q + T + A}),
    "expect-out-sidecar-mine": Case(("expect", "{trace}", "--out", "{d}/new.jsonl"),
                                    ("new.jsonl.manifest.json", "not a wmtsim manifest"),
                                    {"new.jsonl.manifest.json": "my notes\n"}),
    "expect-out-folder": Case(("expect", "{trace}", "--out", "{d}/f"), ("--out", "folder"),
                              {"f/x": "x"}),
    "expect-out-nul": Case(("expect", "{trace}", "--out", "{d}/a\x00b"),
                           ("--out", "null byte")),
    "expect-out-empty": Case(("expect", "{trace}", "--out", ""), ("--out",)),
    "expect-tol-nan": Case(("expect", "{trace}", "--out", "{d}/o.jsonl", "--tol", "nan"),
                           ("--tol", "nan")),
    "expect-tol-negative": Case(("expect", "{trace}", "--out", "{d}/o.jsonl", "--tol", "-1"),
                                ("--tol",)),
    "expect-tol-inf": Case(("expect", "{trace}", "--out", "{d}/o.jsonl", "--tol", "inf"),
                           ("--tol", "inf")),
    "expect-at-garbage": Case(("expect", "{trace}", "--out", "{d}/o.jsonl", "--at", "bogus"),
                              ("--at", "bogus")),
    "expect-at-huge": Case(("expect", "{trace}", "--out", "{d}/o.jsonl", "--at",
                            "99999999999999999999999"), ("--at", "no event on that line")),
    "expect-trace-binary": Case(("expect", "{d}/t.jsonl", "--out", "{d}/o.jsonl"),
                                ("t.jsonl",), {"t.jsonl": b"\x00\xff\xfe"}),
    "expect-trace-dev-zero": Case(("expect", "/dev/zero", "--out", "{d}/o.jsonl"),
                                  ("/dev/zero",)),
    "replay-out-sidecar-folder": Case(("replay", "{trace}", "--out", "{d}/o.parquet"),
                                      ("o.parquet.manifest.json",),
                                      {"o.parquet.manifest.json/x": "x"}),
    "replay-out-sidecar-other": Case(("replay", "{trace}", "--out", "{d}/o.csv"),
                                     ("--out", "a manifest of `wmtsim demo`"),
                                     {"o.csv": "x\n",
                                      "o.csv.manifest.json": '{"command": "demo"}'}),
    "replay-out-name-too-long-for-sidecar": Case(
        ("replay", "{trace}", "--out", "{d}/" + "r" * 200 + ".csv"),
        ("--out", "too long for its manifest")),
    "replay-out-empty": Case(("replay", "{trace}", "--out", ""), ("--out",)),
    "demo-out-ext": Case(("demo", "--out", "{d}/o.txt"), ("--out", ".txt")),
    "demo-out-folder": Case(("demo", "--out", "{d}/f.csv"), ("--out", "folder"),
                            {"f.csv/x": "x"}),
    "schema-out-sidecar-mine": Case(("schema", "scenario", "--out", "{d}/s.json"),
                                    ("s.json.manifest.json", "not a wmtsim manifest"),
                                    {"s.json.manifest.json": "[]"}),
    "conformance-generate-out-foreign": Case(("conformance", "generate", "--out", "{d}/c"),
                                             ("--out", "not a wmtsim result folder"),
                                             {"c/mine.jsonl": Q}),
    "conformance-generate-out-run-result": Case(
        ("conformance", "generate", "--out", "{d}/c"), ("--out", "a result of `wmtsim run`"),
        {"c/manifest.json": RUN_MANIFEST}),
    "conformance-generate-out-file": Case(("conformance", "generate", "--out", "{d}/c"),
                                          ("--out", "is a file"), {"c": "x"}),
    "conformance-check-missing": Case(("conformance", "check", "{d}/none"), ("none",)),
    "conformance-check-file": Case(("conformance", "check", "{d}/f"), ("f",), {"f": "x"}),
    "conformance-check-garbage": Case(("conformance", "check", "{d}/c"), ("c",),
                                      {"c/bad.jsonl": b"\x00\xff"}),
    "conformance-run-impl-missing": Case(("conformance", "run", "nope_mod_xyz:Impl"),
                                         ("nope_mod_xyz",)),
    "conformance-run-impl-garbage": Case(("conformance", "run", ":::"), ("':::'",)),
    "conformance-run-tol-nan": Case(("conformance", "run", "examples.naive_wmt:NaiveWMT",
                                     "--tol", "nan"), ("--tol", "greater than or equal to 0")),
    "conformance-run-examples-huge": Case(("conformance", "run", "examples.naive_wmt:NaiveWMT",
                                           "--examples", "1000000000"), ("--examples",)),
    "run-n-1e20": Case(("run", "paper_poisoning", "--n", "100000000000000000000"), ("--n",)),
    "run-seed-2-64": Case(("run", "paper_poisoning", "--seed", "18446744073709551616"),
                          ("--seed",)),
    "run-out-empty": Case(("run", "paper_poisoning", "--out", ""), ("--out",)),
    "run-out-dev-null": Case(("run", "paper_poisoning", "--out", "/dev/null"),
                             ("--out", "is a file")),
    "compare-budget-nan": Case(("compare", "paper_poisoning", "--budget", "nan"),
                               ("--budget", "nan")),
    "compare-budget-negative": Case(("compare", "paper_poisoning", "--budget", "-5"),
                                    ("--budget",)),
    "claims-levels-huge": Case(("claims", "paper_poisoning", *VARY[:4], "--levels",
                                "1000000000"), ("--levels",)),
    "claims-vary-nan": Case(("claims", "paper_poisoning", "--vary",
                             "stubs.selector_noise=nan:0.4", *VARY[2:4]), ("--vary", "finite")),
    "attribute-permutations-huge": Case(("attribute", "paper_poisoning", *ATT,
                                         "--permutations", "1000000000000"),
                                        ("--permutations",)),
    "calibrate-maxiter-huge": Case(("calibrate", "paper_poisoning", "--maxiter",
                                    "100000000000000000000"), ("--maxiter",)),
    "screen-r-huge": Case(("screen", "paper_poisoning", "--knob", "rho", "-r", "1000000000"),
                          ("--trajectories",)),
    "screen-out-empty": Case(("screen", "paper_poisoning", *SCREEN, "--out", ""), ("--out",)),
    "tune-batch-zero": Case(("tune", "paper_poisoning", *TUNE[:2], "--batch", "0"),
                            ("--batch",)),
    "attack-n-holdout-zero": Case(("attack", "paper_poisoning", *ATTACK[:-5], "--n-holdout",
                                   "0"), ("--n-holdout",)),
    "attack-budget-nan": Case(("attack", "paper_poisoning", "-p", "wmt", "--budget", "nan"),
                              ("--budget", "nan")),
    "sweep-out-empty": Case(("sweep", "{d}/w.toml", "--out", "", "--no-progress"), ("--out",),
                            {"w.toml": SWEEP}),
    "analyze-out-is-the-sweep": Case(("analyze", "{sweep}", "--out", "{sweep}", "--no-charts"),
                                     ("--out", "a result of `wmtsim sweep`")),
    "analyze-chunks-folder": Case(("analyze", "{sweep}/chunks", "--out", "{d}/an"),
                                  ("chunks",)),
}

VALID_TRACE = Q + T + A + '{"op": "select", "selected": ["a"]}\n'


@pytest.fixture(scope="module")
def damaged(sweep_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Copies of the shared sweep with a chunk replaced by garbage, truncated, deleted."""
    import shutil

    root = tmp_path_factory.mktemp("damaged")
    for how in ("garbage", "truncated", "deleted"):
        shutil.copytree(sweep_dir, root / how)
        chunk = sorted((root / how / "chunks").glob("*points*.parquet"))[0]
        if how == "garbage":
            chunk.write_bytes(b"not parquet at all")
        elif how == "truncated":
            chunk.write_bytes(chunk.read_bytes()[:40])
        else:
            chunk.unlink()
    return root


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("sweep")
    (root / "w.toml").write_text(SWEEP)
    run_sweep(load_sweep(root / "w.toml"), root / "out", progress=False)
    return root / "out"


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """Every path under ``root`` with its size and modification time."""
    out = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            p = Path(folder) / name
            st = p.lstat()
            out[str(p.relative_to(root))] = (st.st_size, st.st_mtime_ns)
    return out


def test_at_least_100_cases() -> None:
    assert len(CASES) >= 100


@pytest.mark.parametrize("name", list(CASES))
def test_hostile_input_exits_2_names_the_problem_and_writes_nothing(
        name: str, tmp_path: Path, sweep_dir: Path, damaged: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    case = CASES[name]
    work = tmp_path / "work"
    work.mkdir()
    for rel, content in case.files.items():
        path = work / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    (tmp_path / "valid.jsonl").write_text(VALID_TRACE)
    monkeypatch.chdir(work)
    before, sweep_before = _snapshot(tmp_path), _snapshot(sweep_dir)
    damaged_before = _snapshot(damaged)
    argv = [a.replace("{d}", str(work)).replace("{sweep}", str(sweep_dir))
            .replace("{trace}", str(tmp_path / "valid.jsonl"))
            .replace("{damaged}", str(damaged)) for a in case.argv]
    result = CliRunner().invoke(app, argv)
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"traceback: {result.exception!r}")
    assert result.exit_code == 2, result.output
    text = " ".join(result.stderr.split())  # rich may wrap long messages
    for part in case.expect:
        assert part in text, f"{part!r} not in: {result.stderr}"
    assert _snapshot(tmp_path) == before, "something was written"
    assert _snapshot(sweep_dir) == sweep_before
    assert _snapshot(damaged) == damaged_before
