"""Stubs fitted to a real agent's logs: which stub parameters make a log most likely?

The format and the method are in docs/stub_logs.md.

What it answers: given a JSON Lines log of what an agent's language model actually chose
and answered (its selections, its critical-step answers, its fold summaries), which
values of wmtsim's stub parameters (`wmtsim.core.stubs.Stubs`: the selector's
``select_threshold``, ``selector_noise``, ``poison_boost``, ``w_u``, ``w_b``; the
reasoner's ``p_persuade``, ``p_persuade_vs_evidence``, ``p_misled``, ``p_guess``,
``p_use_max``, ``dilution_tokens``; the summariser's ``p_leak``, ``p_leak_rider``) make
that log most likely, how sure we are (95% profile-likelihood intervals), which of them
the log does not identify, and whether the stub family describes the log at all
(calibration by decile).

The door is `wmtsim.studies.stub_fit.fit` (`fit_log`, `write_fit`). One module per
concept:

* `log` — the log format and its streaming, validating reader (`read_log`);
* `likelihoods` — the stub family's likelihood, one block per role, as equations;
* `fit` — maximum likelihood, profile intervals, identification, the ``[stubs]`` TOML;
* `goodness` — observed vs predicted rates by decile, the misfit test, the chart;
* `simulate` — logs drawn from wmtsim's own stubs at known parameters (recovery).

Door: `wmtsim.studies.stub_fit.fit` (`fit_log`, `write_fit`).
CLI: `wmtsim fit-stubs`, `wmtsim simulate-log`.
Dashboard: Stubs fitted to a log.
"""
