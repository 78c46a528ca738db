"""The conformance kit: does your implementation of WMT's scoring agree with ours?

Golden ``expect`` lines for any trace (`expect`), the shared
random-trace generator (`generate`), the shipped corpus that exercises every named rule
of the math (`corpus`), and the driver that replays corpus and Hypothesis streams against a
user's implementation and shrinks any disagreement to a minimal trace (`runner`).

docs/conformance.md is the user's guide. This layer sits above the engine and the
readable twins and imports both; the command line and `wmtsim.testing` import it.

Door: `wmtsim.conformance.runner` (`run_conformance`).
CLI: `wmtsim expect`, `wmtsim conformance`.
"""
