"""Trace replay: a JSON Lines trace of WMT events run through the kernels.

What it answers: the scores, selections, priorities and suppressions a real agent's
trace implies under the paper's equations, and whether its ``expect`` lines hold.
`events` reads and validates a trace, `replay` keeps the growable tree, `rules` holds the
rule switches a trace may set. The pure-Python oracle is `wmtsim.twins.reference`.

Door: `wmtsim.engine.trace.trace` (`run`, `replay`, `check`, `TraceError`).
CLI: `wmtsim replay`, `wmtsim check`, `wmtsim demo`.
Dashboard: Trace replay.
"""
