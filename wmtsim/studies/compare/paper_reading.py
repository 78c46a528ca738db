"""What the paper's own Table 4 rows imply about success under poisoning.

The paper's Appendix A.1 defines the two metrics separately: "ASR measures the proportion
of critical reasoning steps compromised by poisoned memory" and "TSR is the proportion of
evaluated tasks successfully completed under adversarial memory contamination". Nothing
there makes a compromised step a failed task. The simplest reading that the five rows can
be held against has two parameters, shared by every configuration:

    TSR_c = s_clean · (1 − ASR_c) + s_compromised · ASR_c

with ``s_clean`` = P(success | no compromise) and ``s_compromised`` = P(success |
compromised), ASR standing in for the chance that a task's deciding step was compromised.
`two_parameter_reading` fits it by weighted least squares, each row weighted by the
binomial variance of a TSR measured on the paper's corpus (100 scenarios), and reports the
parameters with standard errors, every row's residual and how the residuals compare with
that sampling noise (a χ² on 5 − 2 degrees of freedom).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from wmtsim.core.policies import POLICIES

CORPUS = 100  # scenarios in the paper's poisoning corpus (Appendix A.3)


@dataclass(frozen=True)
class Reading:
    """The fitted reading: parameters, their standard errors, and one row per config."""

    s_clean: float
    s_compromised: float
    se_clean: float
    se_compromised: float
    rows: tuple[dict[str, float | str], ...]  # policy, asr, tsr, predicted, residual, sd
    chi2: float  # Σ (residual / sd)², sd the binomial sampling SD of a 100-task TSR
    dof: int
    p_chi2_below: float  # P(χ²_dof ≤ chi2): small means tighter than sampling noise

    @property
    def max_abs_residual(self) -> float:
        return max(abs(float(r["residual"])) for r in self.rows)


def two_parameter_reading(table: dict[str, dict[str, float]], corpus: int = CORPUS,
                          iterations: int = 20) -> Reading:
    """Fit TSR = s_clean·(1 − ASR) + s_compromised·ASR to Table 4's (ASR, TSR) rows.

    ``table``: policy -> metric -> value (`wmtsim.studies.compare.report.paper_table4`).
    Weighted least squares, iterated so that each row's weight is the inverse of the
    binomial variance of its predicted TSR over ``corpus`` tasks:
    (s_clean(1 − s_clean)(1 − ASR) + s_compromised(1 − s_compromised)·ASR) / corpus.
    """
    from scipy import stats

    policies = tuple(table)
    asr = np.array([table[p]["asr"] for p in policies])
    tsr = np.array([table[p]["tsr"] for p in policies])
    x = np.column_stack([1.0 - asr, asr])
    beta = np.linalg.lstsq(x, tsr, rcond=None)[0]
    for _ in range(iterations):
        var = _variance(beta, asr, corpus)
        w = 1.0 / var
        beta = np.linalg.solve(x.T @ (x * w[:, None]), x.T @ (w * tsr))
    var = _variance(beta, asr, corpus)
    cov = np.linalg.inv(x.T @ (x / var[:, None]))
    pred = x @ beta
    resid = tsr - pred
    chi2 = float(np.sum(resid ** 2 / var))
    dof = len(policies) - 2
    rows = tuple({"policy": p, "asr": float(a), "tsr": float(t), "predicted": float(q),
                  "residual": float(r), "sd": float(np.sqrt(v))}
                 for p, a, t, q, r, v in zip(policies, asr, tsr, pred, resid, var,
                                             strict=True))
    return Reading(float(beta[0]), float(beta[1]), float(np.sqrt(cov[0, 0])),
                   float(np.sqrt(cov[1, 1])), rows, chi2, dof,
                   float(stats.chi2.cdf(chi2, dof)))


def _variance(beta: np.ndarray, asr: np.ndarray, corpus: int) -> np.ndarray:
    b = np.clip(beta, 1e-3, 1 - 1e-3)
    return (b[0] * (1 - b[0]) * (1 - asr) + b[1] * (1 - b[1]) * asr) / corpus


QUOTES = (
    ("ASR", "ASR measures the proportion of critical reasoning steps compromised by "
            "poisoned memory, with lower ASR indicating greater robustness."),
    ("TSR", "TSR is the proportion of evaluated tasks successfully completed under "
            "adversarial memory contamination, with higher TSR indicating more successful "
            "tasks."),
)
"""The paper's Appendix A.1 definitions, verbatim."""


def reading_markdown(r: Reading) -> str:
    """The reading as Markdown: the paper's words, the fit, one row per configuration."""
    lines = ["The paper's Appendix A.1 defines the two metrics separately:", ""]
    lines += [f"> {text}" for _, text in QUOTES[:1]] + [">"] + [
        f"> {text}" for _, text in QUOTES[1:]]
    lines += [
        "",
        "Nothing there makes a compromised step a failed task. Read with two parameters "
        "shared by every configuration, TSR = s_clean · (1 − ASR) + s_compromised · ASR "
        "(weighted least squares, each row weighted by the binomial variance of a TSR over "
        f"{CORPUS} tasks; `wmtsim.studies.compare.paper_reading`):",
        "",
        f"* P(success | no compromise) = **{r.s_clean:.3f}** ± {1.96 * r.se_clean:.3f}",
        f"* P(success | compromised) = **{r.s_compromised:.3f}** ± "
        f"{1.96 * r.se_compromised:.3f} (95%, sampling noise of a {CORPUS}-task corpus)",
        "",
        "| configuration | paper ASR | paper TSR | reading's TSR | residual | sampling SD |",
        "|---|---|---|---|---|---|",
    ]
    for row in r.rows:
        lines.append(f"| {POLICIES[str(row['policy'])].label} | {row['asr']:.3f} | "
                     f"{row['tsr']:.3f} | {row['predicted']:.3f} | "
                     f"{float(row['residual']):+.4f} | {row['sd']:.3f} |")
    lines += [
        "",
        f"All five rows lie within {r.max_abs_residual:.4f} of the reading. That is "
        f"closer than {CORPUS}-task sampling noise alone makes likely: χ² = {r.chi2:.3f} "
        f"on {r.dof} degrees of freedom, P(χ² ≤ that) = {r.p_chi2_below:.4f} if the five "
        "TSRs were independent draws. The paper reuses \"identical scenario structures "
        "and injected memories across configurations\" (Appendix A.3), so its rows share "
        "noise and the χ² overstates the surprise; the table alone cannot say more. "
        "wmtsim's world does not impose this reading: `stubs.p_misled` (a compromised "
        "step's answer is wrong with that probability) and the final-answer rule are "
        "fitted, and the simulated rows are compared with the paper's cell by cell.",
    ]
    return "\n".join(lines)
