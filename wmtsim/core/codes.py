"""Integer codes for node kinds, lifecycle states and outcomes (docs/model.md §1).

The flat arrays store these codes; the readable reference and the trace format use the
names. Nodes are numbered in creation order, so a parent always has a smaller index than
its children — the kernels rely on that to walk a tree with one forward or backward pass.
"""

# Node kinds (docs/model.md §1).
ROOT = 0
TASK = 1
ACTION = 2
GLOBAL = 3
SUMMARY = 4
KIND_NAMES = ("root", "task", "action", "global", "summary")

# Lifecycle states z (docs/model.md §1, §3).
ACTIVE = 0
COMPLETED = 1
FOLDED = 2
OBSOLETE = 3
STATE_NAMES = ("active", "completed", "folded", "obsolete")

# Action outcomes (Eq. 2).
NO_OUTCOME = 0
SUCCESS = 1
FAILURE = 2
OUTCOME_NAMES = ("none", "success", "failure")

NO_PARENT = -1

# Draw identity of a summary: ``DRAW_SUMMARY`` + its task's world id (a world memory draws
# with its world id). Stub draws are keyed by memory identity, never by slot, so a world
# memory gets the same draws under every policy (common random numbers).
DRAW_SUMMARY = 1 << 32
