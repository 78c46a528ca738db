"""Measured effects of issue 19's world rules, on common random numbers (paired).

    python scripts/world_rules.py resume_folded [--n 1000]
    python scripts/world_rules.py n_subtasks [--n 1000]
    python scripts/world_rules.py promotion [--n 1000]

Each study prints a Markdown table (docs/model_decisions.md quotes them). Every row of a
table is one world rule flipped on the same generated trajectories (same scenario, seed
and trajectory indices), so the differences are paired: ``D`` is the rule's value minus
the reference's, with the 95% interval of `wmtsim.core.inference.paired_effect`.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from wmtsim.core.inference import paired_effect
from wmtsim.core.world_spec import OP_ACTION, OP_COMPLETE, OP_REOPEN, World
from wmtsim.engine.simulation import SimResult, run_engine, simulate
from wmtsim.engine.world import generate
from wmtsim.studies.scenarios.scenario import Scenario, load_scenario


def _cells(r: SimResult) -> dict[str, tuple[np.ndarray, np.ndarray | None]]:
    """Per-trajectory numerators and denominators of the pooled metrics shown."""
    t = r.trajectories
    return {
        "TSR": (t["n_success"].to_numpy(), None),
        "ASR": (t["n_compromised_steps"].to_numpy(), t["n_critical_steps"].to_numpy()),
        # per step, averaged over trajectories: `avg_prompt_tokens` as declared
        "tokens/step": (t["avg_prompt_tokens"].to_numpy(), None),
    }


def _pooled(num: np.ndarray, den: np.ndarray | None) -> float:
    return float(num.sum() / (den.sum() if den is not None else num.size))


def _diff(a: SimResult, b: SimResult, metric: str) -> str:
    """``a − b`` pooled, with its paired 95% interval."""
    na, da = _cells(a)[metric]
    nb, db = _cells(b)[metric]
    e = paired_effect(na, nb, da, db, n_resamples=2000, seed=0,
                      bound=1.0 if metric != "tokens/step" else None)
    if e["n_nonzero"] == 0:
        return "0 (identical)"
    digits = 1 if metric == "tokens/step" else 3
    return f"{e['mean']:+.{digits}f} [{e['low']:+.{digits}f}, {e['high']:+.{digits}f}]"


def _run(sc: Scenario, world: World, policy: str) -> SimResult:
    return simulate(world, policy, params=sc.params, stubs=sc.stubs, baselines=sc.baselines)


def _resumed_reach(sc: Scenario, world: World, policy: str) -> tuple[int, int]:
    """(actions of resumed visits, how many of them are ever in the candidate pool), from
    the engine's per-step records of every trajectory."""
    _, forest, rec = run_engine(world, policy, sc.params, sc.stubs, sc.baselines, None,
                                world.n, False)
    ever = rec["eligible"].any(axis=1)  # (trajectory, slot): in the pool at some step
    total = hit = 0
    for i in range(world.n):
        k = int(world.n_events[i])
        inside = False
        for o, a in zip(world.op[i, :k].tolist(), world.arg[i, :k].tolist(), strict=True):
            inside = (inside or o == OP_REOPEN) and o != OP_COMPLETE
            if inside and o == OP_ACTION:
                total += 1
                hit += bool(ever[i, forest.slot_of[i, a]])
    return total, hit


def resume_folded(n: int) -> str:
    """`WorldSpec.resume_folded` on gaia_like and paper_poisoning, the two configurations
    that fold without reopening; the reference is the old rule (``hidden``)."""
    lines = ["| scenario | configuration | rule | resumed actions ever in the pool | "
             "TSR | D TSR | ASR | D ASR | tokens/step | D tokens/step |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    # paper_poisoning has no resumed subtasks (p_resume = 0): the rule cannot act there, so
    # its third block gives it gaia_like's rate of resumes.
    cases = (("gaia_like", {}), ("paper_poisoning", {}),
             ("paper_poisoning", {"world.p_resume": 0.15}))
    for name, extra in cases:
        sc = load_scenario(name).with_overrides(extra)
        if extra:
            name += ", " + ", ".join(f"{k.split('.')[-1]} = {v}" for k, v in extra.items())
        runs: dict[tuple[str, str], SimResult] = {}
        worlds: dict[str, World] = {}
        for rule in ("hidden", "new", "unfold"):
            spec = sc.with_overrides({"world.resume_folded": rule}).world
            worlds[rule] = generate(spec, seed=sc.seed, n=n)
            for pol in ("tree_summary", "tree_selection_summary"):
                runs[pol, rule] = _run(sc, worlds[rule], pol)
        for pol in ("tree_summary", "tree_selection_summary"):
            ref = runs[pol, "hidden"]
            for rule in ("hidden", "new", "unfold"):
                r = runs[pol, rule]
                total, hit = _resumed_reach(sc, worlds[rule], pol)
                c = {m: _pooled(*v) for m, v in _cells(r).items()}
                d = ["–"] * 3 if rule == "hidden" else [
                    _diff(r, ref, m) for m in ("TSR", "ASR", "tokens/step")]
                lines.append(f"| {name} | `{pol}` | `{rule}` | {hit} of {total} | "
                             f"{c['TSR']:.3f} | {d[0]} | {c['ASR']:.3f} | {d[1]} | "
                             f"{c['tokens/step']:.1f} | {d[2]} |")
    return "\n".join(lines) + "\n"


def n_subtasks(n: int) -> str:
    """Three readings of the paper's "297 subtasks in 100 scenarios" (mean 2.97 per
    scenario; the paper gives no distribution) on paper_poisoning, Table 4's five
    configurations; the reference is the shipped uniform range [2, 4]. The same seed and
    trajectory indices: each trajectory's world draws are the same counters, though a
    different number of subtasks changes what they build, so the pairing is by index."""
    forms: tuple[tuple[str, Any], ...] = (
        ("[2, 4] (shipped)", [2, 4]), ("3 (fixed)", 3),
        ("Poisson (λ = 2.97) cut to [1, 8]",
         {"dist": "poisson", "mean": 2.97, "min": 1, "max": 8}))
    sc = load_scenario("paper_poisoning")
    runs: dict[tuple[str, str], SimResult] = {}
    for label, form in forms:
        spec = sc.with_overrides({"world.n_subtasks": form}).world
        world = generate(spec, seed=sc.seed, n=n)
        for pol in ("linear", "a1_unweighted", "a2_no_controller", "a3_no_semantic", "wmt"):
            runs[label, pol] = _run(sc, world, pol)
    lines = ["| n_subtasks | configuration | TSR | D TSR | ASR | D ASR | tokens/step | "
             "D tokens/step |", "|---|---|---|---|---|---|---|---|"]
    ref = forms[0][0]
    for label, _ in forms:
        for pol in ("linear", "a1_unweighted", "a2_no_controller", "a3_no_semantic", "wmt"):
            r = runs[label, pol]
            c = {m: _pooled(*v) for m, v in _cells(r).items()}
            d = ["–"] * 3 if label == ref else [
                _diff(r, runs[ref, pol], m) for m in ("TSR", "ASR", "tokens/step")]
            lines.append(f"| {label} | `{pol}` | {c['TSR']:.3f} | {d[0]} | {c['ASR']:.3f} | "
                         f"{d[1]} | {c['tokens/step']:.1f} | {d[2]} |")
    return "\n".join(lines) + "\n"


STUDIES: dict[str, Any] = {"resume_folded": resume_folded, "n_subtasks": n_subtasks}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python scripts/world_rules.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("study", choices=sorted(STUDIES))
    ap.add_argument("--n", type=int, default=1000, help="trajectories per run")
    args = ap.parse_args(argv)
    print(f"<!-- python scripts/world_rules.py {args.study} --n {args.n} (seed: each "
          "scenario's) -->")
    print(STUDIES[args.study](args.n), end="")


if __name__ == "__main__":
    main()
