"""The field's memory policies as kernels of the one engine (docs/field.md).

What it answers: for a policy of the field (TraceRetain, Generative Agents, MemoryBank,
MemGPT/Letta, windows and buffers, mem0), which memories are kept and which are put in
context at each prompt step. `dispatch` is the one dispatch point the step loop calls;
the rules live in `admission`, `forgetting`, `generative`, `letta` and `memorybank`,
their shared helpers in `common`. The readable twin is `wmtsim.twins.field_reference`.

Door: `wmtsim.engine.field.dispatch` (`_baseline_step`, `_baseline_retrieve`).
"""
