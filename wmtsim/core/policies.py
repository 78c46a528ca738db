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
selection ``baseline`` hands retention, eviction and retrieval to `wmtsim.engine.field.dispatch`
(readable twin: `wmtsim.twins.field_reference`), chosen by ``family`` and its variant
switches; their knobs are `wmtsim.core.field_knobs.Baselines`. See docs/field.md:
``traceretain_{z,fixed,lfu,importance,importance_lru,similarity,cluster,conflict}``,
``generative_agents``, ``generative_agents_code``, ``memorybank``,
``memorybank_stochastic``, ``memorybank_code``, ``memgpt``, ``sliding_window``,
``sliding_window_summary``, ``token_buffer``, ``token_buffer_summary``, ``mem0``.
Every selective one keeps its context memory within the scenario's budget B.

**Families.** A policy's ``family`` is the code of a registered `Family` (`FAMILIES`);
everything the engine, the twin and the studies need to know about a family is declared
in its record, once:

* ``code``: the int the numba kernels compare ``sw.family`` against (`FAM_WMT`, ...,
  read from the records: numba needs plain ints, not records);
* ``knobs``: the `Baselines` knobs its rules read, in any of its variants
  (`wmtsim.core.knob_readers` narrows a knob to some variants where only they read it);
* ``item_cap`` (and ``variant_caps``): how many memories it puts in context at most, as
  the engine reads it, for the parity table and the "designs' own item caps" flip;
* ``signal``: what its ranking reads, the parity table's last column;
* ``engine`` and ``twin``: where its rules are, as dotted paths (the kernel its dispatch
  in `wmtsim.engine.field.dispatch` calls, the method of the twin
  `wmtsim.twins.field_reference.BaselineMemory`).

A policy of an unregistered family is an error (`family_of`), not a fall-through.
``tests/core/test_policy_families.py`` checks that every path resolves and that every
field family's kernel and twin method are called from the engine's and the twin's
dispatch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from wmtsim.core.field_knobs import Baselines
from wmtsim.core.packing import pack_values, packed_type

SEL_NONE = 0
SEL_EVERYTHING = 1
SEL_ITEMS = 2
SEL_BRANCHES = 3
SEL_BASELINE = 4  # a policy of the field (docs/field.md), run by `wmtsim.engine.field.dispatch`

# TraceRetain eviction (`Policy.eviction`) and threshold (`Policy.threshold`) rules.
EVICT_LRU, EVICT_LFU, EVICT_IMPORTANCE, EVICT_SIMILARITY, EVICT_IMPORTANCE_RECENCY = range(5)
# MemoryBank variants (`Policy.variant`): the paper's curve, docs/field.md's stochastic
# reading, the public code as written.
MB_PAPER, MB_STOCHASTIC, MB_CODE = range(3)
THRESHOLD_Z, THRESHOLD_FIXED = range(2)

# ------------------------------------------------------------------ the families

SHARED, OWN, CAPPED, QUEUE = "shared", "own", "capped", "queue"


@dataclass(frozen=True)
class ItemCap:
    """How many memories a policy puts in context at most (0 = no cap), as the engine
    reads it (`wmtsim.engine.field.common`: `_cap`, `_capped`, `_queue_cap`):

    * ``shared``: the shared cap `Stubs.top_k` (WMT's selector);
    * ``own``: its one knob when > 0, else the shared cap;
    * ``capped``: the sum of its knobs, beneath the shared cap unless `Baselines.own_caps`;
    * ``queue``: the shared cap, none under `Baselines.own_caps` (the queue is the design).

    ``detail`` is shown after the number, formatted with the knobs' values.
    """

    rule: str
    knobs: tuple[str, ...] = ()
    detail: str = ""

    def __post_init__(self) -> None:
        if self.rule not in (SHARED, OWN, CAPPED, QUEUE):
            raise ValueError(f"ItemCap rule {self.rule!r}; allowed: shared, own, capped, "
                             "queue")
        if (self.rule in (OWN, CAPPED)) != bool(self.knobs):
            raise ValueError(f"ItemCap {self.rule!r}: knobs {self.knobs!r} (own and capped "
                             "read knobs, shared and queue none)")

    def size(self, shared: int, knobs: Baselines) -> int:
        """The cap (0 = none) at the shared cap ``shared`` (`Stubs.top_k`) and ``knobs``."""
        if self.rule == SHARED:
            return shared
        if self.rule == QUEUE:
            return 0 if knobs.own_caps else shared
        own = sum(int(getattr(knobs, k)) for k in self.knobs)
        if self.rule == OWN:
            return own if own > 0 else shared
        return own if knobs.own_caps or shared <= 0 else min(own, shared)

    @property
    def reads_own_caps(self) -> bool:
        """Whether `Baselines.own_caps` changes this cap (the robustness study's flip)."""
        return self.rule in (CAPPED, QUEUE)


@dataclass(frozen=True, kw_only=True)
class Family:
    """One family of policies: see "Families" in the module's docstring."""

    code: int
    name: str
    label: str
    knobs: tuple[str, ...]
    item_cap: ItemCap
    variant_caps: Mapping[int, ItemCap] = field(default_factory=dict)
    signal: Callable[[int, Baselines], str] | None  # None: WMT's (its selection modes)
    engine: str
    twin: str

    def cap(self, variant: int) -> ItemCap:
        """The item cap of the family's ``variant``."""
        return self.variant_caps.get(variant, self.item_cap)


# ------------------------------------------------------------------ what rankings read

REL = "apparent relevance + noise"


def _rating(knobs: Baselines) -> str:
    return ("rating: apparent relevance, outcome"
            + (", evidence flag" if knobs.importance_reads_evidence else ""))


def _traceretain_signal(variant: int, knobs: Baselines) -> str:
    return f"admission: {_rating(knobs)}; retrieval: {REL}"


def _generative_signal(variant: int, knobs: Baselines) -> str:
    reflect = "; reflection on a poignancy sum" if knobs.ga_reflect_threshold > 0 else ""
    return f"recency + importance ({_rating(knobs)}) + {REL}{reflect}"


def _memorybank_signal(variant: int, knobs: Baselines) -> str:
    daily = "; daily summaries" if knobs.mb_summaries else ""
    return f"{REL}; forgetting: time since recall, strength{daily}"


def _mem0_signal(variant: int, knobs: Baselines) -> str:
    decision = ("fixed draws" if knobs.mem0_random_decision
                else "which looks more informative (apparent relevance, outcome)")
    return f"{REL}; decision on a match: {decision}"


def _memgpt_signal(variant: int, knobs: Baselines) -> str:
    when = ("searches when no successful tool result about the subtask is in context "
            "(outcome); " if knobs.search_on_need else "")
    search = (f"{when}conversation_search: string match on the subtask over user "
              "messages" if knobs.recall_k > 0 else "no search")
    if knobs.letta_memory:
        core = " (or in place of a lower-rated entry)" if knobs.core_replace else ""
        search += ("; on the memory-pressure warning: saves by rating (apparent "
                   f"relevance, outcome) to core memory{core} (always in context) or "
                   "archival"
                   + (f"; archival_memory_search: {REL}" if knobs.archival_k > 0 else ""))
    return f"recency (queue); {search}"


def _queue_signal(variant: int, knobs: Baselines) -> str:
    return "recency (queue)"


# ------------------------------------------------------------------ the registry

_FIELD_WIDE = ("own_caps", "retrieval_noise")  # the shared cap's switch; the search noise
_RATED = ("importance_noise", "scorer_base_tokens", "importance_reads_evidence")
_TOP_K = ItemCap(OWN, ("top_k",))
_ENGINE = "wmtsim.engine."
_TWIN = "wmtsim.twins.field_reference.BaselineMemory."

WMT = Family(
    code=0, name="wmt", label="WMT's configurations", knobs=(),
    item_cap=ItemCap(SHARED), signal=None,
    engine=_ENGINE + "agent._prompt_step", twin="wmtsim.twins.reference.MemoryTree")
TRACERETAIN = Family(
    code=1, name="traceretain", label="TraceRetain",
    knobs=("capacity", "top_k", *_RATED, "z_window", "z_threshold", "raw_threshold",
           "dup_threshold", "min_tokens", "drop_failed", "dup_content", "importance_weight",
           "frequency_weight", "recency_weight", "recency_decay", "replace_threshold",
           "cluster_size", "tr_buffer", "tr_eval_every", "summary_is_result", *_FIELD_WIDE),
    item_cap=_TOP_K, signal=_traceretain_signal,
    engine=_ENGINE + "field.admission._tr_admit", twin=_TWIN + "traceretain_admit")
GENERATIVE = Family(
    code=2, name="generative_agents", label="Generative Agents",
    knobs=("top_k", *_RATED, "ga_decay", "hours_per_step", "ga_w_recency",
           "ga_w_importance", "ga_w_relevance", "ga_top_k", "ga_code_decay", "gac_w_recency",
           "gac_w_importance", "gac_w_relevance", "ga_reflect_threshold", "ga_focal_points",
           "ga_thoughts", "summary_is_result", *_FIELD_WIDE),
    item_cap=_TOP_K, variant_caps={1: ItemCap(CAPPED, ("ga_top_k",))},  # 1: the public code
    signal=_generative_signal,
    engine=_ENGINE + "field.generative._ga_retrieve", twin=_TWIN + "generative_retrieve")
MEMORYBANK = Family(
    code=3, name="memorybank", label="MemoryBank",
    knobs=("top_k", "mb_threshold", "mb_time_scale", "mb_session_steps", "mb_s_cap",
           "mb_code_top_k", "mb_code_recent", "mb_summaries", "summary_is_result",
           *_FIELD_WIDE),
    item_cap=_TOP_K,
    # The public code: the last turns, then the most similar.
    variant_caps={MB_CODE: ItemCap(CAPPED, ("mb_code_recent", "mb_code_top_k"),
                                   "({mb_code_recent} recent + {mb_code_top_k})")},
    signal=_memorybank_signal,
    engine=_ENGINE + "field.forgetting._mb_forget", twin=_TWIN + "memorybank_forget")
MEMGPT = Family(
    code=4, name="memgpt", label="MemGPT",
    knobs=("importance_noise", "importance_reads_evidence", "window_tokens",
           "evict_fraction", "keep_last", "recall_k", "letta_walk", "search_base_tokens",
           "letta_memory", "warning_fraction", "core_fraction", "save_threshold",
           "archival_k", "core_replace", "search_on_need", *_FIELD_WIDE),
    item_cap=ItemCap(QUEUE), signal=_memgpt_signal,
    engine=_ENGINE + "field.forgetting._letta_overflow", twin=_TWIN + "letta_overflow")
WINDOW = Family(
    code=5, name="sliding_window", label="sliding window",
    knobs=("window_steps", "own_caps"), item_cap=ItemCap(QUEUE), signal=_queue_signal,
    engine=_ENGINE + "field.forgetting._window_slide", twin=_TWIN + "window_slide")
TOKEN_BUFFER = Family(
    code=6, name="token_buffer", label="token buffer",
    knobs=("token_limit", "own_caps"), item_cap=ItemCap(QUEUE), signal=_queue_signal,
    engine=_ENGINE + "field.forgetting._queue_overflow", twin=_TWIN + "queue_overflow")
MEM0 = Family(
    code=7, name="mem0", label="mem0",
    knobs=("top_k", *_RATED[:2], "mem0_search_k", "mem0_match", "mem0_p_update",
           "mem0_p_delete", "mem0_p_none", "mem0_random_decision", *_FIELD_WIDE),
    item_cap=_TOP_K, signal=_mem0_signal,
    engine=_ENGINE + "field.admission._mem0_admit", twin=_TWIN + "mem0_admit")

FAMILIES: tuple[Family, ...] = (WMT, TRACERETAIN, GENERATIVE, MEMORYBANK, MEMGPT, WINDOW,
                                TOKEN_BUFFER, MEM0)


def check_families(families: tuple[Family, ...]) -> None:
    """A registry's rules: codes 0, 1, ... in order (the kernels compare them), names
    unique, every knob a `Baselines` field, and every field family with its parity row."""
    known = {f.name for f in fields(Baselines)}
    names = [f.name for f in families]
    if len(set(names)) != len(names):
        raise ValueError(f"family names repeat: {names}")
    for i, fam in enumerate(families):
        if fam.code != i:
            raise ValueError(f"family {fam.name!r} has code {fam.code}; the registry's "
                             f"codes are 0, 1, ... in order (expected {i})")
        unknown = [k for k in fam.knobs if k not in known]
        caps = (fam.item_cap, *fam.variant_caps.values())
        unknown += [k for cap in caps for k in cap.knobs if k not in fam.knobs]
        if unknown:
            raise ValueError(f"family {fam.name!r} reads {unknown!r}, which are not "
                             "Baselines knobs of its own")
        if fam is not families[0] and fam.signal is None:
            raise ValueError(f"family {fam.name!r} declares no ranking signal (parity)")


check_families(FAMILIES)

# The codes as plain ints, for the kernels and their twins (numba reads no records).
FAM_WMT = WMT.code
FAM_TRACERETAIN = TRACERETAIN.code
FAM_GENERATIVE = GENERATIVE.code
FAM_MEMORYBANK = MEMORYBANK.code
FAM_MEMGPT = MEMGPT.code
FAM_WINDOW = WINDOW.code
FAM_TOKEN_BUFFER = TOKEN_BUFFER.code
FAM_MEM0 = MEM0.code


def family_of(code: int) -> Family:
    """The registered family of code ``code`` (a policy's ``family``); an unregistered
    code is an error, never a fall-through to some other family's rules."""
    if 0 <= code < len(FAMILIES):
        return FAMILIES[code]
    raise ValueError(f"policy family {code} is not registered; registered: "
                     + ", ".join(f"{f.code} ({f.name})" for f in FAMILIES))


# ------------------------------------------------------------------ the configurations

# A mechanism switch of WMT's engine (the table above): the switches attribution moves
# one at a time (`wmtsim.studies.attribution.attribution.switch_names`); every other field is not
# one.
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
    family: int = WMT.code  # a registered family's code (`FAMILIES`)
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
    """A policy of the field: no tree, no scores, no fold; `wmtsim.engine.field.dispatch` selects.
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
