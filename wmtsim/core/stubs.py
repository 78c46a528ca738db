"""Knobs of the three LLM stubs: selector, summariser, reasoner (SIMULATION.md).

The stubs' behaviour lives in `wmtsim.engine` (numba) and `wmtsim.simulator` (readable
twin); this module only declares and validates their parameters.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np

from wmtsim.core.validation import check_int, check_real, fail


@dataclass(frozen=True)
class Stubs:
    """Parameters of the stubbed LLM roles, with documented defaults.

    Selector (Γ_sel): utility = relevance to the current subtask + ``poison_boost`` for
    injected poison + ``selector_noise`` · ε (ε ≈ N(0, 1), an Irwin–Hall sum of four
    uniforms) + ``w_u``·u + ``w_b``·U_b for policies with retention scores; greedy by
    utility under the token budget B, at most ``top_k`` items (0 = no cap).
    Its call reads a compact index of every candidate: ``selector_base_tokens`` +
    ``selector_read_fraction`` · candidate tokens (+ ``struct_tokens`` per candidate).

    Summariser: a fold summary has ceil(``c_sum`` · branch tokens) tokens, keeps the
    branch's evidence, and absorbs each poisoned memory still eligible at fold time with
    probability ``p_leak`` (``p_leak_rider`` for summary-riding poison). Its call costs
    ``summariser_base_tokens`` + the branch's tokens.

    Reasoner: at a critical step, each poisoned memory in context that concerns the
    subtask compromises it with probability persuasiveness · ``p_persuade``
    (· ``p_persuade_vs_evidence`` instead when the clean evidence is in context); a
    compromised step gives a wrong answer with probability ``p_misled`` (the poison may
    sway the reasoning without changing the result). An answer is correct when what it
    needs is in context (else it is guessed right with ``p_guess``), it is not misled,
    and a context-dilution draw succeeds: P(use) = ``p_use_max`` · T½ / (T½ + T) with
    T½ = ``dilution_tokens`` and T the memory tokens in context.

    Every prompt costs ``base_tokens`` + the active path + the context + the observation
    just made (when the selector did not already put it in); tree-structured contexts add
    ``struct_tokens`` per serialised memory. The observation just made can carry the
    subtask's evidence (SIMULATION.md: evidence "in context (or was just observed)"); with
    ``obs_in_context`` (default) the reasoner reads it like a memory in context, so a
    poisoned observation can also persuade; off, only selected memories can.
    A fold summary keeps its branch's failure warnings, ``warning_tokens`` each.

    Simulated latency: every LLM call costs ``call_latency_ms`` plus ``token_latency_ms``
    per prompt token (reported per prompt step as ``latency_ms``).
    """

    selector_noise: float = 0.15
    poison_boost: float = 0.10
    w_u: float = 0.50
    w_b: float = 0.30
    top_k: int = 0
    c_sum: float = 0.30
    p_leak: float = 0.30
    p_leak_rider: float = 0.90
    p_persuade: float = 0.80
    p_persuade_vs_evidence: float = 0.30
    p_guess: float = 0.10
    p_use_max: float = 0.95
    dilution_tokens: float = 4000.0
    base_tokens: int = 100
    selector_base_tokens: int = 50
    selector_read_fraction: float = 0.25
    summariser_base_tokens: int = 50
    struct_tokens: int = 4
    p_misled: float = 1.0
    obs_in_context: bool = True
    warning_tokens: int = 0
    call_latency_ms: float = 400.0
    token_latency_ms: float = 0.05

    def __post_init__(self) -> None:
        owner = "Stubs"
        check_real(owner, "selector_noise", self.selector_noise, 0.0, 10.0)
        check_real(owner, "poison_boost", self.poison_boost, -1.0, 1.0)
        check_real(owner, "w_u", self.w_u, 0.0, 10.0)
        check_real(owner, "w_b", self.w_b, 0.0, 10.0)
        check_int(owner, "top_k", self.top_k, 0)
        check_real(owner, "c_sum", self.c_sum, 0.0, 1.0)
        for name in ("p_leak", "p_leak_rider", "p_persuade", "p_persuade_vs_evidence",
                     "p_guess", "p_use_max", "p_misled"):
            check_real(owner, name, getattr(self, name), 0.0, 1.0)
        check_real(owner, "selector_read_fraction", self.selector_read_fraction, 0.0, 1.0)
        check_real(owner, "dilution_tokens", self.dilution_tokens, 0.0, 1e9, lo_open=True)
        for name in ("base_tokens", "selector_base_tokens", "summariser_base_tokens",
                     "struct_tokens"):
            check_int(owner, name, getattr(self, name), 0)
        # A summary keeps one warning per failed action: bounded so its int32 token size
        # cannot overflow (memories per trajectory × 1,000 stays under 2^31 − 2^30).
        check_int(owner, "warning_tokens", self.warning_tokens, 0, 1000)
        if not isinstance(self.obs_in_context, bool):
            fail(owner, "obs_in_context", self.obs_in_context, "true or false")
        check_real(owner, "call_latency_ms", self.call_latency_ms, 0.0, 1e6)
        check_real(owner, "token_latency_ms", self.token_latency_ms, 0.0, 1e3)

    def pack(self) -> np.ndarray:
        return np.array([getattr(self, f.name) for f in fields(self)], dtype=np.float64)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> Stubs:
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - names)
        if unknown:
            fail("Stubs", unknown[0], values[unknown[0]], "one of " + ", ".join(sorted(names)))
        return cls(**values)


(ST_SELECTOR_NOISE, ST_POISON_BOOST, ST_W_U, ST_W_B, ST_TOP_K, ST_C_SUM, ST_P_LEAK,
 ST_P_LEAK_RIDER, ST_P_PERSUADE, ST_P_PERSUADE_VS_EVIDENCE, ST_P_GUESS, ST_P_USE_MAX,
 ST_DILUTION_TOKENS, ST_BASE_TOKENS, ST_SELECTOR_BASE_TOKENS, ST_SELECTOR_READ_FRACTION,
 ST_SUMMARISER_BASE_TOKENS, ST_STRUCT_TOKENS, ST_P_MISLED, ST_OBS_IN_CONTEXT, ST_WARNING_TOKENS,
 ST_CALL_LATENCY_MS, ST_TOKEN_LATENCY_MS) = range(23)
