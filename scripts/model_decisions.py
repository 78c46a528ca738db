"""Regenerate docs/model_decisions.md: every rule that changes a result, with the effect of
flipping it on the headline table (paper_poisoning, Table 4's five configurations), all
runs on the same trajectories (common random numbers).

    python scripts/model_decisions.py            # n = 2000, writes docs/model_decisions.md
    python scripts/model_decisions.py --n 300 --out /tmp/md.md

Each flip is one override of the shipped scenario (or, for "who acts on supersede
events", one switch of the configurations); the table gives Linear's pooled ASR, Full
WMT's ASR, TSR and IP, A2's ASR and TSR and A3's ASR and prompt tokens under the flip,
their change from the default, and how many of Table 4's 14 claims hold.
"""

# ruff: noqa: E501  (the rules' sources are Markdown links, kept whole on one line)
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import polars as pl

from wmtsim.core.policies import POLICIES, TABLE4_POLICIES
from wmtsim.engine.simulation import simulate
from wmtsim.engine.world import generate
from wmtsim.studies.compare.paper_checks import table4_checks
from wmtsim.studies.compare.report import _paper_cells, paired_vs, summarise
from wmtsim.studies.scenarios.scenario import Scenario, load_scenario

sys.path.insert(0, str(Path(__file__).resolve().parent))
import world_rules  # a sibling script: the studies of issue 19's world rules

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Rule:
    """A rule that changes results: where it comes from, its knob, the flip measured."""

    name: str
    source: str
    default: str
    knob: str
    flip: str
    overrides: dict[str, Any]
    all_supersede: bool = False  # the flip gives every configuration Policy.supersede


RULES = (
    # The paper's mechanisms (docs/calibration.md, "Which mechanisms"): each default is the
    # paper's sentence, the flip the rule shipped before.
    Rule("The selector chooses: a candidate enters when judged relevant, B is the ceiling",
         "paper §2.1: \"Γ_sel selects memories from M_t\" under \"the configured context budget B\"; "
         "App. A.2: \"Tree + Selection adds an LLM-based relevance selector\" ([world.md, the selector](world.md#the-selector)); "
         "the threshold's value is ours (fitted)",
         "`choose` (judged utility ≥ `select_threshold`)", "`stubs.selector_rule` (`choose` / `fill`)",
         "`fill`: the best that fit until B is full", {"stubs.selector_rule": "fill"}),
    Rule("A3 retrieves whole branches, with no selector to stop it",
         "paper §4: \"removing semantic retrieval reintroduces irrelevant or poisoned information through "
         "whole-branch retrieval … A3 increases prompt size and contamination metrics\"",
         "`whole`: every eligible branch, by priority", "`stubs.branch_retrieval` (`whole` / `fit`)",
         "`fit`: only the branches that fit in B", {"stubs.branch_retrieval": "fit"}),
    Rule("A3's whole-branch retrieval reaches inside folded branches, and IP counts what it reaches",
         "paper §4: \"removing semantic retrieval reintroduces irrelevant or poisoned information through "
         "whole-branch retrieval\"; App. A.4: the folded summary \"avoids replaying the full branch\" (what "
         "whole-branch retrieval does); App. A.1: IP counts poison \"eligible for ordinary context construction\". "
         "The paper is silent on folded branches under A3: the rule is ours, chosen to keep the direction its text states",
         "`nodes`: a folded branch is retrieved as its memories (its summary left out)",
         "`stubs.branch_folded` (`nodes` / `summary` / `both`)",
         "`summary`: A3 sees a folded branch only as its summary (the previous rule)",
         {"stubs.branch_folded": "summary"}),
    Rule("A3's whole-branch retrieval takes a folded branch's memories and its summary",
         "as above: the fold summary is a node of the branch's subtree, so the literal whole branch holds both",
         "`nodes`", "`stubs.branch_folded`", "`both`", {"stubs.branch_folded": "both"}),
    Rule("The selector's call reads every candidate in full",
         "paper §3: prompt-token usage \"counts all language-model calls, including base reasoning, semantic "
         "selection, and branch summarization\"; App. A.2: \"Tree + Selection adds an LLM-based relevance "
         "selector\" and \"Selection generally improves accuracy but increases token usage\". How much of a "
         "candidate the selector reads is not stated: reading it whole is ours",
         "1 (every candidate's tokens)", "`stubs.selector_read_fraction`",
         "0.1: a compact index of a tenth of each candidate (the previous rule)",
         {"stubs.selector_read_fraction": 0.1}),
    Rule("Where poison lands: a random subtask, at a random position",
         "the paper does not say where in a scenario its \"injected memories\" (App. A.3) land; random "
         "placement is ours ([world.md, injections](world.md#scripted-poison-injections))",
         "random subtask and position (`subtask` = `position` = -1)",
         "`poison[i].subtask`, `poison[i].position`",
         "every injection at the start of the task (first subtask, first position), before any critical step",
         {"poison[*].subtask": 0, "poison[*].position": 0}),
    Rule("Any poisoned memory in context can compromise a critical step",
         "paper App. A.1: \"ASR measures the proportion of critical reasoning steps compromised by poisoned "
         "memory\"; §2.1: a linear agent serialises \"most or all of H_t into every subsequent prompt\"",
         "`any`", "`stubs.persuade_scope` (`any` / `topic`)",
         "`topic`: only poison of the step's own subtask", {"stubs.persuade_scope": "topic"}),
    Rule("A fold summary keeps supported results and warnings: poison does not ride in",
         "paper App. A.4: \"a completed branch is folded into a compact summary retaining supported results "
         "and warnings\" (the paper says nothing of poison leaking into a summary)",
         "0 (no leak; poison crafted to ride in, kind `summary`, still leaks with `p_leak_rider`)",
         "`stubs.p_leak`", "0.2746 (the previous fit)", {"stubs.p_leak": 0.2746}),
    Rule("IP counts the injected poisoned memory itself",
         "paper App. A.1: \"IP measures injected poisoned memories that remain active or eligible for ordinary "
         "context construction\" (Eq. 10)",
         "`own`", "`stubs.ip_rule` (`own` / `carried`)",
         "`carried`, with the previous leak 0.2746 so that summaries absorb poison: IP also "
         "counts poison an eligible summary absorbed (beside the leak's row, only IP differs)",
         {"stubs.ip_rule": "carried", "stubs.p_leak": 0.2746}),
    Rule("Supersession needs a later clean action of the same subtask",
         "[world.md, injections](world.md#scripted-poison-injections): \"a later clean action can supersede it\"",
         "each later clean action detects with `p_supersede`",
         "`world.supersede_rule` (`each` / `first`)", "`first`: only the first one",
         {"world.supersede_rule": "first"}),
    Rule("Review before a subtask's answer (timing beyond the paper)",
         "toolkit option, off by default and in every shipped scenario",
         "off", "`world.supersede_review`", "on",
         {"world.supersede_review": True}),
    Rule("Who acts on supersede/invalidate events",
         "[model.md §3](model.md#3-branches-and-lifecycle) (the lifecycle controller's "
         "operation, paper §2); Table 4's ablations: A1 keeps fold/reopen only, A2 has no memory controller",
         "Full WMT and A3 only", "`Policy.supersede`",
         "every configuration acts on them", {}, all_supersede=True),
    Rule("The reasoner reads the observation it has just made (and BR counts it)",
         "[world.md, the reasoner](world.md#the-reasoner): evidence \"in context (or was "
         "just observed)\"; [model.md §5](model.md#5-metrics): whatever can persuade the "
         "reasoner counts as context for BR",
         "on: a poisoned observation can persuade, and its prompt counts as contaminated",
         "`stubs.obs_in_context`", "off: only selected memories persuade and count",
         {"stubs.obs_in_context": False}),
    Rule("An outcome event leaves m unchanged",
         "[model.md Eq. 3](model.md#2-scores) (paper §2.4; m counts consecutive missed selections)",
         "m unchanged", "`params.event_resets_m`", "an event resets m to 0",
         {"params.event_resets_m": True}),
    Rule("A compromised step is misled with probability p_misled",
         "[world.md, the reasoner](world.md#the-reasoner): \"compromised is not the same as wrong\"; the paper's "
         "Appendix A.1 defines ASR and TSR separately", "fitted", "`stubs.p_misled`",
         "1.0 (every compromised step wrong, the old rule)", {"stubs.p_misled": 1.0}),
    Rule("What the final answer needs: a share of the top-level results",
         "[world.md, the reasoner](world.md#the-reasoner): \"all of them, a share, or one chance per missing result\"",
         "fitted", "`world.final_share`", "all of them (1.0)",
         {"world.final_share": 1.0}),
    Rule("A missing result is recovered with p_recover",
         "[world.md, the reasoner](world.md#the-reasoner) (the same rule for every policy)", "fitted",
         "`world.p_recover`", "0 (a missing result is lost)", {"world.p_recover": 0.0}),
    Rule("One item cap for every policy: none",
         "toolkit decision (the paper bounds the context by the token budget B only)",
         "no cap (`top_k` = 0)", "`stubs.top_k`", "3 (the previous calibration's cap)",
         {"stubs.top_k": 3}),
    Rule("Outcome revisions (a second Eq. 2 event)",
         "[model.md Eq. 2](model.md#2-scores) (paper §2.4), \"recorded or revised\"", "0 (none)", "`world.p_revise`",
         "0.1 of actions revised by the next action", {"world.p_revise": 0.1}),
    Rule("Stale observations: a later re-read supersedes an earlier one",
         "[world.md, stale observations](world.md#stale-observations); the paper's supersede / invalidate operation ([model.md §3](model.md#3-branches-and-lifecycle), paper §2.2-§2.3)",
         "0 (off)", "`world.p_stale`",
         "0.3 of clean successes outdated by the next one", {"world.p_stale": 0.3}),
    Rule("Failure warnings kept by a fold summary",
         "[world.md, the summariser](world.md#the-summariser)", "kept, 0 tokens each", "`stubs.warning_tokens`",
         "10 tokens each", {"stubs.warning_tokens": 10}),
    Rule("A resumed subtask under fold-without-reopen: its fold covers what it folded",
         "[world.md, trajectory generation](world.md#trajectory-generation); the paper's Tree + Summary \"folds completed branches\" and only Full WMT lists \"reopening\" (Appendix A.2)",
         "`new`: the resumed visit's actions are candidates until the re-fold",
         "`world.resume_folded` (`new` / `unfold` / `hidden`)",
         "`hidden` (the old rule; none of Table 4's configurations folds without reopening)",
         {"world.resume_folded": "hidden"}),
    Rule("Conversation mode: a finished task's summary is promoted to a global memory",
         "[model.md §3](model.md#3-branches-and-lifecycle) (\"may be promoted\"; the paper leaves "
         "this mode unevaluated, §7); acts only when `world.tasks` > 1, so this one-task table does not "
         "move: its effect is measured on `conversation.toml` (tests/engine/test_conversation.py)",
         "on (configurations that fold; u_init_global, decays by ρ_G)", "`params.promote_summaries`",
         "off (the finished tree is retired, nothing carries over)",
         {"params.promote_summaries": False}),
    Rule("Detection probability of injected poison",
         "[world.md, injections](world.md#scripted-poison-injections) (a world knob, fitted here)", "fitted",
         "`poison[i].p_supersede`", "0 (never detected)", {"poison[*].p_supersede": 0.0}),
)


@dataclass(frozen=True)
class FieldRule:
    """A rule of the field's policies (docs/field.md): its knob and the flip measured on
    the policies whose rules read it, as Δ TSR = policy − wmt (paired, same trajectories)."""

    name: str
    source: str
    default: str
    knob: str
    flip: str
    overrides: dict[str, Any]
    policies: tuple[str, ...]


FIELD_N = 300
FIELD_SCENARIOS = ("paper_poisoning", "gaia_like")
FIELD_RULES = (
    FieldRule("MemGPT's memory-pressure warning, core and archival memory",
              "letta/agent.py `Agent.inner_step`, `Agent.step`; letta/functions/function_sets/base.py "
              "`core_memory_append`, `archival_memory_insert`, `archival_memory_search` ([field.md](field.md#each-rule-traced-to-its-source))",
              "on", "`baselines.letta_memory`", "off (queue, summary and `conversation_search` only)",
              {"baselines.letta_memory": False}, ("memgpt",)),
    FieldRule("MemoryBank's daily summaries as retrievable memories",
              "memory_bank/summarize_memory.py `summarize_memory`; forget_memory.py "
              "`initial_load_forget_and_save` ([field.md](field.md#each-rule-traced-to-its-source))",
              "on", "`baselines.mb_summaries`", "off (no summaries)",
              {"baselines.mb_summaries": False}, ("memorybank", "memorybank_code")),
    FieldRule("MemoryBank writes one summary per day (a day: `mb_time_scale` prompt steps), at the first "
              "session start after the day ends",
              "memory_bank/summarize_memory.py `summarize_memory` ([field.md](field.md#each-rule-traced-to-its-source))",
              "10 steps a day (two sessions)", "`baselines.mb_time_scale`",
              "5 (a day is a session; the curve forgets twice as fast)",
              {"baselines.mb_time_scale": 5.0}, ("memorybank", "memorybank_stochastic")),
    FieldRule("A field policy's own summary (GA's thought, MemoryBank's daily summary, TraceRetain's "
              "cluster) is its subtask's result only with the subtask's evidence",
              "toolkit decision: the world's final-answer rule counts a subtask's fold summary as its result; "
              "WMT's fold summary is written at completion, a derived summary may be written before the result",
              "only with evidence", "`baselines.summary_is_result`", "always, like a fold summary",
              {"baselines.summary_is_result": True},
              ("generative_agents", "generative_agents_code", "memorybank", "traceretain_cluster")),
    FieldRule("MemGPT's core_memory_replace: a save that does not fit replaces a lower-rated core entry",
              "letta/functions/function_sets/base.py `core_memory_replace`; letta/prompts/system/memgpt_chat.txt "
              "([field.md](field.md#each-rule-traced-to-its-source))",
              "on", "`baselines.core_replace`", "off (append, else archival)",
              {"baselines.core_replace": False}, ("memgpt",)),
    FieldRule("MemGPT searches (conversation_search, archival_memory_search) when it decides to: its context "
              "lacks a successful tool result about the subtask",
              "letta/prompts/system/memgpt_chat.txt; letta/functions/function_sets/base.py "
              "([field.md](field.md#each-rule-traced-to-its-source))",
              "when needed", "`baselines.search_on_need`", "at every subtask's answer",
              {"baselines.search_on_need": False}, ("memgpt",)),
    FieldRule("The field's retrieval reads the selector's relevance score with the selector's noise",
              "toolkit decision: WMT's selector is an LLM call; the field's retrieval is an embedding search, "
              "given an LLM-quality relevance score for free",
              "1× `stubs.selector_noise`", "`baselines.retrieval_noise`", "3× (an embedding is noisier)",
              {"baselines.retrieval_noise": 3.0},
              ("traceretain_z", "traceretain_similarity", "generative_agents",
               "generative_agents_code", "memorybank", "memorybank_code", "mem0", "memgpt")),
)


def field_rules_table() -> list[str]:
    """The field's rules, flipped one at a time: Δ TSR vs WMT (default → flipped) at ½B, B
    and 2B of each scenario's budget B (`scripts/field_table.budgets_for`), n = FIELD_N,
    the scenario's seed."""
    from wmtsim.core.inference import paired_difference

    scenarios = {}
    for name in FIELD_SCENARIOS:
        sc = load_scenario(name)
        b = int(sc.params.budget)
        scenarios[name] = (sc, generate(sc.world, seed=sc.seed, n=FIELD_N),
                           (("½B", max(1, b // 2)), ("B", b), ("2B", 2 * b)))
    heads = [f"{name} {label} = {b}" for name, (_, _, bs) in scenarios.items()
             for label, b in bs]
    lines = ["## The field's rules with a knob, flipped one at a time", "",
             "Each rule of the field's policies below ([field.md](field.md)) changes only the "
             "policies that read it; WMT's configurations read none. Cells: Δ TSR = policy − "
             f"wmt on the same trajectories (common random numbers), n = {FIELD_N}, each "
             "scenario's seed, at ½B, B and 2B of its budget, with the default → with the flip; "
             "`*` marks a paired test's p < 0.05 (per pair, uncorrected; the Holm-corrected "
             "verdicts over seeds, budgets and every flip are docs/field.md's robustness "
             "table). Δ < 0: WMT ahead.", "",
             "| rule | source | default | knob | flip | policy | " + " | ".join(heads) + " |",
             "|---|---|---|---|---|---|" + "---|" * len(heads)]
    runs: dict[tuple[str, int, str, str], Any] = {}

    def res(name: str, budget: int, policy: str, flip: FieldRule | None) -> Any:
        key = (name, budget, policy, "" if flip is None else flip.name)
        if key not in runs:
            sc, world, _ = scenarios[name]
            sc = sc.with_overrides({"params.budget": budget})
            if flip is not None:
                sc = sc.with_overrides(flip.overrides)
            runs[key] = simulate(world, policy, params=sc.params, stubs=sc.stubs,
                                 baselines=sc.baselines)
        return runs[key]

    def cell(d: dict[str, float]) -> str:
        return f"{d['mean']:+.3f}{'*' if d['p'] < 0.05 else ''}"

    for rule in FIELD_RULES:
        for k, pol in enumerate(rule.policies):
            cells = []
            for name, (_, _, bs) in scenarios.items():
                for _, b in bs:
                    ref = res(name, b, "wmt", None)
                    a = paired_difference(res(name, b, pol, None), ref, "tsr", n_resamples=2000)
                    z = paired_difference(res(name, b, pol, rule), ref, "tsr", n_resamples=2000)
                    cells.append(f"{cell(a)} → {cell(z)}")
            # The rule's own columns on its first row only; its other policies below it.
            head = (f"{rule.name} | {rule.source} | {rule.default} | {rule.knob} | {rule.flip}"
                    if k == 0 else " | | | | ")
            lines.append(f"| {head} | `{pol}` | " + " | ".join(cells) + " |")
    return lines


def _override(sc: Scenario, overrides: dict[str, Any]) -> Scenario:
    """Apply overrides; ``poison[*].key`` sets the key on every injection."""
    flat: dict[str, Any] = {}
    for k, v in overrides.items():
        if k.startswith("poison[*]."):
            for i in range(len(sc.world.poison)):
                flat[k.replace("[*]", f"[{i}]")] = v
        else:
            flat[k] = v
    return sc.with_overrides(flat) if flat else sc


def run(sc: Scenario, n: int, all_supersede: bool = False) -> dict[str, Any]:
    world = generate(sc.world, seed=sc.seed, n=n)
    results = {}
    for name in TABLE4_POLICIES:
        pol = POLICIES[name]
        if all_supersede:
            pol = replace(pol, supersede=True)
        results[name] = simulate(world, pol, params=sc.params, stubs=sc.stubs,
                                 baselines=sc.baselines)
    summary = summarise(results, 200)
    paper = _paper_cells("table4")

    summary = summary.with_columns(pl.struct("policy", "metric").map_elements(
        lambda r: paper.get((r["policy"], r["metric"])), return_dtype=pl.Float64)
        .alias("paper"))
    from wmtsim.studies.compare.report import Comparison

    comp = Comparison(scenario=sc, n=n, seed=sc.seed, policies=TABLE4_POLICIES,
                      summary=summary, paired=paired_vs(results, "wmt", 200), checks=[],
                      seconds=0.0, results=results)
    comp.checks = table4_checks(comp)
    cell = {(r["policy"], r["metric"]): r["pooled"] for r in summary.iter_rows(named=True)}
    return {"cell": cell, "holds": sum(c["passed"] for c in comp.checks),
            "of": len(comp.checks), "tsr_minus_final": None}


def render(n: int) -> str:
    sc = load_scenario("paper_poisoning")
    base = run(sc, n)
    lines = [HEADER.format(n=n, seed=sc.seed), ""]
    # The columns: Linear's ASR (what the persuasion rule decides), Full WMT and A2 (the
    # headline's contest), A3 (whose retrieval rule is here) and its IP (which counts
    # what that retrieval reaches), Full WMT's IP (whose counting rule is here), and the
    # tokens per step of Full WMT and A3 (the selector's read, A3's retrieval).
    shown = (("linear", "asr"), ("wmt", "asr"), ("wmt", "tsr"), ("wmt", "ip"),
             ("a2_no_controller", "asr"),
             ("a2_no_controller", "tsr"), ("a3_no_semantic", "asr"), ("a3_no_semantic", "ip"),
             ("wmt", "avg_prompt_tokens"), ("a3_no_semantic", "avg_prompt_tokens"))
    lines.append("| rule | source | default | knob | flip | Linear ASR | Full WMT ASR | "
                 "Full WMT TSR | Full WMT IP | A2 ASR | A2 TSR | A3 ASR | A3 IP | "
                 "Full WMT tokens / step | A3 tokens / step | claims holding |")
    lines.append("|---|---|---|---|---|" + "---|" * (len(shown) + 1))

    def fmt(v: float) -> str:
        return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3f}"

    def cells(r: dict[str, Any]) -> list[str]:
        out = []
        for key in shown:
            v, b = r["cell"][key], base["cell"][key]
            d = v - b
            out.append(f"{fmt(v)} ({d:+,.0f})" if abs(v) >= 100 else f"{v:.3f} ({d:+.3f})")
        return out

    lines.append("| **defaults (the shipped scenario)** | | | | | "
                 + " | ".join(fmt(base["cell"][key]) for key in shown)
                 + f" | {base['holds']}/{base['of']} |")
    for rule in RULES:
        r = run(_override(sc, rule.overrides), n, rule.all_supersede)
        lines.append(f"| {rule.name} | {rule.source} | {rule.default} | {rule.knob} | "
                     f"{rule.flip} | " + " | ".join(cells(r)) + f" | {r['holds']}/{r['of']} |")
    lines += ["", *field_rules_table()]
    lines += ["", TSR_NOTE.format(
        wmt_final=base["cell"][("wmt", "final_correct")] if ("wmt", "final_correct")
        in base["cell"] else float("nan"),
        wmt_tsr=base["cell"][("wmt", "tsr")]), ""]
    lines += POLICY_TABLE_HEAD
    for name, pol in POLICIES.items():
        lines.append(f"| `{name}` | {pol.label} | {'yes' if pol.supersede else '–'} |")
    lines += ["", DYNAMICS_NOTE, "", RESUME_NOTE, "",
              world_rules.resume_folded(1000).rstrip("\n"), "", SUBTASKS_NOTE, "",
              world_rules.n_subtasks(1000).rstrip("\n"), "", FOOTER]
    return "\n".join(lines) + "\n"


HEADER = """# Model decisions: every rule that changes a result

This page lists the rules of the simulated world, the stubs and the metrics that move
wmtsim's numbers, where each comes from (this project's reading of the paper in
[model.md](model.md) and [world.md](world.md), or a toolkit decision), its default, the knob that changes it, and what flipping it does to the
headline table: Table 4's five configurations on `paper_poisoning`, n = {n}, seed = {seed},
every run on the same trajectories (common random numbers). Values are pooled over
trajectories (Σ/Σ), as `wmtsim compare` reports them beside the paper; in brackets the
change from the defaults. Regenerate with `python scripts/model_decisions.py`.

## Rules with a knob, flipped one at a time"""

TSR_NOTE = """## Rules without a knob (this reading's definitions)

| rule | source | what wmtsim does |
|---|---|---|
| TSR counts tasks whose final answer is correct | [model.md §5](model.md#5-metrics), [world.md, the reasoner](world.md#the-reasoner); the paper's Appendix A.1: "TSR is the proportion of evaluated tasks successfully completed" | `tsr` = the final answer is correct; a compromised step is wrong only when misled (`p_misled`, above); `final_correct` is the same count (Full WMT here: {wmt_final:.3f} and {wmt_tsr:.3f}) |
| A subtask's result is the same kind of memory for every policy | [world.md, the reasoner](world.md#the-reasoner) | a memory of the subtask's branch that carries evidence, or its fold summary, in the context; a bare subtask node is not a result, for any policy |
| Stub draws keyed by memory identity | [world.md, common random numbers](world.md#reproducibility-and-fairness) | every draw is keyed by (seed, trajectory, step, world id, purpose); a summary by `DRAW_SUMMARY` + its task's world id; never by forest slot |
| Prompt tokens count every LLM call, in every table | paper §3: "Prompt-token usage counts all language-model calls, including base reasoning, semantic selection, and branch summarization"; App. A.2 (Tables 1–3): "prompt-token totals include all enabled reasoning, selection, and summarization calls" | `prompt_tokens` and `avg_prompt_tokens` (Table 4's column) count the reasoner, the selector and the summariser; `memory_tokens` is the part memory's own calls spend, so the reasoner's prompt alone is their difference (docs/calibration.md shows both beside Table 4) |
| A3 takes whole branches B(v) | [model.md §1](model.md#1-memory-state) and [§7](model.md#7-the-configurations) | a unit is the subtree rooted at a task; a nested branch taken first leaves its parent the rest (no effect on `paper_poisoning`, which has no nesting) |
| The observation is charged its tokens | [world.md, accounting](world.md#accounting) | the observation just made costs its tokens in every prompt where the selector did not already put it in, for every configuration |
| Ratio metrics pooled and per trajectory | toolkit decision (reporting) | `SimResult.summary()` gives both; the paper comparison and calibration use the pooled value (the paper's table is over its corpus) |
| Calibration fits cells, not the ordering | toolkit decision | `wmtsim calibrate --order-weight` defaults to 0; the shipped `paper_poisoning` was fitted with 0 |
| Simulated latency | [world.md, accounting](world.md#accounting) | `latency_ms` = (`call_latency_ms` · LLM calls + `token_latency_ms` · prompt tokens) / prompt steps; the paper's latency column is memory-controller time, which `make bench` measures instead |"""

POLICY_TABLE_HEAD = [
    "## Who acts on supersede / invalidate events", "",
    "A policy that acts on the event marks the memory obsolete ([model.md §3](model.md#3-branches-and-lifecycle)); the others keep "
    "it as it was (they still see the clean observation that triggered it, like any action). "
    "Full WMT and A3 keep the lifecycle controller that owns the operation; A1 keeps "
    "fold/reopen only and A2 removes the memory controller (Table 4's ablations); the "
    "configurations of Tables 1–3 have no lifecycle. Of the field, only the policies whose "
    "design has a contradiction rule act on it, by deleting the memory from their store: "
    "`mem0` (its DELETE of a contradicted memory, mem0/configs/prompts.py "
    "DEFAULT_UPDATE_MEMORY_PROMPT) and `traceretain_conflict` (the TraceRetain article's "
    "conflict-resolution step, §5.3, newer observation wins); the other TraceRetain "
    "variants follow the article's default, conflicting memories kept side by side "
    "([field.md](field.md)).", "",
    "| configuration | label | acts on supersede events |", "|---|---|---|"]

DYNAMICS_NOTE = """## Population dynamics (definitions of `wmtsim dynamics`, no knob)

These define what the population aggregates count (`wmtsim.engine.dynamics`, its readable
twin `wmtsim.twins.dynamics_reference`); they change no metric of the paper.

| definition | source | what wmtsim does |
|---|---|---|
| An injected poison | [model.md §5](model.md) (IP's P_i, Eq. 10) | a poisoned memory that is not a summary; its kind (`failed`, `plausible`, `global`, `summary`) is read when it is first seen, before any revision of its outcome |
| A poison remains at a step | Eq. 10 (IP's P_r), applied at every prompt step | it is in the candidate pool of that step, or an eligible summary carries it (it leaked into it, directly or through inner summaries); "carried" counts the second case only |
| Its lifetime | toolkit decision (survival analysis) | from its creation step to the last prompt step at which it remains (+ 1): it may leave the pool and come back (a reopened branch), the lifetime ends at the last exit; a poison that remains at the end is censored at the trajectory's last prompt step |
| Its fate, one per poison | toolkit decision | decided at the end, first match: still eligible (`eligible_at_end`); carried by an eligible summary (`laundered`); its own memory obsolete or deleted by a field policy's contradiction rule (`superseded`); an obsolete ancestor branch, Eq. 7 (`suppressed`, outranks a fold); a folded ancestor branch (`folded_clean`); any other rule of a field policy's store: eviction, decay, forgetting, overwrite (`dropped`); never remained at any prompt step (`never_eligible`). Whether it was ever selected is counted beside the fate (`never_selected`), since a never-selected poison also ends in one of these routes |
| A poison compromising a step | [model.md §5](model.md) (ASR's compromised steps, Eq. 8) | an injected poison (selected, or the observation just made) whose persuasion draw succeeded at a critical step (`compromising`, per step index and per step since injection); several poisons can compromise one step, and a summary that persuades is counted by the step's `compromised`, not as a poison |
| A prompt contaminated through a summary | [field.md](field.md), "summaries launder provenance" | a contaminated summary is in the context; "summary only" when no original poison is (neither a selected injected poison nor the poisoned observation just made) |
| Intervals | toolkit decision | Kaplan–Meier with Greenwood's variance and the log–log band; the median lifetime's interval where the band crosses 1/2 (Brookmeyer–Crowley); Wilson intervals for fate shares. Poisons of one trajectory are treated as independent, which they are not quite (they share the trajectory's draws): the intervals are somewhat too narrow when a trajectory holds many poisons |"""

RESUME_NOTE = """## Resumed subtasks under fold-without-reopen

`world.resume_folded` ([world.md](world.md#trajectory-generation)) decides what a resumed
subtask's fold covers in the two configurations that fold but do not reopen; the
configurations that reopen do not read it (a test checks Full WMT bit for bit), so the
headline table above does not move. The table gives, on each scenario's own seed and the
same n = 1000 trajectories under every rule (common random numbers), how many actions of
resumed visits ever enter the candidate pool, the pooled TSR, ASR and prompt tokens per
step, and each rule's paired difference D from the old rule `hidden` with its 95%
interval (`python scripts/world_rules.py resume_folded --n 1000`). A finding about our
model: the paper never states this case. Read: under the old rule no resumed action ever
reached the pool; under `new` every one does, at a few tokens per step and no TSR change
beyond its interval; `unfold` (the old raw actions back in the pool) costs tokens and TSR
and, where poison sits in the resumed branch, raises ASR. `paper_poisoning` has no resumes
(`p_resume = 0`): its third block gives it gaia_like's rate to show the rule acting."""

SUBTASKS_NOTE = """## The number of subtasks per query

`world.n_subtasks` is fixed, a range or a distribution ([world.md](world.md#trajectory-generation));
the shipped scenarios keep their ranges, whose draw is unchanged bit for bit. The paper's
corpus gives only a total, "100 scenarios contain 297 subtasks" (Appendix A.3), a mean of
2.97 per scenario and no spread. The table compares three readings of that sentence on
`paper_poisoning` (its seed, n = 1000 per reading, Table 4's five configurations; D is the
paired difference from the shipped range by trajectory index, with its 95% interval;
`python scripts/world_rules.py n_subtasks --n 1000`). A finding about our model: at the
same mean, the spread of the number of subtasks moves TSR, because the final answer's rule
needs ceil(final_share · K) results of K, so a query of 2 subtasks is easier than one of 3;
a calibration to Table 4 depends on a distribution the paper does not report."""

FOOTER = """## Where the paper and this reading differ

The paper is the authority; [model.md](model.md) and [world.md](world.md) are this
project's reading of it. Where the reading had to choose between two texts of the paper,
or fills a gap the paper leaves, it is recorded here.

| point | the paper | this reading |
|---|---|---|
| A2's infection persistence | Table 4 prints IP = 0.009 for A2 No Memory Controller, as for A1, A3 and Full WMT; §4 says "A2 yields complete infection persistence" | the simulator's A2 has no memory controller, so nothing retires its poison and its IP (Eq. 10 as written: poison still eligible at the end) is about 1.0. The paper's sentence and its table cannot both be true under its own definition of IP (App. A.1: poison "eligible for ordinary context construction"); we follow the sentence and the definition. IP is not fitted; A2's IP cell is reported outside its interval ([calibration.md, the contradiction ledger](calibration.md#the-papers-internal-contradictions)) |
| What A3's whole-branch retrieval reaches of a folded branch, and A3's IP | §4: "removing semantic retrieval reintroduces irrelevant or poisoned information through whole-branch retrieval" and "A3 increases prompt size and contamination metrics"; App. A.4: the folded summary "avoids replaying the full branch"; Table 4: A3's IP 0.009 | the paper is silent on the rule; ours (`stubs.branch_folded` = nodes) keeps the direction its text states: A3 replays a folded branch's memories, so its prompt and contamination exceed Full WMT's, and IP counts the poison that retrieval can reach (one pool for both), so A3's IP is far above 0.009. The previous rule (A3 sees only the summary) reversed the text's direction on tokens and contamination; it is a flip above. The table's 0.009 beside the text's "reintroduces … poisoned information" is in the contradiction ledger |
| What the selector's call reads, and which tokens each table counts | §3: prompt-token usage "counts all language-model calls, including base reasoning, semantic selection, and branch summarization"; App. A.2: "prompt-token totals include all enabled reasoning, selection, and summarization calls"; "Selection generally improves accuracy but increases token usage" | every table counts every call's prompt (Tables 1–3 per task, Table 4 per step); how much of a candidate the selector reads is not stated: ours reads every candidate whole (`stubs.selector_read_fraction` = 1), the simplest rule under which selection costs more than no selection over the same pool, as the text says (the previous compact index, a tenth of each candidate, made Tree + Selection cheaper than Tree in all six cells of Tables 1–3) |
| Where in a scenario poison lands | App. A.3: 100 scenarios with "injected memories"; nothing on where or when | a random subtask at a random position (ours); the flip "every injection at the start of the task" is in the table above and in the reachability table ([calibration.md](calibration.md#reachability-what-the-model-can-reach-of-each-cell)) |
| TSR under compromised steps | Appendix A.1 defines ASR and TSR separately; Table 4's Linear row has ASR 0.995 with TSR 0.183 | a compromised step is wrong only with probability `p_misled` (fitted), not always ([world.md, the reasoner](world.md#the-reasoner)) |
| decay defaults ρ, ρ_G, M | Eq. 4 gives ranges, no values | ρ = 0.90, ρ_G = 0.98, M = 3 ([model.md §2](model.md#2-scores)) |
| initial scores | "type-dependent, hand-specified" (§2.4), no values | root 1.00, task 0.90, action 0.50, global 0.60, summary 0.80 |
| what is eligible for Eq. 7, the summary node of a fold, Eq. 6's denominators | not stated | toolkit decisions listed in [model.md, "Every parameter"](model.md#every-parameter) |
| the active path | "always kept" in the context (§2.3) | never a candidate and never decayed |
| the selector, summariser and reasoner | language models (§3) | seeded stubs with named knobs ([world.md](world.md)) |

## Earlier toolkit decisions (unchanged)

[model.md, "Every parameter"](model.md#every-parameter) lists the decisions of the
scoring kernels (a global memory's miss count, ρ^k as a product, the order of Σu in
Eq. 6, who is eligible for Eq. 7, the summary node of a fold, selector ties, the budget).
They are unchanged by this page's rules."""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "model_decisions.md")
    args = ap.parse_args()
    text = render(args.n)
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
