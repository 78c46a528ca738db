"""What every output folder's manifest records about how its numbers were made
(docs/statistics.md, "Provenance"): the seed, the trajectories, the bootstrap resamples,
the level alpha, the multiplicity correction and the command line.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

KEYS = ("seed", "n", "resamples", "alpha", "correction", "command_line")
"""The keys every output folder's manifest carries (None: not applicable, e.g. no
bootstrap, no test family)."""


def provenance(seed: Any, n: Any, resamples: int | None,
               alpha: float | None, correction: str | None,
               argv: Sequence[str] | None = None) -> dict[str, Any]:
    """The statistical provenance of a result: ``seed`` (of the trajectories; a list or
    mapping when a result has several), ``n`` (trajectories per configuration or point),
    ``resamples`` (bootstrap resamples of its intervals; None when it has none),
    ``alpha`` (two-sided level of its tests and intervals), ``correction`` (the
    multiplicity correction of its family: holm, bh, none) and ``command_line`` (the
    command line; default `wmtsim.core.output.command_line`, the same in every
    manifest)."""
    from wmtsim.core.output import command_line

    args = command_line() if argv is None else list(argv)
    if args:
        args[0] = args[0].rsplit("/", 1)[-1]  # the program's name, not where it lives
    return {"seed": seed, "n": n, "resamples": resamples, "alpha": alpha,
            "correction": correction, "command_line": args}
