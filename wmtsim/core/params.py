"""The constants of the Weighted Memory Tree (docs/model.md §2–3).

`Params` is the single place where a WMT constant lives. The numba kernels cannot take a
dataclass, so `Params.pack()` gives a numpy record of type `PackedParams` (`wmtsim.core.packing`:
one float64 per field, in field order); kernels read `p.rho` and never hard-code a value.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from wmtsim.core.knobs import check_knobs, knob
from wmtsim.core.packing import pack_values, packed_type

_NON_NEGATIVE = "[0, inf), finite"  # the branch coefficients' allowed text


@dataclass(frozen=True)
class Params:
    """Every WMT constant, with docs/model.md's defaults.

    Scores (Eq. 2 and the initial scores of §2) lie in [0, 1]; decay factors ρ and ρ_G
    (Eq. 4) lie in (0, 1]; the decay cap ``M`` is an integer ≥ 1; the branch coefficients
    α, β, γ, δ (Eq. 6) are ≥ 0; ``tau_obs`` is the suppression threshold of Eq. 7;
    ``budget`` is the selector's token budget ``B``.

    Two toolkit decisions that docs/model.md leaves implicit are parameters too:

    * ``event_resets_m`` — whether an outcome event (Eq. 2) also resets the miss count
      ``m`` to 0. Default False: Eq. 3 changes ``m`` only on selection feedback (it counts
      consecutive *missed selections*); Eq. 15's "no selection or event between" limits
      where the closed form applies, it does not reset the count. True is the other
      reading (Eq. 15 then counts misses from the event).
    * ``global_miss_count`` — the miss count stored on a global memory after a missed
      selection. docs/model.md: "the miss count is reset before each decay, so their effective
      count is 1". Default 1.
    """

    u_success: float = knob(0.75, lo=0.0, hi=1.0, doc="Eq. 2: score set by a successful outcome")
    u_failure: float = knob(0.30, lo=0.0, hi=1.0,
        doc="Eq. 2: score set by a failed outcome (below u_success)")
    u_init_root: float = knob(1.00, lo=0.0, hi=1.0,
        doc="initial score of the root query (docs/model.md §2)")
    u_init_task: float = knob(0.90, lo=0.0, hi=1.0, doc="initial score of a task node")
    u_init_action: float = knob(0.50, lo=0.0, hi=1.0,
        doc="initial score of an action before its outcome")
    u_init_global: float = knob(0.60, lo=0.0, hi=1.0, doc="initial score of a global memory")
    u_init_summary: float = knob(0.80, lo=0.0, hi=1.0, doc="initial score of a fold summary")
    rho: float = knob(0.90, lo=0.0, hi=1.0, lo_open=True,
        doc="Eq. 4: decay factor per missed selection")
    rho_g: float = knob(0.98, lo=0.0, hi=1.0, lo_open=True,
        doc="Eq. 4: decay factor of a global memory")
    M: int = knob(3, lo=1, doc="Eq. 4: cap on the decay exponent's miss count")
    alpha: float = knob(0.60, lo=0.0, allowed=_NON_NEGATIVE,
        doc="Eq. 6: weight of the branch's maximum score")
    beta: float = knob(0.30, lo=0.0, allowed=_NON_NEGATIVE,
        doc="Eq. 6: weight of the branch's mean score")
    gamma: float = knob(0.20, lo=0.0, allowed=_NON_NEGATIVE,
        doc="Eq. 6: penalty per failed-action fraction")
    delta: float = knob(0.20, lo=0.0, allowed=_NON_NEGATIVE,
        doc="Eq. 6: penalty per obsolete-node fraction")
    tau_obs: float = knob(0.10, allowed="a finite number",
        doc="Eq. 7: a branch with U_b below it becomes obsolete")
    budget: int = knob(1024, lo=1, doc="the selector's token budget B")
    event_resets_m: bool = knob(False,
        doc="an outcome event also resets m (default: Eq. 3, it does not)")
    global_miss_count: int = knob(1, doc="a global memory's stored miss count after a miss")
    promote_summaries: bool = knob(True,
        doc="conversation mode (world.tasks > 1): a finished task's summary becomes a global "
            "memory, in configurations that fold (docs/model.md §3)")

    def __post_init__(self) -> None:
        # Validate, and store plain Python numbers (numpy scalars from sweeps included).
        for name, value in check_knobs("Params", self).items():
            object.__setattr__(self, name, value)
        if not self.u_success > self.u_failure:
            raise ValueError(
                f"Params.u_success={self.u_success!r} must be greater than "
                f"u_failure={self.u_failure!r} (Eq. 2: success scores above failure)"
            )

    def pack(self) -> Any:
        """The parameters as the kernels read them (`PackedParams`: ``p.rho``, ...)."""
        return pack_values(self, PackedParams)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def with_(self, **changes: Any) -> Params:
        """A copy with some fields changed (validated like the constructor)."""
        unknown = sorted(set(changes) - {f.name for f in fields(self)})
        if unknown:
            raise ValueError(
                f"unknown parameter(s) {', '.join(unknown)}; allowed: "
                + ", ".join(f.name for f in fields(self))
            )
        return replace(self, **changes)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> Params:
        return cls().with_(**values)


PackedParams = packed_type(Params)
N_PARAMS = len(PackedParams.names or ())
