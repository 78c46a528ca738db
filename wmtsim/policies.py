"""The memory configurations of MODEL.md §7, each a set of switches over one engine.

==========================  ====  ======  ==========  ====  =========
name                        tree  scores  selection   fold  lifecycle
==========================  ====  ======  ==========  ====  =========
no_memory                   –     –       none        –     –
linear                      –     –       everything  –     –
tree                        yes   –       everything  –     –
tree_selection              yes   –       items       –     –
tree_summary                yes   –       everything  yes   –
tree_selection_summary      yes   –       items       yes   –
wmt                         yes   yes     items       yes   yes
a1_unweighted               yes   –       items       yes   reopen only
a2_no_controller            yes   yes     items       –     –
a3_no_semantic              yes   yes     branches    yes   yes
==========================  ====  ======  ==========  ====  =========

* ``tree``: the context is serialised as a tree (``Stubs.struct_tokens`` per node).
* ``scores``: selection feedback (Eqs. 3–5) and branch priorities (Eq. 6) are maintained
  and the selector adds ``w_u·u_i + w_b·U_b`` to its utility.
* ``selection``: ``none`` (context = query + active path only), ``everything`` (the whole
  candidate pool, in order), ``items`` (the semantic selector, greedy under budget B),
  ``branches`` (whole branches ranked by priority, A3).
* ``fold``: completed subtasks fold into a summary node (summariser call).
* ``reopen``: a resumed folded subtask is reopened (its nodes re-enter the pool).
* ``lifecycle``: suppression (Eq. 7) and supersession mark memories obsolete.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SEL_NONE = 0
SEL_EVERYTHING = 1
SEL_ITEMS = 2
SEL_BRANCHES = 3

# Slots of the packed switch vector.
(S_TREE, S_SCORES, S_SELECTION, S_FOLD, S_REOPEN, S_LIFECYCLE) = range(6)


@dataclass(frozen=True)
class Policy:
    name: str
    label: str
    tree: bool
    scores: bool
    selection: int
    fold: bool
    reopen: bool
    lifecycle: bool

    def pack(self) -> np.ndarray:
        return np.array([self.tree, self.scores, self.selection, self.fold, self.reopen,
                         self.lifecycle], dtype=np.int64)


POLICIES: dict[str, Policy] = {
    p.name: p
    for p in (
        Policy("no_memory", "No Memory", False, False, SEL_NONE, False, False, False),
        Policy("linear", "Linear History", False, False, SEL_EVERYTHING, False, False, False),
        Policy("tree", "Tree Memory", True, False, SEL_EVERYTHING, False, False, False),
        Policy("tree_selection", "Tree + Selection", True, False, SEL_ITEMS, False, False,
               False),
        Policy("tree_summary", "Tree + Summary", True, False, SEL_EVERYTHING, True, False,
               False),
        Policy("tree_selection_summary", "Tree + Selection + Summary", True, False, SEL_ITEMS,
               True, False, False),
        Policy("wmt", "Full WMT", True, True, SEL_ITEMS, True, True, True),
        Policy("a1_unweighted", "A1 Unweighted Tree", True, False, SEL_ITEMS, True, True,
               False),
        Policy("a2_no_controller", "A2 No Memory Controller", True, True, SEL_ITEMS, False,
               False, False),
        Policy("a3_no_semantic", "A3 No Semantic Retrieval", True, True, SEL_BRANCHES, True,
               True, True),
    )
}

TABLE4_POLICIES = ("linear", "a1_unweighted", "a2_no_controller", "a3_no_semantic", "wmt")
TABLE123_POLICIES = ("no_memory", "linear", "tree", "tree_selection", "tree_summary",
                     "tree_selection_summary", "wmt")


def get_policy(name: str) -> Policy:
    try:
        return POLICIES[name]
    except KeyError:
        raise ValueError(
            f"policy={name!r} is unknown; allowed: {', '.join(POLICIES)}"
        ) from None
