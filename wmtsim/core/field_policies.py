"""The field's policy families and policies (docs/field.md), each declared once, here.

A policy of the field is registered and documented in this one file: its family's
`Family` record (appended to `FIELD_FAMILIES`, its ``FAM_`` code read from the record)
and its `FieldPolicy` row in `FIELD_ROWS`, which carries both the switches of the
`Policy` that `wmtsim.core.policies` registers under its name and its documentation: the
"state per item" and "rules" columns of docs/field.md's table "The policies", rendered
from these rows by scripts/field_policies_table.py (`make docs`). Registration and
documentation in one place is what keeps a new policy's walk short (docs/architecture.md,
"A new field policy"). This module is below `wmtsim.core.policies` (which adds WMT's own
family and configurations and owns the registries `FAMILIES` and `POLICIES`); it imports
nothing of it.

**Families.** A policy's ``family`` is the code of a registered `Family`
(`wmtsim.core.policies.FAMILIES`); everything the engine, the twin and the studies need
to know about a family is declared in its record, once:

* ``code``: the int the numba kernels compare ``sw.family`` against (`FAM_TRACERETAIN`,
  ..., read from the records: numba needs plain ints, not records);
* ``knobs``: the `Baselines` knobs its rules read, in any of its variants
  (`wmtsim.core.knob_readers` narrows a knob to some variants where only they read it);
* ``item_cap`` (and ``variant_caps``): how many memories it puts in context at most, as
  the engine reads it, for the parity table and the "designs' own item caps" flip;
* ``signal``: what its ranking reads, the parity table's last column;
* ``engine`` and ``twin``: where its rules are, as dotted paths (the kernel its dispatch
  in `wmtsim.engine.field.dispatch` calls, the method of the twin
  `wmtsim.twins.field_reference.BaselineMemory`);
* ``table_name``: how docs/field.md's policies table names it (default: ``label``).

A policy of an unregistered family is an error (`wmtsim.core.policies.family_of`), not a
fall-through. ``tests/core/test_policy_families.py`` checks that every path resolves and
that every field family's kernel and twin method are called from the engine's and the
twin's dispatch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from wmtsim.core.field_knobs import Baselines

# TraceRetain eviction (`Policy.eviction`) and threshold (`Policy.threshold`) rules.
EVICT_LRU, EVICT_LFU, EVICT_IMPORTANCE, EVICT_SIMILARITY, EVICT_IMPORTANCE_RECENCY = range(5)
# MemoryBank variants (`Policy.variant`): the paper's curve, docs/field.md's stochastic
# reading, the public code as written.
MB_PAPER, MB_STOCHASTIC, MB_CODE = range(3)
THRESHOLD_Z, THRESHOLD_FIXED = range(2)

# ------------------------------------------------------------------ the records

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
    table_name: str = ""  # docs/field.md's policies table; "" = the label

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


# ------------------------------------------------------------------ the field's families

_FIELD_WIDE = ("own_caps", "retrieval_noise")  # the shared cap's switch; the search noise
_RATED = ("importance_noise", "scorer_base_tokens", "importance_reads_evidence")
_TOP_K = ItemCap(OWN, ("top_k",))
_ENGINE = "wmtsim.engine."
_TWIN = "wmtsim.twins.field_reference.BaselineMemory."

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
    engine=_ENGINE + "field.forgetting._letta_overflow", twin=_TWIN + "letta_overflow",
    table_name="MemGPT / Letta")
WINDOW = Family(
    code=5, name="sliding_window", label="sliding window",
    knobs=("window_steps", "own_caps"), item_cap=ItemCap(QUEUE), signal=_queue_signal,
    engine=_ENGINE + "field.forgetting._window_slide", twin=_TWIN + "window_slide",
    table_name="window")
TOKEN_BUFFER = Family(
    code=6, name="token_buffer", label="token buffer",
    knobs=("token_limit", "own_caps"), item_cap=ItemCap(QUEUE), signal=_queue_signal,
    engine=_ENGINE + "field.forgetting._queue_overflow", twin=_TWIN + "queue_overflow",
    table_name="buffer")
MEM0 = Family(
    code=7, name="mem0", label="mem0",
    knobs=("top_k", *_RATED[:2], "mem0_search_k", "mem0_match", "mem0_p_update",
           "mem0_p_delete", "mem0_p_none", "mem0_random_decision", *_FIELD_WIDE),
    item_cap=_TOP_K, signal=_mem0_signal,
    engine=_ENGINE + "field.admission._mem0_admit", twin=_TWIN + "mem0_admit")


# The field's families, in code order after WMT's (code 0, `wmtsim.core.policies`).
FIELD_FAMILIES: tuple[Family, ...] = (TRACERETAIN, GENERATIVE, MEMORYBANK, MEMGPT, WINDOW,
                                      TOKEN_BUFFER, MEM0)

# The codes as plain ints, for the kernels and their twins (numba reads no records).
FAM_TRACERETAIN = TRACERETAIN.code
FAM_GENERATIVE = GENERATIVE.code
FAM_MEMORYBANK = MEMORYBANK.code
FAM_MEMGPT = MEMGPT.code
FAM_WINDOW = WINDOW.code
FAM_TOKEN_BUFFER = TOKEN_BUFFER.code
FAM_MEM0 = MEM0.code

# ------------------------------------------------------------------ the policies


@dataclass(frozen=True)
class FieldPolicy:
    """One policy of the field: its name, label, family and variant switches (the
    `Policy` that `wmtsim.core.policies` registers: no tree, no scores, no fold; selection
    ``baseline``, so `wmtsim.engine.field.dispatch` selects), and its row of docs/field.md's
    table "The policies": ``state`` (what it keeps per memory; "same": as the family's
    first row) and ``rules``, Markdown, one table cell each. ``supersede`` only where the
    policy's own design has a contradiction rule."""

    name: str
    label: str
    family: Family
    variant: int = 0  # GA: 1 = public code; MemoryBank: MB_*; windows: 1 = summary
    eviction: int = EVICT_LRU
    threshold: int = THRESHOLD_Z
    cluster: bool = False
    supersede: bool = False
    state: str = field(kw_only=True)
    rules: str = field(kw_only=True)

    def __post_init__(self) -> None:
        if not self.state or not self.rules or "|" in self.state + self.rules:
            raise ValueError(f"field policy {self.name!r}: its docs/field.md row needs a "
                             "state and rules, one table cell each (no '|')")


FIELD_ROWS: tuple[FieldPolicy, ...] = (
    FieldPolicy("traceretain_z", "TraceRetain (z-score, LRU)", TRACERETAIN,
        state="place, importance, last access, retrievals",
        rules=("rule filter → short-term buffer (`tr_buffer`) → batched rating when full, "
               "periodically and at key moments → retain if z > `z_threshold` over the last "
               "`z_window` ratings (cold start: fewer than two ratings or zero spread → raw ≥ "
               "`raw_threshold`) → store of `capacity` with **LRU** eviction → top-`top_k` "
               "retrieval")),
    FieldPolicy("traceretain_fixed", "TraceRetain (raw >= 7, LRU)", TRACERETAIN,
        threshold=THRESHOLD_FIXED,
        state="same",
        rules="retain if raw ≥ `raw_threshold` (7)"),
    FieldPolicy("traceretain_lfu", "TraceRetain (z-score, LFU)", TRACERETAIN, eviction=EVICT_LFU,
        state="same",
        rules="**LFU** eviction: fewest retrievals, then least recent"),
    FieldPolicy("traceretain_importance", "TraceRetain (z-score, importance + frequency)",
        TRACERETAIN, eviction=EVICT_IMPORTANCE,
        state="same",
        rules=("evict lowest `importance_weight`·imp/10 + `frequency_weight`·retrievals per "
               "step since created (0.7/0.3, the article §3.4)")),
    FieldPolicy("traceretain_importance_lru", "TraceRetain (z-score, importance + recency)",
        TRACERETAIN, eviction=EVICT_IMPORTANCE_RECENCY,
        state="same",
        rules=("evict lowest 0.7·imp/10 + 0.3·0.99^(steps idle) (the article's "
               "LRU-with-importance practice)")),
    FieldPolicy("traceretain_similarity", "TraceRetain (z-score, similarity replace)", TRACERETAIN,
        eviction=EVICT_SIMILARITY,
        state="same",
        rules=("a new item **replaces** the most similar stored one when similarity ≥ "
               "`replace_threshold` (last writer wins); else LRU when full")),
    FieldPolicy("traceretain_cluster", "TraceRetain (z-score, LRU, cluster summaries)", TRACERETAIN,
        cluster=True,
        state="same + cluster summaries",
        rules=("when a topic has `cluster_size` stored items they become one summary "
               "(originals archived, not retrievable)")),
    FieldPolicy("traceretain_conflict", "TraceRetain (z-score, LRU, conflict resolution)",
        TRACERETAIN, supersede=True,
        state="same",
        rules="LRU; acts on supersede events (the article's conflict resolution)"),
    FieldPolicy("generative_agents", "Generative Agents (paper)", GENERATIVE,
        state="importance (1–10), last access",
        rules=("score = recency + importance + relevance, each min-max scaled over the "
               "candidates (constant → 0.5), recency = `ga_decay`^(hours since last access), "
               "`hours_per_step` h per step; top `ga_top_k` (30); retrieval refreshes last "
               "access; reflection when the ratings since the last one sum to "
               "`ga_reflect_threshold` (thoughts: one summary memory per focal subtask, every "
               "call charged; its subtask's result only with the subtask's evidence, "
               "`summary_is_result`)")),
    FieldPolicy("generative_agents_code", "Generative Agents (public code)", GENERATIVE, variant=1,
        state="same",
        rules=("public code: weights 0.5/2/3 (`gac_w_*`), recency by rank of last access "
               "**oldest first**, 0.99^(rank+1) (the code sorts ascending, so the oldest "
               "memory gets the largest recency; reproduced as is)")),
    FieldPolicy("memorybank", "MemoryBank (threshold forgetting)", MEMORYBANK,
        state="strength S, time of creation/last recall",
        rules=("at each session start (every `mb_session_steps` = 5 prompt steps) forget when "
               "R = exp(−t/S) < `mb_threshold`, t = steps / `mb_time_scale`; computed exactly "
               "as steps > S·scale·ln(1/θ); top-`top_k` retrieval; a recall sets S ← S+1 and "
               "resets t; with `mb_summaries`, one summary per day (a day is `mb_time_scale` ="
               " 10 prompt steps, the curve's unit of t): at each session start (before "
               "forgetting) every day that has ended since the last session start gets one "
               "summariser call over its stored memories, one part per subtask the day's "
               "memories are about: that subtask's summary memory (its earlier summary merged "
               "in, its evidence, poison absorbed with `p_leak`), retrieved like any memory, "
               "never forgotten by the curve, dropped when its subtask has no stored memory "
               "left; it stands for the subtask's result in the final answer only when it "
               "carries the subtask's evidence (`summary_is_result`)")),
    FieldPolicy("memorybank_stochastic", "MemoryBank (stochastic, S <= 3)", MEMORYBANK,
        variant=MB_STOCHASTIC,
        state="same",
        rules=("keep with probability R at each session start (`math.exp`, the C library's on "
               "both sides); S capped at `mb_s_cap` (3)")),
    FieldPolicy("memorybank_code", "MemoryBank (public code as written)", MEMORYBANK,
        variant=MB_CODE,
        state="same",
        rules=("public code: keep w.p. exp(−(t/5)·S) at each session start, the last 7 items "
               "(`max_history`) + top-2, S uncapped; at most the shared cap in all")),
    FieldPolicy("memgpt", "MemGPT-style FIFO + recursive summary", MEMGPT,
        state="queue, recall storage, one recursive summary, core memory, archival passages",
        rules=("all queued messages are in context (newest first within B and the cap); while "
               "summary + queue > `window_tokens`, Letta's walk (`letta_walk`): summarise the "
               "messages before the one that crosses `evict_fraction` of the buffer, never the"
               " newest `keep_last`; summarised messages → recall storage, old summary + them "
               "→ one summary; where Letta would raise ContextWindowExceededError the run is "
               "flagged (`context_overflows`); at a subtask's answer, when its context holds "
               "no successful tool result about the subtask (`search_on_need`), the agent "
               "calls `conversation_search` (a charged tool call: the subtask's user messages,"
               " oldest first, `recall_k`). With `letta_memory`: the memory-pressure warning "
               "(core + summary + queue > `warning_fraction`·W, once until the next summary) "
               "makes the agent rate its queued messages and save those rated ≥ "
               "`save_threshold` to core memory (while it fits in `core_fraction`·W; always in"
               " context, first), else in place of a lower-rated core entry when that makes "
               "room (`core_memory_replace`, `core_replace`; the old entry goes to recall "
               "storage), else to archival memory; when it searches it also calls "
               "`archival_memory_search` (`archival_k` passages by query similarity); each "
               "step and tool call charged")),
    FieldPolicy("sliding_window", "Sliding window (last k steps)", WINDOW,
        state="queue",
        rules="items created in the last `window_steps` prompt steps are the context"),
    FieldPolicy("sliding_window_summary", "Sliding window + running summary", WINDOW, variant=1,
        state="+ running summary",
        rules="what leaves is folded into a running summary"),
    FieldPolicy("token_buffer", "Token buffer", TOKEN_BUFFER,
        state="queue",
        rules="pop the oldest until the queue is under `token_limit`"),
    FieldPolicy("token_buffer_summary", "Token buffer + running summary", TOKEN_BUFFER, variant=1,
        state="+ running summary",
        rules=("pop until queue + the summary they would make is under `token_limit`; fold "
               "them")),
    FieldPolicy("mem0", "mem0-style ADD/UPDATE/DELETE/NONE", MEM0, supersede=True,
        state="store",
        rules=("per new fact: extraction call, search of the 5 most similar, decision call: "
               "ADD without a match, else UPDATE when the new fact looks more informative, "
               "else NONE; top-k by query similarity within B; supersede (a contradiction) → "
               "DELETE")),
)
