"""The knobs of the field's policies (`Baselines`), their packed record and slot places.

Plain data (no numba): the kernels are `wmtsim.engine.field.dispatch`, the readable twin
`wmtsim.twins.field_reference`; every rule is documented in docs/field.md.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any

from wmtsim.core.knobs import check_knobs, knob
from wmtsim.core.packing import pack_values, packed_type, slots
from wmtsim.core.validation import fail

# Places of a slot (``bs``).
(B_UNSEEN, B_IN, B_DROPPED, B_EVICTED, B_RECALL, B_ARCHIVED, B_FORGOTTEN, B_POPPING,
 B_DELETED, B_OVERWRITTEN, B_BUFFERED, B_CORE) = range(12)
B_NAMES = ("unseen", "in", "dropped", "evicted", "recall", "archived", "forgotten",
           "popping", "deleted", "overwritten", "buffered", "core")
# A field policy's per-trajectory scratch (``FieldScratch.misc``, int64), in slot order:
# (name, doc). `M` numbers them (``misc[M.summary]``); a fresh scratch is all 0 but
# ``summary`` (-1), `wmtsim.engine.loop._field_scratch`.
MISC_DOCS: tuple[tuple[str, str], ...] = (
    ("seen", "slots the admission step has seen (new items start here)"),
    ("win_count", "TraceRetain: ratings held in the z-score window"),
    ("win_head", "TraceRetain: the window's next write position"),
    ("summary", "the running summary's slot (-1: none yet)"),
    ("ga_poignancy", "Generative Agents: poignancy summed since the last reflection "
                     "(`importance_trigger_max - importance_trigger_curr`)"),
    ("ga_since", "Generative Agents: memories arrived since the last reflection "
                 "(`importance_ele_n`)"),
    ("letta_alerted", "MemGPT: Letta's `agent_alerted_about_memory_pressure` (1 from a "
                      "memory-pressure warning until the next summary)"),
)
MISC = tuple(name for name, _ in MISC_DOCS)
M = slots("Misc", MISC, __name__)
"""Scratch slot name -> its position, for the kernels (``X.misc[M.seen]``)."""
N_MISC = len(MISC)

_SQRT3 = 1.7320508075688772
_TRUE_FALSE = "true | false"  # the allowed text of a boolean knob here


@dataclass(frozen=True)
class Baselines:
    """Knobs of the field's policies (docs/field.md), with documented defaults.

    Each knob's default, range and doc is its `knob` declaration.
    """

    capacity: int = knob(8, lo=1, hi=100_000,
        doc="TraceRetain's long-term store size K (items and cluster summaries).")
    top_k: int = knob(0, hi=100_000,
        doc='item cap of TraceRetain, MemoryBank (paper, stochastic), Generative Agents (paper) '
            "and mem0 retrieval; 0 (default) = the shared cap, `Stubs.top_k`, the very cap WMT's "
            'selector has (none of these designs fixes its own). Every retrieval is also greedy '
            "under the scenario's token budget B (`Params.budget`).")
    importance_noise: float = knob(1.5, lo=0.0, hi=10.0,
        doc="s.d. of the importance scorer stub's noise, in rating points.")
    z_window: int = knob(50, lo=2, hi=10_000,
        doc='TraceRetain: sliding window of previous scores for the z-score.')
    z_threshold: float = knob(0.5, lo=-10.0, hi=10.0,
        doc='TraceRetain: retain when z > z_threshold.')
    raw_threshold: float = knob(7.0, lo=0.0, hi=10.0,
        doc="TraceRetain fixed variant (and the z rule's cold start, fewer than two previous "
            'scores or zero spread): retain when the raw score >= raw_threshold.')
    dup_threshold: float = knob(0.95, lo=0.0, hi=1.0,
        doc='TraceRetain rule filter: drop a trace whose similarity to a stored one exceeds it '
            '(near-duplicate; the earliest is kept).')
    min_tokens: int = knob(20,
        doc='TraceRetain rule filter: drop traces shorter than this without evidence.')
    drop_failed: bool = knob(False, allowed=_TRUE_FALSE,
        doc='TraceRetain rule filter: treat failed-action reports as low-priority.')
    importance_weight: float = knob(0.7, lo=0.0, hi=100.0,
        doc='TraceRetain importance-weighted eviction (the article, §3.4: "importance · 0.7 + '
            'recent access frequency · 0.3"): evict the lowest importance_weight · importance/10 '
            '+ frequency_weight · retrievals per prompt step since the memory was created.')
    recency_weight: float = knob(0.3, lo=0.0, hi=100.0,
        doc='the LRU-with-importance variant (the article\'s "in my practice": least recently used'
            ' and low importance) importance_weight · importance/10 + recency_weight · '
            'recency_decay^(steps idle).')
    recency_decay: float = knob(0.99, lo=0.0, hi=1.0, lo_open=True,
        doc='the LRU-with-importance variant (the article\'s "in my practice": least recently used'
            ' and low importance) importance_weight · importance/10 + recency_weight · '
            'recency_decay^(steps idle).')
    replace_threshold: float = knob(0.8, lo=0.0, hi=1.0,
        doc='TraceRetain similarity eviction: a new item replaces the most similar stored one '
            'when their similarity >= replace_threshold.')
    cluster_size: int = knob(4, lo=2, hi=10_000,
        doc="TraceRetain clusters: a topic's stored items are summarised into one when this many "
            'are stored (originals archived).')
    scorer_base_tokens: int = knob(50,
        doc='prompt tokens of one importance-rating call (plus the item).')
    ga_top_k: int = knob(30, lo=1, hi=100_000,
        doc='Generative Agents retrieval size (30 in the public code).')
    ga_decay: float = knob(0.995, lo=0.0, hi=1.0, lo_open=True,
        doc='Generative Agents recency 0.995^(hours since last access).')
    hours_per_step: float = knob(1.0, lo=0.0, hi=1e6, lo_open=True,
        doc='simulated hours per prompt step (GA recency).')
    ga_code_decay: float = knob(0.99, lo=0.0, hi=1.0, lo_open=True,
        doc='public-code variant: rank-based recency decay^rank.')
    ga_w_recency: float = knob(1.0, lo=0.0, hi=100.0, doc='paper weights (1, 1, 1).')
    ga_w_importance: float = knob(1.0, lo=0.0, hi=100.0, doc='paper weights (1, 1, 1).')
    ga_w_relevance: float = knob(1.0, lo=0.0, hi=100.0, doc='paper weights (1, 1, 1).')
    gac_w_recency: float = knob(0.5, lo=0.0, hi=100.0, doc='public-code weights (0.5, 2, 3).')
    gac_w_importance: float = knob(2.0, lo=0.0, hi=100.0, doc='public-code weights (0.5, 2, 3).')
    gac_w_relevance: float = knob(3.0, lo=0.0, hi=100.0, doc='public-code weights (0.5, 2, 3).')
    mb_threshold: float = knob(0.5, lo=0.0, hi=1.0, lo_open=True, hi_open=True,
        doc='MemoryBank: forget when R = exp(-t/S) < mb_threshold.')
    mb_time_scale: float = knob(10.0, lo=0.0, hi=1e9, lo_open=True,
        doc='MemoryBank: prompt steps per unit of t.')
    mb_s_cap: int = knob(3, hi=1_000_000,
        doc='stochastic MemoryBank: cap on the strength S (public code: 3).')
    window_tokens: int = knob(0,
        doc='MemGPT context window W for the message queue and its summary; 0 (default) = the '
            "scenario's budget B.")
    evict_fraction: float = knob(0.75, lo=0.0, hi=1.0,
        doc="MemGPT: on overflow evict at least this share of the queue's tokens.")
    keep_last: int = knob(3, hi=10_000, doc='MemGPT: the newest messages never evicted.')
    recall_k: int = knob(5, hi=100_000,
        doc="MemGPT: page size of `conversation_search` (Letta constants.py "
            'RETRIEVAL_QUERY_DEFAULT_PAGE_SIZE = 5), the tool call the agent makes at a '
            "subtask's answer when it decides to search (search_on_need): case-insensitive "
            "string match over the agent's user messages (task nodes; never tool output), "
            'oldest first; one charged LLM call '
            '(search_base_tokens + the tokens returned); what fits in B joins the context. '
            '0 = the agent never searches.')
    window_steps: int = knob(8, lo=1, hi=1_000_000,
        doc='sliding window: keep items created in the last k prompt steps.')
    token_limit: int = knob(0,
        doc='token buffer: pop the oldest items until the buffer (and its running summary) is '
            'under this many tokens; 0 (default) = the budget B.')
    dup_content: bool = knob(True, allowed=_TRUE_FALSE,
        doc='TraceRetain near-duplicate test on content (article: embedding cosine > 0.95, i.e. '
            'near-identical text): two traces can only be duplicates when they are of the same '
            'kind, outcome and evidence (the key fact); false = the topic-level similarity alone '
            '(the previous rule, which dropped unique evidence).')
    mb_session_steps: int = knob(5, hi=1_000_000,
        doc='MemoryBank: prompt steps per session; the forgetting pass runs at the start of each '
            'session (the public code forgets once per memory load, forget_memory.py '
            '`MemoryForgetterLoader.initial_load_forget_and_save`); default 5 (a trajectory is '
            'several sessions, so forgetting is on); 0 = one session per trajectory (never '
            'forgets inside a task).')
    mb_code_top_k: int = knob(2, lo=1, hi=100_000,
        doc='MemoryBank public code: retrieved memories (sys_args.py memory_search_top_k = 2).')
    mb_code_recent: int = knob(7, hi=100_000,
        doc='MemoryBank public code: the newest memories always in the prompt (the dialogue '
            'history: utils/sys_args.py max_history = 7, cut in cli_demo.py `predict_new`; '
            "forget_memory.py's LLM_HISTORY_LEN = 3 is never used); 0 = no history turns "
            '(never "all").')
    frequency_weight: float = knob(0.3, lo=0.0, hi=100.0, doc='see importance_weight.')
    mem0_search_k: int = knob(5, lo=1, hi=100_000,
        doc='mem0: stored memories retrieved per new fact for the decision (main.py '
            '`_add_to_vector_store`: vector_store.search(top_k=5)).')
    mem0_match: float = knob(0.8, lo=0.0, hi=1.0,
        doc='mem0 decision stub: a retrieved memory at least this similar is about the same fact;'
            ' below it the fact is added (ADD).')
    mem0_p_update: float = knob(0.3, lo=0.0, hi=1.0,
        doc='how often the decision on a matched fact is UPDATE (the new fact overwrites the old '
            'memory: last writer wins), DELETE (the old memory is deleted as contradicted, the '
            'new fact not stored) or NONE (already known: nothing stored); the rest is ADD. '
            'Modelling choices, not measured rates.')
    mem0_p_delete: float = knob(0.1, lo=0.0, hi=1.0,
        doc='how often the decision on a matched fact is UPDATE (the new fact overwrites the old '
            'memory: last writer wins), DELETE (the old memory is deleted as contradicted, the '
            'new fact not stored) or NONE (already known: nothing stored); the rest is ADD. '
            'Modelling choices, not measured rates.')
    mem0_p_none: float = knob(0.3, lo=0.0, hi=1.0,
        doc='how often the decision on a matched fact is UPDATE (the new fact overwrites the old '
            'memory: last writer wins), DELETE (the old memory is deleted as contradicted, the '
            'new fact not stored) or NONE (already known: nothing stored); the rest is ADD. '
            'Modelling choices, not measured rates.')

    importance_reads_evidence: bool = knob(False, allowed=_TRUE_FALSE,
        doc="the importance rater's signal: false (default) = what WMT's selector reads too, "
            'the apparent relevance and the outcome (10 · (0.75 · relevance + 0.25 · [not a '
            'failure]) + noise); true = also the ground-truth evidence flag (10 · (0.6 · '
            'relevance + 0.2 · [not a failure] + 0.2 · [evidence]) + noise, the previous '
            'rule), which no WMT configuration sees.')
    own_caps: bool = knob(False, allowed=_TRUE_FALSE,
        doc='false (default) = one item cap for everyone: every field retrieval, queue and '
            "window puts at most `Stubs.top_k` memories in context (0 = none), WMT's cap; "
            "the designs' own sizes (ga_top_k, mb_code_top_k + mb_code_recent, recall_k) "
            'apply beneath it. true = the designs\' own caps only (queues and windows '
            'uncapped), the previous rule.')
    mem0_random_decision: bool = knob(False, allowed=_TRUE_FALSE,
        doc="mem0's decision on a matched fact: false (default) = content-aware, as "
            'DEFAULT_UPDATE_MEMORY_PROMPT asks: keep the fact with the most information '
            '(UPDATE when the new fact looks more informative, else NONE), a contradiction '
            '(a supersede event) deletes; true = the fixed draws mem0_p_update / mem0_p_delete '
            '/ mem0_p_none (the previous rule).')
    letta_walk: bool = knob(True, allowed=_TRUE_FALSE,
        doc="MemGPT's eviction: true (default) = Letta's own walk (letta/agent.py "
            '`Agent.summarize_messages_inplace`, Dec 2024): summarise the messages before the '
            'one that crosses evict_fraction of (summary + queue), never the last keep_last, '
            'the cutoff moved past a user message and past tool messages; when fewer than two '
            'messages would be summarised Letta raises ContextWindowExceededError, counted in '
            '`context_overflows`; false = pop through the crossing message until the window '
            'fits (the previous rule).')
    tr_buffer: int = knob(5, hi=100_000,
        doc="TraceRetain's short-term buffer (the article §2.3: traces first go to a small "
            'working buffer; the retention evaluator scores its contents periodically or at '
            'key moments, in batches, §3.2): the buffer holds up to tr_buffer traces and is '
            'evaluated in one rating call when full, every tr_eval_every prompt steps and at '
            "every subtask's answer and the final answer; near-duplicates are dropped against "
            'the buffer; buffered traces are not retrievable. 0 = no buffer: each trace is '
            'rated on arrival, one call each (the previous rule).')
    tr_eval_every: int = knob(5, lo=1, hi=1_000_000,
        doc="TraceRetain: prompt steps between the buffer's periodic evaluations.")
    ga_reflect_threshold: int = knob(150, hi=1_000_000,
        doc="Generative Agents' reflection (reflect.py `reflection_trigger`; scratch.py "
            '`importance_trigger_max = 150`): when the importance ratings of the memories '
            'since the last reflection sum to this, the agent reflects: one call for the '
            'focal points over those memories, then per focal point one insight call over '
            "its topic's memories and two calls per thought; the thoughts are one new "
            'memory per focal topic (a summary with its evidence). 0 = never reflects.')
    ga_focal_points: int = knob(3, lo=1, hi=100,
        doc='Generative Agents: focal points per reflection (`generate_focal_points(persona, 3)`).')
    ga_thoughts: int = knob(5, lo=1, hi=100,
        doc='Generative Agents: thoughts per focal point (`generate_insights_and_evidence(…, 5)`), '
            'each charged two calls (`generate_action_event_triple`, `generate_poig_score`).')
    letta_memory: bool = knob(True, allowed=_TRUE_FALSE,
        doc="MemGPT's own memory tools (letta/agent.py `Agent.inner_step`, "
            'letta/functions/function_sets/base.py): when memory context (core memory + '
            'summary + queue) passes warning_fraction of the window W, once until the next '
            'summary, the agent gets the memory-pressure warning and saves what it rates '
            'important (save_threshold) with `core_memory_append` while core memory has room '
            '(core_fraction of W), else `core_memory_replace` (core_replace), else '
            '`archival_memory_insert`, each one charged tool call; core memory is always in '
            "context, counted in B and the window; when it searches at a subtask's answer "
            '(search_on_need) the agent calls `archival_memory_search` (archival_k). false = '
            'none of it (the previous rule).')
    warning_fraction: float = knob(0.75, lo=0.0, hi=1.0,
        doc='MemGPT: the memory-pressure warning fires when memory context exceeds this share '
            'of W (letta/constants.py MESSAGE_SUMMARY_WARNING_FRAC = 0.75).')
    core_fraction: float = knob(0.3, lo=0.0, hi=1.0,
        doc="MemGPT: core memory's size as a share of W (letta/constants.py: two blocks of "
            'CORE_MEMORY_*_CHAR_LIMIT = 5000 characters, about 2,500 tokens, in the default '
            '8,192-token window); 0 = no core memory (every save goes to archival).')
    save_threshold: float = knob(7.0, lo=0.0, hi=10.0,
        doc='MemGPT: at a memory-pressure warning the agent saves each queued message it rates '
            'at least this (the shared 0-10 importance stub, the scale of TraceRetain\'s '
            'raw_threshold).')
    archival_k: int = knob(5, hi=100_000,
        doc="MemGPT: page size of `archival_memory_search` (RETRIEVAL_QUERY_DEFAULT_PAGE_SIZE = "
            "5), the tool call the agent makes at a subtask's answer when it decides to search "
            '(search_on_need): the archived passages '
            'most similar to the subtask (embedding search, the query similarity every field '
            'retriever reads); one charged call (search_base_tokens + the tokens returned); '
            'what fits in B joins the context. 0 = the agent never searches archival memory.')
    mb_summaries: bool = knob(True, allowed=_TRUE_FALSE,
        doc="MemoryBank's daily summaries (memory_bank/summarize_memory.py `summarize_memory`: "
            'one LLM call per day without a summary; forget_memory.py loads each as a '
            'retrievable document): a day is mb_time_scale prompt steps (the curve\'s unit of '
            't); at each session start every day that has ended since the last one gets one '
            "summariser call over its stored memories, one part per subtask they are about "
            "(that subtask's summary memory: its evidence, poison absorbed with p_leak, an "
            'earlier summary of that subtask merged in), retrievable like any memory, never '
            'forgotten by the curve, dropped when its subtask has no stored memory left. '
            'false = no summaries (the previous rule).')
    summary_is_result: bool = knob(False, allowed=_TRUE_FALSE,
        doc="one rule for every field policy's own summaries of a subtask (a Generative "
            "Agents thought, a MemoryBank daily summary, a TraceRetain cluster summary): "
            "false (default) = such a derived memory stands for its subtask's result in the "
            "final answer (the world's rule: a memory of the subtask's branch that carries "
            "evidence, or its fold summary) only when it carries the subtask's evidence, "
            "derived from a memory that did: WMT's fold summary is written when the subtask "
            "completes, a thought, a day's summary or a cluster may be written before its "
            "result was seen; true = it counts like a fold summary, evidence or not (the "
            "rule before this knob, for GA's thoughts and TraceRetain's clusters).")
    retrieval_noise: float = knob(1.0, lo=0.0, hi=100.0,
        doc="multiplies the noise of the field's query similarity (Stubs.selector_noise, the "
            "noise WMT's selector reads): 1 (default) = the same noise as WMT's LLM selector; 3 = "
            "the robustness flip \"the field's retrieval is an embedding, not an LLM\".")
    core_replace: bool = knob(True, allowed=_TRUE_FALSE,
        doc="MemGPT: `core_memory_replace` (letta/functions/function_sets/base.py): at a "
            'memory-pressure warning, a save that does not fit in core memory replaces the '
            'lowest-rated core entry rated below it (ties: the older) when that makes room; '
            'the replaced message leaves core memory for recall storage; one charged tool call '
            '(search_base_tokens + old and new tokens). false = append only, the rest to '
            'archival (the previous rule).')
    search_on_need: bool = knob(True, allowed=_TRUE_FALSE,
        doc="MemGPT: `conversation_search` and `archival_memory_search` are tool calls the "
            "agent decides to make: at a subtask's answer it searches only when its context "
            'holds no successful tool result (action) about the subtask, what the agent reads '
            "(the outcome, as WMT's selector reads it; no evidence flag); false = it searches "
            "at every subtask's answer (the previous rule).")
    search_base_tokens: int = knob(60,
        doc="prompt tokens of one agent tool call besides what it returns (MemGPT's "
            '`conversation_search`): the agent step that makes the call.')

    def __post_init__(self) -> None:
        owner = "Baselines"
        check_knobs(owner, self)
        total = self.mem0_p_update + self.mem0_p_delete + self.mem0_p_none
        if total > 1.0:
            fail(owner, "mem0_p_none", self.mem0_p_none,
                 "a probability with mem0_p_update + mem0_p_delete + mem0_p_none <= 1")

    # Derived constants, computed once in Python so that engine and twin share the bits.
    def ga_step_decay(self) -> float:
        """GA recency factor per prompt step: ga_decay ** hours_per_step."""
        return float(self.ga_decay) ** float(self.hours_per_step)

    def mb_forget_after(self) -> float:
        """t·time_scale beyond which R = exp(-t/S) < θ, per unit of S: scale·ln(1/θ)."""
        return float(self.mb_time_scale) * math.log(1.0 / float(self.mb_threshold))

    def pack(self) -> Any:
        """The knobs as the kernels read them (`PackedBaselines`: ``bl.recall_k``, ...),
        then the derived ``ga_step_decay`` and ``mb_forget_after``."""
        return pack_values(self, PackedBaselines,
                           extra=(self.ga_step_decay(), self.mb_forget_after()))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> Baselines:
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - names)
        if unknown:
            fail("Baselines", unknown[0], values[unknown[0]],
                 "one of " + ", ".join(sorted(names)))
        return cls(**values)



# The packed knobs, then the two derived constants.
PackedBaselines = packed_type(Baselines,
                              extra=("ga_step_decay", "mb_forget_after"))
