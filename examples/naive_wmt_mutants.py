"""Seeded mutations of ``examples/naive_wmt.py``: each breaks one rule of the math.

``tests/conformance/test_mutants.py`` checks that the conformance kit catches every one
and shrinks it to a trace of at most 12 lines.
"""

from __future__ import annotations

from naive_wmt import Memory, NaiveWMT


class MissCountOffByOne(NaiveWMT):
    """Eq. 4 reads the miss count before Eq. 3 increments it (ρ^min(m−1, M))."""

    def miss(self, n: Memory) -> None:
        n.u = min(1.0, max(0.0, n.u * self.decay(n)))
        n.m = self.p["global_miss_count"] if n.kind == "global" else n.m + 1


class UncappedDecay(NaiveWMT):
    """ρ^m instead of ρ^min(m, M): the cap M is ignored."""

    def decay(self, n: Memory) -> float:
        return self.p["rho_g"] if n.kind == "global" else self.p["rho"] ** n.m


class SuppressAtThreshold(NaiveWMT):
    """Eq. 7 with ≤ instead of <: a branch exactly at τ_obs is suppressed."""

    def suppressed(self, u_b: float) -> bool:
        return u_b <= self.p["tau_obs"]


class FoldLeavesChildrenEligible(NaiveWMT):
    """A fold that hides nothing: the folded branch's nodes stay candidates."""

    def hidden_by_fold(self, i: str) -> bool:
        return False


class GlobalDecaysByRho(NaiveWMT):
    """Global memories decay by ρ^min(m, M) like the others instead of by ρ_G."""

    def decay(self, n: Memory) -> float:
        return self.p["rho"] ** min(n.m, self.p["M"])


class SelectionKeepsMissCount(NaiveWMT):
    """Eq. 3 without the reset: a selected memory keeps its miss count."""

    def on_select(self, ev: dict) -> None:  # type: ignore[type-arg]
        kept = {i: n.m for i, n in self.nodes_.items()}
        super().on_select(ev)
        for i in ev["selected"]:
            self.nodes_[i].m = kept[i]


class ReopenForgetsSummary(NaiveWMT):
    """A reopened branch's summary leaves the pool."""

    def eligible(self, i: str, path: set[str]) -> bool:
        n = self.nodes_[i]
        if n.kind == "summary" and n.parent and self.nodes_[n.parent].state != "folded":
            return False
        return super().eligible(i, path)


MUTANTS = (MissCountOffByOne, UncappedDecay, SuppressAtThreshold, FoldLeavesChildrenEligible,
           GlobalDecaysByRho, SelectionKeepsMissCount, ReopenForgetsSummary)
