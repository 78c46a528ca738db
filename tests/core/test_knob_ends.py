"""Every numeric knob at both ends of its documented range.

Each end is either accepted, and then every metric of a small simulation stays in its
domain (no overflowed token size, no negative count, no ratio outside [0, 1]), or refused
when the spec is built with a message naming the knob — in which case the table says so
and why (a joint bound such as "a trajectory's memory tokens under 2^30"). The table is
checked against the validators: a value just beyond each end is refused, and every
numeric field of the four dataclasses is listed, so a new knob cannot slip through.
"""

from __future__ import annotations

import math
import typing
from dataclasses import fields, replace
from typing import Any

import numpy as np
import pytest

from wmtsim.core.metrics import UNIT as UNIT_METRICS
from wmtsim.core.params import Params
from wmtsim.core.stubs import Stubs
from wmtsim.core.validation import MAX_INT
from wmtsim.core.world_spec import MAX_NODES, MAX_TOKENS, PoisonSpec, WorldSpec
from wmtsim.engine.simulation import simulate

TINY = 5e-324  # the smallest positive float: the end of a range open at 0
BIG = 1.7976931348623157e308  # the largest finite float: the end of [0, inf), finite
OK = "ok"
NODES = "memories per trajectory"  # refused by the MAX_NODES joint bound
TOKENS = "memory tokens under 2^30"  # refused by the MAX_TOKENS joint bound
ORDER = "must be greater than"  # refused: u_success must stay above u_failure

# (class, field) -> ((low end, outcome), (high end, outcome), (below low, above high))
ENDS: dict[tuple[type, str], tuple[tuple[Any, str], tuple[Any, str], tuple[Any, Any]]] = {
    (WorldSpec, "n_subtasks"): (((1, 1), OK), ((MAX_NODES,) * 2, NODES),
                                ((0, 1), (1, MAX_NODES + 1))),
    (WorldSpec, "max_depth"): ((1, OK), (6, OK), (0, 7)),
    (WorldSpec, "nested_subtasks"): (((1, 1), OK), ((MAX_NODES,) * 2, OK),
                                     ((0, 1), (1, MAX_NODES + 1))),
    (WorldSpec, "n_actions"): (((0, 0), OK), ((MAX_NODES,) * 2, NODES),
                               ((-1, 0), (0, MAX_NODES + 1))),
    (WorldSpec, "resume_actions"): (((0, 0), OK), ((MAX_NODES,) * 2, NODES),
                                    ((-1, 0), (0, MAX_NODES + 1))),
    (WorldSpec, "tokens_median"): ((1.0, OK), (1e6, TOKENS), (0.999, 1e6 * 1.001)),
    (WorldSpec, "tokens_sigma"): ((0.0, OK), (5.0, TOKENS), (-1e-9, 5.001)),
    (WorldSpec, "task_tokens"): ((0, OK), (MAX_TOKENS, TOKENS), (-1, MAX_TOKENS + 1)),
    (WorldSpec, "query_tokens"): ((0, OK), (MAX_TOKENS, TOKENS), (-1, MAX_TOKENS + 1)),
    (WorldSpec, "n_globals"): ((0, OK), (10_000, OK), (-1, 10_001)),
    (WorldSpec, "tasks"): ((1, OK), (100, OK), (0, 101)),
    (PoisonSpec, "subtask"): ((-1, OK), (MAX_NODES, OK), (-2, MAX_NODES + 1)),
    (PoisonSpec, "position"): ((-1, OK), (MAX_NODES, OK), (-2, MAX_NODES + 1)),
    (PoisonSpec, "count"): ((0, OK), (1000, OK), (-1, 1001)),
    (PoisonSpec, "tokens"): ((0, OK), (MAX_TOKENS, TOKENS), (-1, MAX_TOKENS + 1)),
    (Stubs, "selector_noise"): ((0.0, OK), (10.0, OK), (-1e-9, 10.001)),
    (Stubs, "poison_boost"): ((-1.0, OK), (1.0, OK), (-1.001, 1.001)),
    (Stubs, "select_threshold"): ((-10.0, OK), (10.0, OK), (-10.001, 10.001)),
    (Stubs, "w_u"): ((0.0, OK), (10.0, OK), (-1e-9, 10.001)),
    (Stubs, "w_b"): ((0.0, OK), (10.0, OK), (-1e-9, 10.001)),
    (Stubs, "top_k"): ((0, OK), (MAX_INT, OK), (-1, MAX_INT + 1)),
    (Stubs, "dilution_tokens"): ((TINY, OK), (1e9, OK), (0.0, 1.001e9)),
    (Params, "rho"): ((TINY, OK), (1.0, OK), (0.0, 1.001)),
    (Params, "rho_g"): ((TINY, OK), (1.0, OK), (0.0, 1.001)),
    (Params, "M"): ((1, OK), (MAX_INT, OK), (0, MAX_INT + 1)),
    (Params, "tau_obs"): ((-BIG, OK), (BIG, OK), (-math.inf, math.inf)),
    (Params, "budget"): ((1, OK), (MAX_INT, OK), (0, MAX_INT + 1)),
    (Params, "global_miss_count"): ((0, OK), (MAX_INT, OK), (-1, MAX_INT + 1)),
    (Params, "u_success"): ((0.0, ORDER), (1.0, OK), (-1e-9, 1.001)),
    (Params, "u_failure"): ((0.0, OK), (1.0, ORDER), (-1e-9, 1.001)),
    (PoisonSpec, "depth"): ((1, OK), (6, OK), (0, 7)),
    (Stubs, "warning_tokens"): ((0, OK), (1000, OK), (-1, 1001)),
    (Stubs, "call_latency_ms"): ((0.0, OK), (1e6, OK), (-1e-9, 1.001e6)),
    (Stubs, "token_latency_ms"): ((0.0, OK), (1e3, OK), (-1e-9, 1001.0)),
}
UNIT = ((0.0, OK), (1.0, OK), (-1e-9, 1.001))
for _name in ("p_nested", "p_success", "p_evidence", "p_distractor", "relevance",
              "relevance_sd", "distractor_relevance", "cross_relevance", "task_relevance",
              "summary_relevance", "global_relevance", "p_resume", "p_revise", "p_stale",
              "final_share", "p_recover", "p_related"):
    ENDS[(WorldSpec, _name)] = UNIT
for _name in ("p_inject", "apparent_relevance", "persuasiveness", "p_supersede"):
    ENDS[(PoisonSpec, _name)] = UNIT
for _name in ("c_sum", "p_leak", "p_leak_rider", "p_persuade", "p_persuade_vs_evidence",
              "p_guess", "p_use_max", "selector_read_fraction", "p_misled"):
    ENDS[(Stubs, _name)] = UNIT
for _name in ("base_tokens", "selector_base_tokens", "summariser_base_tokens",
              "struct_tokens"):
    ENDS[(Stubs, _name)] = ((0, OK), (MAX_INT, OK), (-1, MAX_INT + 1))
for _name in ("u_init_root", "u_init_task", "u_init_action", "u_init_global",
              "u_init_summary"):
    ENDS[(Params, _name)] = UNIT
for _name in ("alpha", "beta", "gamma", "delta"):
    ENDS[(Params, _name)] = ((0.0, OK), (BIG, OK), (-1e-9, math.inf))

# Poison rides along so that the poison metrics (IP, AF, PRR) are defined.
BASE_WORLD = WorldSpec(n_globals=1, poison=(PoisonSpec("plausible", p_supersede=0.5),
                                            PoisonSpec("global")))
POLICIES = ("wmt", "linear", "a2_no_controller", "tree_summary")


def _build(cls: type, name: str, value: Any) -> tuple[WorldSpec, Stubs, Params]:
    """The world, stubs and params with one knob set (others at their defaults)."""
    world, stubs, params = BASE_WORLD, Stubs(), Params()
    if cls is WorldSpec:
        world = replace(BASE_WORLD, **{name: value})
    elif cls is PoisonSpec:
        world = replace(BASE_WORLD, poison=(PoisonSpec("failed", **{name: value}),
                                            *BASE_WORLD.poison))
    elif cls is Stubs:
        stubs = Stubs(**{name: value})
    else:
        params = Params(**{name: value})
    return world, stubs, params


def _cases() -> list[Any]:
    out = []
    for (cls, name), (lo, hi, _) in ENDS.items():
        for end, (value, outcome) in (("low", lo), ("high", hi)):
            out.append(pytest.param(cls, name, value, outcome,
                                    id=f"{cls.__name__}.{name}-{end}"))
    return out


def _check_domain(metrics: dict[str, np.ndarray], label: str) -> None:
    for name in UNIT_METRICS:
        x = metrics[name][np.isfinite(metrics[name])]
        assert ((x >= 0) & (x <= 1)).all(), f"{label}: {name} outside [0, 1]: {x.min()}"
        assert not np.isinf(metrics[name]).any(), f"{label}: {name} infinite"
    for name in ("af", "prompt_tokens", "steps", "llm_calls"):
        x = metrics[name]
        assert np.isfinite(x).all() or name == "af", f"{label}: {name} not finite"
        assert (x[np.isfinite(x)] >= 0).all(), f"{label}: {name} negative"
    assert (metrics["prompt_tokens"] > 0).all(), f"{label}: a trajectory cost no tokens"


@pytest.mark.parametrize(("cls", "name", "value", "outcome"), _cases())
def test_knob_end(cls: type, name: str, value: Any, outcome: str) -> None:
    if outcome != OK:
        with pytest.raises(ValueError, match=name) as exc:
            _build(cls, name, value)
        assert outcome in str(exc.value)
        return
    world, stubs, params = _build(cls, name, value)
    for policy in POLICIES:
        res = simulate(world, policy, n=6, seed=3, params=params, stubs=stubs)
        t = res.trajectories
        _check_domain({c: t[c].to_numpy().astype(np.float64) for c in t.columns
                       if c in (*UNIT_METRICS, "af", "prompt_tokens", "steps", "llm_calls")},
                      f"{cls.__name__}.{name}={value!r} under {policy}")


@pytest.mark.parametrize(("cls", "name"), list(ENDS))
def test_beyond_each_end_is_refused(cls: type, name: str) -> None:
    """The table's ends are the validator's: one step further is an error naming the knob."""
    for value in ENDS[(cls, name)][2]:
        with pytest.raises(ValueError, match=name):
            _build(cls, name, value)


def test_every_numeric_knob_is_listed() -> None:
    listed = set(ENDS)
    for cls in (WorldSpec, PoisonSpec, Stubs, Params):
        hints = typing.get_type_hints(cls)
        for f in fields(cls):
            if hints[f.name] in (int, float, tuple[int, int]):
                assert (cls, f.name) in listed, f"{cls.__name__}.{f.name} has no ends"
