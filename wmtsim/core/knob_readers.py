"""Which policy reads which knob: one declared table (docs/sweeps.md, "Knobs nobody reads").

A sweep or a screening that varies a knob no policy in it reads computes identical points
and learns nothing (``baselines.ga_top_k`` with ``generative_agents``, ``rho``
with ``a1_unweighted``). `READS` declares, for every knob of `Params`, `Stubs` and
`Baselines`, the policies whose engine code reads it, as a *trait* of the policy's
switches (`wmtsim.core.policies`); a knob a policy family lists (`Family.knobs`,
`wmtsim.core.policies`) is read by that family's policies unless `READS` narrows
it to some of their variants; world and poison knobs shape the world every policy
sees. ``tests/core/test_knob_readers.py`` checks the declaration against the engine: for
every policy, moving all the knobs the table says it does not read leaves its results
bit-identical, and every knob of the five knob classes has an entry.

A field policy's own knob may instead name its readers at its declaration,
``knob(..., reads=("policy_name", ...))`` in `wmtsim.core.field_knobs`
(`declared_at_knob`); a knob declared both ways is an error at import.

Some knobs are read only in some worlds: `WORLD_NEEDS` names them (a global memory's
decay ρ_G acts only where there are global memories).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields

from wmtsim.core.field_knobs import Baselines
from wmtsim.core.field_policies import (
    EVICT_IMPORTANCE,
    EVICT_IMPORTANCE_RECENCY,
    EVICT_SIMILARITY,
    GENERATIVE,
    MB_CODE,
    MB_STOCHASTIC,
    MEM0,
    MEMORYBANK,
    THRESHOLD_Z,
    TRACERETAIN,
    Family,
)
from wmtsim.core.knobs import knob_of
from wmtsim.core.policies import FAMILIES, POLICIES, SEL_BASELINE, SEL_BRANCHES, SEL_ITEMS, Policy


@dataclass(frozen=True)
class Trait:
    """A set of policies named by what their switches do (``test(policy)``)."""

    name: str
    test: Callable[[Policy], bool]

    def __or__(self, other: Trait) -> Trait:
        return Trait(f"{self.name} | {other.name}", lambda p: self.test(p) or other.test(p))


def _family(family: Family, name: str = "", extra: Callable[[Policy], bool] = lambda p: True
            ) -> Trait:
    """The policies of ``family`` (those of its variants that pass ``extra``)."""
    return Trait(name or family.label, lambda p: p.family == family.code and extra(p))


EVERY = Trait("every policy", lambda p: True)
SCORES = Trait("retention scores (Eqs. 2-6)", lambda p: p.scores)
LIFECYCLE = Trait("lifecycle (Eq. 7)", lambda p: p.lifecycle)
FOLD = Trait("fold summaries", lambda p: p.fold)
TREE = Trait("tree-structured context", lambda p: p.tree)
SELECTOR = Trait("the selector (items or branches)",
                 lambda p: p.selection in (SEL_ITEMS, SEL_BRANCHES))
ITEMS = Trait("the semantic selector (items)", lambda p: p.selection == SEL_ITEMS)
BRANCHES = Trait("whole-branch retrieval (A3)", lambda p: p.selection == SEL_BRANCHES)
FIELD = Trait("a policy of the field", lambda p: p.selection == SEL_BASELINE)
TR_Z = _family(TRACERETAIN, "TraceRetain (z-score)", lambda p: p.threshold == THRESHOLD_Z)
TR_IMPORTANCE = _family(TRACERETAIN, "TraceRetain (importance + frequency)",
                        lambda p: p.eviction == EVICT_IMPORTANCE)
TR_IMPORTANCE_LRU = _family(TRACERETAIN, "TraceRetain (importance + recency)",
                            lambda p: p.eviction == EVICT_IMPORTANCE_RECENCY)
TR_SIMILARITY = _family(TRACERETAIN, "TraceRetain (similarity)",
                        lambda p: p.eviction == EVICT_SIMILARITY)
TR_CLUSTER = _family(TRACERETAIN, "TraceRetain (clusters)", lambda p: p.cluster)
GA_PAPER = _family(GENERATIVE, "Generative Agents (paper)", lambda p: p.variant == 0)
GA_CODE = _family(GENERATIVE, "Generative Agents (public code)", lambda p: p.variant == 1)
MB_NOT_CODE = _family(MEMORYBANK, "MemoryBank (paper, stochastic)",
                      lambda p: p.variant != MB_CODE)
MB_STOCH = _family(MEMORYBANK, "MemoryBank (stochastic)",
                   lambda p: p.variant == MB_STOCHASTIC)
MB_CODE_ = _family(MEMORYBANK, "MemoryBank (public code)", lambda p: p.variant == MB_CODE)

# knob (canonical key) -> the policies that read it.
READS: dict[str, Trait] = {
    # Params: the WMT constants act through retention scores, except where noted.
    **{f"params.{k}": SCORES for k in (
        "u_success", "u_failure", "u_init_root", "u_init_task", "u_init_action",
        "u_init_global", "u_init_summary", "rho", "rho_g", "M", "alpha", "beta", "gamma",
        "delta", "event_resets_m", "global_miss_count")},
    "params.promote_summaries": FOLD,  # conversation mode: the summariser writes it
    "params.tau_obs": LIFECYCLE,
    "params.budget": SELECTOR | FIELD,
    # Stubs: the selector, the summariser, the reasoner and the prompt's cost.
    "stubs.selector_noise": SELECTOR | FIELD,
    "stubs.poison_boost": SELECTOR | FIELD,
    "stubs.w_u": SCORES,
    "stubs.w_b": SCORES,
    "stubs.top_k": ITEMS | FIELD,
    "stubs.c_sum": FOLD | FIELD,
    "stubs.p_leak": FOLD | FIELD,
    "stubs.p_leak_rider": FOLD | FIELD,
    "stubs.selector_base_tokens": SELECTOR,
    "stubs.selector_read_fraction": SELECTOR,
    "stubs.summariser_base_tokens": FOLD | FIELD,
    "stubs.struct_tokens": TREE,
    "stubs.warning_tokens": FOLD,
    "stubs.selector_rule": ITEMS,
    "stubs.select_threshold": ITEMS,
    "stubs.branch_retrieval": BRANCHES,
    "stubs.branch_folded": BRANCHES,
    "stubs.ip_rule": FOLD | FIELD,
    **{f"stubs.{k}": EVERY for k in (
        "p_persuade", "p_persuade_vs_evidence", "p_guess", "p_use_max", "dilution_tokens",
        "base_tokens", "p_misled", "obs_in_context", "call_latency_ms", "token_latency_ms",
        "persuade_scope")},
    # Baselines: the field's own knobs (docs/field.md). A knob a family lists
    # (`Family.knobs`) is read by every policy of the families that list it; the entries
    # here narrow it to the variants whose rules read it.
    "baselines.top_k": _family(TRACERETAIN) | MB_NOT_CODE | GA_PAPER | _family(MEM0),
    "baselines.z_window": TR_Z,
    "baselines.z_threshold": TR_Z,
    "baselines.importance_weight": TR_IMPORTANCE | TR_IMPORTANCE_LRU,
    "baselines.frequency_weight": TR_IMPORTANCE,
    "baselines.recency_weight": TR_IMPORTANCE_LRU,
    "baselines.recency_decay": TR_IMPORTANCE_LRU,
    "baselines.replace_threshold": TR_SIMILARITY,
    "baselines.cluster_size": TR_CLUSTER,
    **{f"baselines.{k}": GA_PAPER for k in (
        "ga_decay", "hours_per_step", "ga_w_recency", "ga_w_importance", "ga_w_relevance")},
    **{f"baselines.{k}": GA_CODE for k in (
        "ga_top_k", "ga_code_decay", "gac_w_recency", "gac_w_importance", "gac_w_relevance")},
    "baselines.mb_s_cap": MB_STOCH,
    "baselines.mb_code_top_k": MB_CODE_,
    "baselines.mb_code_recent": MB_CODE_,
    # One rule for every derived summary: GA's thoughts, MemoryBank's daily summaries,
    # TraceRetain's clusters.
    "baselines.summary_is_result": _family(GENERATIVE) | _family(MEMORYBANK) | TR_CLUSTER,
}



def _named(names: tuple[str, ...]) -> Trait:
    """The policies named by a knob's own declaration (``knob(reads=(...))``)."""
    unknown = [n for n in names if n not in POLICIES]
    if unknown:
        raise ValueError(f"knob(reads=...) names {unknown!r}, which are not policies; "
                         f"allowed: {', '.join(POLICIES)}")
    chosen = frozenset(names)
    return Trait(" | ".join(names), lambda p: p.name in chosen)


def declared_at_knob(cls: type, section: str) -> dict[str, Trait]:
    """The knobs of ``cls`` that name their readers where they are declared
    (``knob(reads=(policy, ...))``), as canonical key -> trait."""
    out: dict[str, Trait] = {}
    for f in fields(cls):
        spec = knob_of(cls, f.name)
        if spec is not None and spec.reads:
            out[f"{section}.{f.name}"] = _named(spec.reads)
    return out


def from_families(families: tuple[Family, ...] = FAMILIES) -> dict[str, Trait]:
    """Each `Baselines` knob a family lists (`Family.knobs`), as canonical key -> the
    policies of every family that lists it."""
    out: dict[str, Trait] = {}
    for fam in families:
        for k in fam.knobs:
            key = f"baselines.{k}"
            out[key] = out[key] | _family(fam) if key in out else _family(fam)
    return out


def check_narrowing(reads: dict[str, Trait], families: tuple[Family, ...] = FAMILIES
                    ) -> None:
    """A `READS` entry of a `Baselines` knob may only narrow its families' declaration:
    every policy it names is of a family that lists the knob."""
    listed = from_families(families)
    for key, trait in reads.items():
        if not key.startswith("baselines."):
            continue
        outside = [n for n, p in POLICIES.items()
                   if trait.test(p) and not (key in listed and listed[key].test(p))]
        if outside:
            raise ValueError(f"READS[{key!r}] names {outside}, whose families do not list "
                             f"the knob (`Family.knobs`, wmtsim.core.policies)")


check_narrowing(READS)
for _key, _trait in from_families().items():
    READS.setdefault(_key, _trait)

# A field policy's own knob may name its readers where it is declared: a new policy and
# its knob then touch `core/field_knobs.py`, not this table.
_AT_KNOB = declared_at_knob(Baselines, "baselines")
if set(_AT_KNOB) & set(READS):
    raise ValueError(f"readers declared twice (READS or Family.knobs, and knob(reads=...)): "
                     f"{sorted(set(_AT_KNOB) & set(READS))}; keep one")
READS.update(_AT_KNOB)


# Knobs that act only in worlds with global memories (docs/model.md §2: ρ_G, their initial
# score and their stored miss count concern global memories alone; in conversation mode a
# finished task's summary becomes one), or only in conversations (`world_has`).
_GLOBALS = ("global memories (world.n_globals > 0, a poison of kind 'global', or "
            "world.tasks > 1: promoted summaries)")
WORLD_NEEDS: dict[str, str] = {
    "params.rho_g": _GLOBALS,
    "params.u_init_global": _GLOBALS,
    "params.global_miss_count": _GLOBALS,
    "params.promote_summaries": "conversations (world.tasks > 1)",
}


def readers(key: str, policies: Iterable[str] | None = None) -> list[str]:
    """The policies (of ``policies``, default all) that read knob ``key`` (a canonical key:
    ``params.rho``; world and poison knobs are read by every policy)."""
    names = list(POLICIES) if policies is None else list(policies)
    trait = READS.get(key, EVERY)
    return [n for n in names if trait.test(POLICIES[n])]


def has_globals(world: object) -> bool:
    """Whether a `WorldSpec` has global memories (benign or poisoned)."""
    poison = getattr(world, "poison", ())
    return getattr(world, "n_globals", 0) > 0 or any(p.kind == "global" for p in poison)


def world_has(key: str, world: object) -> bool:
    """Whether ``world`` is one where knob ``key`` of `WORLD_NEEDS` acts."""
    conversation = getattr(world, "tasks", 1) > 1
    if key == "params.promote_summaries":
        return conversation
    return conversation or has_globals(world)


def unread(keys: Iterable[str], policies: Iterable[str], worlds: Iterable[object] = ()
           ) -> dict[str, str]:
    """The knobs of ``keys`` (canonical) that no policy of ``policies`` reads in any of
    ``worlds``, each with the reason (who would read it)."""
    pols = list(policies)
    worlds = list(worlds)
    out: dict[str, str] = {}
    for key in keys:
        trait = READS.get(key, EVERY)
        if not readers(key, pols):
            out[key] = f"read only by {trait.name}; none of {', '.join(pols)} is one"
        elif key in WORLD_NEEDS and worlds and not any(world_has(key, w) for w in worlds):
            out[key] = f"acts only in worlds with {WORLD_NEEDS[key]}; this one has none"
    return out
