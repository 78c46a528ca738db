"""The memory configurations of docs/model.md §7, each a set of switches over one engine.

==========================  ====  ======  ==========  ====  ===========  =========
name                        tree  scores  selection   fold  lifecycle    supersede
==========================  ====  ======  ==========  ====  ===========  =========
no_memory                   –     –       none        –     –            –
linear                      –     –       everything  –     –            –
tree                        yes   –       everything  –     –            –
tree_selection              yes   –       items       –     –            –
tree_summary                yes   –       everything  yes   –            –
tree_selection_summary      yes   –       items       yes   –            –
wmt                         yes   yes     items       yes   yes          yes
a1_unweighted               yes   –       items       yes   reopen only  –
a2_no_controller            yes   yes     items       –     –            –
a3_no_semantic              yes   yes     branches    yes   yes          yes
==========================  ====  ======  ==========  ====  ===========  =========

* ``tree``: the context is serialised as a tree (``Stubs.struct_tokens`` per node).
* ``scores``: selection feedback (Eqs. 3–5) and branch priorities (Eq. 6) are maintained
  and the selector adds ``w_u·u_i + w_b·U_b`` to its utility.
* ``selection``: ``none`` (context = query + active path only), ``everything`` (the whole
  candidate pool, in order), ``items`` (the semantic selector, greedy under budget B),
  ``branches`` (whole branches ranked by priority, A3).
* ``fold``: completed subtasks fold into a summary node (summariser call).
* ``reopen``: a resumed folded subtask is reopened (its nodes re-enter the pool).
* ``lifecycle``: suppression (Eq. 7) marks low-priority branches obsolete.
* ``supersede``: the policy acts on the world's supersede/invalidate events (docs/model.md §3,
  "supersede / invalidate": the event marks the memory obsolete). Only Full WMT and A3
  keep the lifecycle controller that owns this operation: A1 keeps fold/reopen only and A2
  removes the memory controller (the paper's ablation design, Table 4); the unselective
  and selection-only configurations of Tables 1–3 have no lifecycle at all. A policy that
  does not act on the event still sees the clean observation that triggered it, like every
  other action. Of the field, only the two whose design has a contradiction rule act on
  it: ``mem0`` (its DELETE of a contradicted memory) and ``traceretain_conflict`` (the
  TraceRetain article's conflict-resolution step, newer observation wins); for them the
  event removes the memory from their store (place ``deleted``). The other TraceRetain
  variants follow the article's default (keep conflicting memories side by side).

The policies of the field (docs/field.md) are configurations of the same engine too:
selection ``baseline`` hands retention, eviction and retrieval to `wmtsim.engine.field`
(readable twin: `wmtsim.twins.field_reference`), chosen by ``family`` (a registered
`wmtsim.core.policy_families.Family`) and its variant switches; their knobs are
`wmtsim.core.field_knobs.Baselines`. See docs/field.md:
``traceretain_{z,fixed,lfu,importance,importance_lru,similarity,cluster,conflict}``,
``generative_agents``, ``generative_agents_code``, ``memorybank``,
``memorybank_stochastic``, ``memorybank_code``, ``memgpt``, ``sliding_window``,
``sliding_window_summary``, ``token_buffer``, ``token_buffer_summary``, ``mem0``.
Every selective one keeps its context memory within the scenario's budget B.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from wmtsim.core.packing import pack_values, packed_type
from wmtsim.core.policy_families import (
    GENERATIVE,
    MEM0,
    MEMGPT,
    MEMORYBANK,
    TOKEN_BUFFER,
    TRACERETAIN,
    WINDOW,
    WMT,
    Family,
    family_of,
)

SEL_NONE = 0
SEL_EVERYTHING = 1
SEL_ITEMS = 2
SEL_BRANCHES = 3
SEL_BASELINE = 4  # a policy of the field (docs/field.md), run by `wmtsim.engine.field`

# TraceRetain eviction (`Policy.eviction`) and threshold (`Policy.threshold`) rules.
EVICT_LRU, EVICT_LFU, EVICT_IMPORTANCE, EVICT_SIMILARITY, EVICT_IMPORTANCE_RECENCY = range(5)
# MemoryBank variants (`Policy.variant`): the paper's curve, docs/field.md's stochastic
# reading, the public code as written.
MB_PAPER, MB_STOCHASTIC, MB_CODE = range(3)
THRESHOLD_Z, THRESHOLD_FIXED = range(2)

# A mechanism switch of WMT's engine (the table above): the switches attribution moves
# one at a time (`wmtsim.studies.attribution.switch_names`); every other field is not one.
SWITCH = {"switch": True}


@dataclass(frozen=True, kw_only=True)
class Policy:
    """One configuration, built by keyword; its fields in this order are the packed
    switches the kernels read (`PolicySwitches`)."""

    name: str
    label: str
    tree: bool = field(default=False, metadata=SWITCH)
    scores: bool = field(default=False, metadata=SWITCH)
    selection: int = field(metadata=SWITCH)
    fold: bool = field(default=False, metadata=SWITCH)
    reopen: bool = field(default=False, metadata=SWITCH)
    lifecycle: bool = field(default=False, metadata=SWITCH)
    family: int = WMT.code  # a registered family's code (`wmtsim.core.policy_families`)
    variant: int = 0  # GA: 1 = public code; MemoryBank: MB_*; windows: 1 = summary
    eviction: int = EVICT_LRU
    threshold: int = THRESHOLD_Z
    cluster: bool = False
    # acts on the world's supersede/invalidate events
    supersede: bool = field(default=False, metadata=SWITCH)

    def pack(self) -> Any:
        """The switches as the kernels read them (a `PolicySwitches` record:
        ``sw.scores``, ...): every field but the name and label, as int64."""
        return pack_values(self, PolicySwitches)


PolicySwitches = packed_type(Policy, scalar=np.int64)


def _field(name: str, label: str, family: Family, variant: int = 0,
           eviction: int = EVICT_LRU, threshold: int = THRESHOLD_Z,
           cluster: bool = False, supersede: bool = False) -> Policy:
    """A policy of the field: no tree, no scores, no fold; `wmtsim.engine.field` selects.
    ``supersede`` only where the policy's own design has a contradiction rule."""
    return Policy(name=name, label=label, selection=SEL_BASELINE, family=family.code,
                  variant=variant, eviction=eviction, threshold=threshold, cluster=cluster,
                  supersede=supersede)


POLICIES: dict[str, Policy] = {
    p.name: p
    for p in (
        Policy(name="no_memory", label="No Memory", selection=SEL_NONE),
        Policy(name="linear", label="Linear History", selection=SEL_EVERYTHING),
        Policy(name="tree", label="Tree Memory", tree=True, selection=SEL_EVERYTHING),
        Policy(name="tree_selection", label="Tree + Selection", tree=True,
               selection=SEL_ITEMS),
        Policy(name="tree_summary", label="Tree + Summary", tree=True,
               selection=SEL_EVERYTHING, fold=True),
        Policy(name="tree_selection_summary", label="Tree + Selection + Summary", tree=True,
               selection=SEL_ITEMS, fold=True),
        Policy(name="wmt", label="Full WMT", tree=True, scores=True, selection=SEL_ITEMS,
               fold=True, reopen=True, lifecycle=True, supersede=True),
        Policy(name="a1_unweighted", label="A1 Unweighted Tree", tree=True,
               selection=SEL_ITEMS, fold=True, reopen=True),
        Policy(name="a2_no_controller", label="A2 No Memory Controller", tree=True,
               scores=True, selection=SEL_ITEMS),
        Policy(name="a3_no_semantic", label="A3 No Semantic Retrieval", tree=True,
               scores=True, selection=SEL_BRANCHES, fold=True, reopen=True, lifecycle=True,
               supersede=True),
        # The field (docs/field.md).
        _field("traceretain_z", "TraceRetain (z-score, LRU)", TRACERETAIN),
        _field("traceretain_fixed", "TraceRetain (raw >= 7, LRU)", TRACERETAIN,
               threshold=THRESHOLD_FIXED),
        _field("traceretain_lfu", "TraceRetain (z-score, LFU)", TRACERETAIN,
               eviction=EVICT_LFU),
        _field("traceretain_importance", "TraceRetain (z-score, importance + frequency)",
               TRACERETAIN, eviction=EVICT_IMPORTANCE),
        _field("traceretain_importance_lru", "TraceRetain (z-score, importance + recency)",
               TRACERETAIN, eviction=EVICT_IMPORTANCE_RECENCY),
        _field("traceretain_similarity", "TraceRetain (z-score, similarity replace)",
               TRACERETAIN, eviction=EVICT_SIMILARITY),
        _field("traceretain_cluster", "TraceRetain (z-score, LRU, cluster summaries)",
               TRACERETAIN, cluster=True),
        _field("traceretain_conflict", "TraceRetain (z-score, LRU, conflict resolution)",
               TRACERETAIN, supersede=True),
        _field("generative_agents", "Generative Agents (paper)", GENERATIVE),
        _field("generative_agents_code", "Generative Agents (public code)", GENERATIVE,
               variant=1),
        _field("memorybank", "MemoryBank (threshold forgetting)", MEMORYBANK),
        _field("memorybank_stochastic", "MemoryBank (stochastic, S <= 3)", MEMORYBANK,
               variant=MB_STOCHASTIC),
        _field("memorybank_code", "MemoryBank (public code as written)", MEMORYBANK,
               variant=MB_CODE),
        _field("memgpt", "MemGPT-style FIFO + recursive summary", MEMGPT),
        _field("sliding_window", "Sliding window (last k steps)", WINDOW),
        _field("sliding_window_summary", "Sliding window + running summary", WINDOW,
               variant=1),
        _field("token_buffer", "Token buffer", TOKEN_BUFFER),
        _field("token_buffer_summary", "Token buffer + running summary", TOKEN_BUFFER,
               variant=1),
        _field("mem0", "mem0-style ADD/UPDATE/DELETE/NONE", MEM0, supersede=True),
    )
}

for _p in POLICIES.values():
    family_of(_p.family)  # every row's family is registered

FIELD_POLICIES = tuple(name for name, p in POLICIES.items() if p.family != WMT.code)

TABLE4_POLICIES = ("linear", "a1_unweighted", "a2_no_controller", "a3_no_semantic", "wmt")
TABLE123_POLICIES = ("no_memory", "linear", "tree", "tree_selection", "tree_summary",
                     "tree_selection_summary", "wmt")


def get_policy(name: str | Policy) -> Policy:
    """The registered configuration ``name`` (a `Policy` is passed through unchanged, so
    studies can run configurations built with `dataclasses.replace`)."""
    if isinstance(name, Policy):
        return name
    try:
        return POLICIES[name]
    except KeyError:
        from wmtsim.core.formatting import did_you_mean

        raise ValueError(
            f"policy={name!r} is unknown{did_you_mean(name, POLICIES)}; allowed: "
            f"{', '.join(POLICIES)}"
        ) from None
