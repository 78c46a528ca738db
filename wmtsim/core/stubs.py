"""Knobs of the three LLM stubs: selector, summariser, reasoner (docs/world.md).

The stubs' behaviour lives in `wmtsim.engine` (numba) and `wmtsim.twins.simulator` (readable
twin); this module only declares and validates their parameters.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from wmtsim.core.knobs import check_knobs, knob
from wmtsim.core.packing import pack_values, packed_type
from wmtsim.core.validation import fail

# The mechanism rules of docs/model_decisions.md ("The paper's mechanisms"): each a choice
# knob, the paper's reading first (the default), the previous rule kept as its flip.
SELECTOR_RULES = ("choose", "fill")
SELECT_CHOOSE, SELECT_FILL = range(2)
BRANCH_RETRIEVAL_RULES = ("whole", "fit")
BRANCH_WHOLE, BRANCH_FIT = range(2)
BRANCH_FOLDED_RULES = ("nodes", "summary", "both")
FOLDED_NODES, FOLDED_SUMMARY, FOLDED_BOTH = range(3)
PERSUADE_SCOPES = ("any", "topic")
PERSUADE_ANY, PERSUADE_TOPIC = range(2)
IP_RULES = ("own", "carried")
IP_OWN, IP_CARRIED = range(2)
# The neutral retention score: the selector's judgement adds w_u·(u − ½) + w_b·(U_b − ½),
# so a memory of average standing is judged on its relevance alone, as in a configuration
# without scores (docs/world.md, the selector).
SCORE_NEUTRAL = 0.5


@dataclass(frozen=True)
class Stubs:
    """Parameters of the stubbed LLM roles, with documented defaults.

    Selector (Γ_sel): utility = relevance to the current subtask + ``poison_boost`` for
    injected poison + ``selector_noise`` · ε (ε ≈ N(0, 1), an Irwin–Hall sum of four
    uniforms) + ``w_u``·u + ``w_b``·U_b for policies with retention scores. Under
    ``selector_rule = "choose"`` (the paper's Γ_sel, §2.1) it includes a candidate when it
    judges it relevant, utility − (``w_u`` + ``w_b``)·½ ≥ ``select_threshold`` (the score
    terms counted from a neutral ½), best first, B the ceiling; under ``"fill"`` (the
    previous rule) it takes the best that fit until B is full. At most ``top_k`` items
    (0 = no cap). A3 (no semantic selection) takes whole branches by priority: all of
    them (``branch_retrieval = "whole"``) or those that fit in B (``"fit"``); a folded
    branch is retrieved as the nodes it holds (``branch_folded = "nodes"``, the paper's
    "whole-branch retrieval" that "reintroduces" what the fold kept out), as its summary
    (``"summary"``, the previous rule) or as both.
    Its call reads every candidate in full (``selector_read_fraction`` = 1: an LLM judges a
    memory's relevance by reading it) plus ``selector_base_tokens`` (+ ``struct_tokens``
    per candidate); a smaller fraction is the previous rule's compact index.

    Summariser: a fold summary has ceil(``c_sum`` · branch tokens) tokens, keeps the
    branch's supported result (its evidence) and its warnings, and absorbs each poisoned
    memory still eligible at fold time with probability ``p_leak`` (0 by default: the
    paper's summary keeps "supported results and warnings"; ``p_leak_rider`` for poison
    crafted to ride into summaries). Its call costs
    ``summariser_base_tokens`` + the branch's tokens.

    Reasoner: at a critical step, each poisoned memory in context (any, or with
    ``persuade_scope = "topic"`` only one that concerns the subtask) compromises it
    with probability persuasiveness · ``p_persuade``
    (· ``p_persuade_vs_evidence`` instead when the clean evidence is in context); a
    compromised step gives a wrong answer with probability ``p_misled`` (the poison may
    sway the reasoning without changing the result). An answer is correct when what it
    needs is in context (else it is guessed right with ``p_guess``), it is not misled,
    and a context-dilution draw succeeds: P(use) = ``p_use_max`` · T½ / (T½ + T) with
    T½ = ``dilution_tokens`` and T the memory tokens in context.

    Every prompt costs ``base_tokens`` + the active path + the context + the observation
    just made (when the selector did not already put it in); tree-structured contexts add
    ``struct_tokens`` per serialised memory. The observation just made can carry the
    subtask's evidence (docs/world.md: evidence "in context (or was just observed)"); with
    ``obs_in_context`` (default) the reasoner reads it like a memory in context, so a
    poisoned observation can also persuade; off, only selected memories can.
    A fold summary keeps its branch's failure warnings, ``warning_tokens`` each.

    Simulated latency: every LLM call costs ``call_latency_ms`` plus ``token_latency_ms``
    per prompt token (reported per prompt step as ``latency_ms``).
    """

    selector_noise: float = knob(0.15, lo=0.0, hi=10.0,
        doc="s.d. of the selector's noise on apparent relevance (Irwin-Hall ≈ normal)")
    poison_boost: float = knob(0.10, lo=-1.0, hi=1.0,
        doc="apparent-relevance boost of injected poison in the selector's utility")
    w_u: float = knob(0.50, lo=0.0, hi=10.0,
        doc="weight of the retention score u in the selector's utility (policies with scores)")
    w_b: float = knob(0.30, lo=0.0, hi=10.0,
        doc="weight of the branch priority U_b in the selector's utility (policies with scores)")
    top_k: int = knob(0, doc="the selector keeps at most top_k memories (0 = no cap)")
    c_sum: float = knob(0.30, lo=0.0, hi=1.0,
        doc="a fold summary has ceil(c_sum · branch tokens) tokens")
    p_leak: float = knob(0.0, lo=0.0, hi=1.0,
        doc="probability that an eligible poisoned memory leaks into its fold summary (0: "
            "the paper's summary keeps 'supported results and warnings', A.4)")
    p_leak_rider: float = knob(0.90, lo=0.0, hi=1.0,
        doc="leak probability of summary-riding poison (kind 'summary')")
    p_persuade: float = knob(0.80, lo=0.0, hi=1.0,
        doc="probability that poison in context compromises a critical step (x persuasiveness)")
    p_persuade_vs_evidence: float = knob(0.30, lo=0.0, hi=1.0,
        doc="the same when the clean evidence is also in context")
    p_guess: float = knob(0.10, lo=0.0, hi=1.0,
        doc="probability of answering right without the needed evidence")
    p_use_max: float = knob(0.95, lo=0.0, hi=1.0,
        doc="context-dilution curve: P(use) = p_use_max · T½ / (T½ + T)")
    dilution_tokens: float = knob(4000.0, lo=0.0, hi=1e9, lo_open=True,
        doc="context-dilution half-point T½ in memory tokens")
    base_tokens: int = knob(100,
        doc="fixed prompt tokens of every LLM call (query, tools, instructions)")
    selector_base_tokens: int = knob(50, doc="fixed tokens of a selector call")
    selector_read_fraction: float = knob(1.0, lo=0.0, hi=1.0,
        doc="share of each candidate's tokens the selector call reads (1: every candidate "
            "in full, the paper's LLM-based relevance selector, App. A.2; below 1: a "
            "compact index, the previous rule)")
    summariser_base_tokens: int = knob(50,
        doc="fixed tokens of a summariser call (plus the branch's tokens)")
    struct_tokens: int = knob(4, doc="tokens per serialised memory in tree-structured contexts")
    p_misled: float = knob(1.0, lo=0.0, hi=1.0,
        doc="probability that a compromised step is misled: its answer is wrong")
    obs_in_context: bool = knob(True,
        doc="the reasoner reads the observation just made (a poisoned one can persuade)")
    # A summary keeps one warning per failed action: bounded so its int32 token size
    # cannot overflow (memories per trajectory × 1,000 stays under 2^31 − 2^30).
    warning_tokens: int = knob(0, hi=1000, doc="tokens each failure warning adds to a fold summary")
    selector_rule: str = knob("choose", choices=SELECTOR_RULES,
        doc="``choose``: the selector includes a candidate it judges relevant (utility, score "
            "terms counted from ½, >= select_threshold), best first, B the ceiling (the "
            "paper's Γ_sel, §2.1); ``fill``: the best that fit until B is full (the previous "
            "rule)")
    select_threshold: float = knob(0.45, lo=-10.0, hi=10.0,
        doc="the selector's relevance judgement under selector_rule = choose: a candidate "
            "enters when its judged utility reaches it (default: about halfway between the "
            "default world's relevance of a memory of the step's own subtask, 0.7, and of "
            "another's, 0.21; paper_poisoning fits its own)")
    branch_retrieval: str = knob("whole", choices=BRANCH_RETRIEVAL_RULES,
        doc="A3 (no semantic selection): ``whole`` retrieves every eligible branch whole, by "
            "priority, with no selector to stop it (the paper's 'whole-branch retrieval'); "
            "``fit``: only the branches that fit in B (the previous rule)")
    branch_folded: str = knob("nodes", choices=BRANCH_FOLDED_RULES,
        doc="what A3's whole-branch retrieval reaches of a folded, non-obsolete branch, and "
            "so what its IP counts: ``nodes``: the branch's own memories, replayed (the "
            "paper: whole-branch retrieval 'reintroduces irrelevant or poisoned "
            "information'); ``summary``: only its fold summary (the previous rule); "
            "``both``: the memories and the summary")
    persuade_scope: str = knob("any", choices=PERSUADE_SCOPES,
        doc="which poisoned memory in context can compromise a critical step: ``any`` (the "
            "paper's ASR: steps 'compromised by poisoned memory') or ``topic``: only poison "
            "of the step's own subtask (the previous rule)")
    ip_rule: str = knob("own", choices=IP_RULES,
        doc="IP's P_r (Eq. 10): ``own``: an injected poison that itself remains eligible; "
            "``carried``: also one an eligible summary absorbed (the previous rule)")
    call_latency_ms: float = knob(400.0, lo=0.0, hi=1e6,
        doc="simulated latency of one LLM call, ms")
    token_latency_ms: float = knob(0.05, lo=0.0, hi=1e3,
        doc="simulated latency per prompt token, ms")

    def __post_init__(self) -> None:
        check_knobs("Stubs", self)

    def pack(self) -> Any:
        """The knobs as the kernels read them (`PackedStubs`: ``st.p_leak``, ...)."""
        return pack_values(self, PackedStubs)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> Stubs:
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - names)
        if unknown:
            fail("Stubs", unknown[0], values[unknown[0]], "one of " + ", ".join(sorted(names)))
        return cls(**values)



PackedStubs = packed_type(Stubs)
