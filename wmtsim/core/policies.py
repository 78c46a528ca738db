"""The memory configurations of docs/model.md §7, each a set of switches over one engine.

==========================  ====  ======  ==========  ====  ===========  =========
name                        tree  scores  selection   fold  lifecycle    supersede
==========================  ====  ======  ==========  ====  ===========  =========
no_memory                   –     –       none        –     –            –
linear                      –     –       everything  –     –            –
tree                        yes   –       everything  –     –            –
tree_selection              yes   –       items       –     –            –
tree_summary                yes   –       everything  yes   –            –
tree_selection_summary      yes   –       items       yes   –            –
wmt                         yes   yes     items       yes   yes          yes
a1_unweighted               yes   –       items       yes   reopen only  –
a2_no_controller            yes   yes     items       –     –            –
a3_no_semantic              yes   yes     branches    yes   yes          yes
==========================  ====  ======  ==========  ====  ===========  =========

* ``tree``: the context is serialised as a tree (``Stubs.struct_tokens`` per node).
* ``scores``: selection feedback (Eqs. 3–5) and branch priorities (Eq. 6) are maintained
  and the selector adds ``w_u·u_i + w_b·U_b`` to its utility.
* ``selection``: ``none`` (context = query + active path only), ``everything`` (the whole
  candidate pool, in order), ``items`` (the semantic selector, greedy under budget B),
  ``branches`` (whole branches ranked by priority, A3).
* ``fold``: completed subtasks fold into a summary node (summariser call).
* ``reopen``: a resumed folded subtask is reopened (its nodes re-enter the pool).
* ``lifecycle``: suppression (Eq. 7) marks low-priority branches obsolete.
* ``supersede``: the policy acts on the world's supersede/invalidate events (docs/model.md §3,
  "supersede / invalidate": the event marks the memory obsolete). Only Full WMT and A3
  keep the lifecycle controller that owns this operation: A1 keeps fold/reopen only and A2
  removes the memory controller (the paper's ablation design, Table 4); the unselective
  and selection-only configurations of Tables 1–3 have no lifecycle at all. A policy that
  does not act on the event still sees the clean observation that triggered it, like every
  other action. Of the field, only the two whose design has a contradiction rule act on
  it: ``mem0`` (its DELETE of a contradicted memory) and ``traceretain_conflict`` (the
  TraceRetain article's conflict-resolution step, newer observation wins); for them the
  event removes the memory from their store (place ``deleted``). The other TraceRetain
  variants follow the article's default (keep conflicting memories side by side).

The policies of the field (docs/field.md) are configurations of the same engine too:
selection ``baseline`` hands retention, eviction and retrieval to `wmtsim.engine.field.dispatch`
(readable twin: `wmtsim.twins.field_reference`), chosen by ``family`` and its variant
switches; their knobs are `wmtsim.core.field_knobs.Baselines`. Each is declared, with
its rules as docs/field.md states them, in `wmtsim.core.field_policies.FIELD_ROWS`
(`FIELD_POLICIES` names them). Every selective one keeps its context memory within the
scenario's budget B.

**Families.** A policy's ``family`` is the code of a registered `Family` (`FAMILIES`):
WMT's own (`WMT`, declared here with its configurations) and the field's
(`wmtsim.core.field_policies`, where each field family's record and its policies' rows
and documentation are declared, once). A policy of an unregistered family is an error
(`family_of`), not a fall-through.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from wmtsim.core.field_knobs import Baselines
from wmtsim.core.field_policies import (
    EVICT_LRU,
    FIELD_FAMILIES,
    FIELD_ROWS,
    SHARED,
    THRESHOLD_Z,
    Family,
    FieldPolicy,
    ItemCap,
)
from wmtsim.core.packing import pack_values, packed_type

SEL_NONE = 0
SEL_EVERYTHING = 1
SEL_ITEMS = 2
SEL_BRANCHES = 3
SEL_BASELINE = 4  # a policy of the field (docs/field.md), run by `wmtsim.engine.field.dispatch`

# ------------------------------------------------------------------ the families

WMT = Family(
    code=0, name="wmt", label="WMT's configurations", knobs=(),
    item_cap=ItemCap(SHARED), signal=None,
    engine="wmtsim.engine.agent._prompt_step", twin="wmtsim.twins.reference.MemoryTree")
FAMILIES: tuple[Family, ...] = (WMT, *FIELD_FAMILIES)


def check_families(families: tuple[Family, ...]) -> None:
    """A registry's rules: codes 0, 1, ... in order (the kernels compare them), names
    unique, every knob a `Baselines` field, and every field family with its parity row."""
    known = {f.name for f in fields(Baselines)}
    names = [f.name for f in families]
    if len(set(names)) != len(names):
        raise ValueError(f"family names repeat: {names}")
    for i, fam in enumerate(families):
        if fam.code != i:
            raise ValueError(f"family {fam.name!r} has code {fam.code}; the registry's "
                             f"codes are 0, 1, ... in order (expected {i})")
        unknown = [k for k in fam.knobs if k not in known]
        caps = (fam.item_cap, *fam.variant_caps.values())
        unknown += [k for cap in caps for k in cap.knobs if k not in fam.knobs]
        if unknown:
            raise ValueError(f"family {fam.name!r} reads {unknown!r}, which are not "
                             "Baselines knobs of its own")
        if fam is not families[0] and fam.signal is None:
            raise ValueError(f"family {fam.name!r} declares no ranking signal (parity)")


check_families(FAMILIES)

# WMT's code as a plain int (the field's: `wmtsim.core.field_policies`, ``FAM_*``).
FAM_WMT = WMT.code


def family_of(code: int) -> Family:
    """The registered family of code ``code`` (a policy's ``family``); an unregistered
    code is an error, never a fall-through to some other family's rules."""
    if 0 <= code < len(FAMILIES):
        return FAMILIES[code]
    raise ValueError(f"policy family {code} is not registered; registered: "
                     + ", ".join(f"{f.code} ({f.name})" for f in FAMILIES))


# ------------------------------------------------------------------ the configurations

# A mechanism switch of WMT's engine (the table above): the switches attribution moves
# one at a time (`wmtsim.studies.attribution.attribution.switch_names`); every other field is not
# one.
SWITCH = {"switch": True}


@dataclass(frozen=True, kw_only=True)
class Policy:
    """One configuration, built by keyword; its fields in this order are the packed
    switches the kernels read (`PolicySwitches`)."""

    name: str
    label: str
    tree: bool = field(default=False, metadata=SWITCH)
    scores: bool = field(default=False, metadata=SWITCH)
    selection: int = field(metadata=SWITCH)
    fold: bool = field(default=False, metadata=SWITCH)
    reopen: bool = field(default=False, metadata=SWITCH)
    lifecycle: bool = field(default=False, metadata=SWITCH)
    family: int = WMT.code  # a registered family's code (`FAMILIES`)
    variant: int = 0  # GA: 1 = public code; MemoryBank: MB_*; windows: 1 = summary
    eviction: int = EVICT_LRU
    threshold: int = THRESHOLD_Z
    cluster: bool = False
    # acts on the world's supersede/invalidate events
    supersede: bool = field(default=False, metadata=SWITCH)

    def pack(self) -> Any:
        """The switches as the kernels read them (a `PolicySwitches` record:
        ``sw.scores``, ...): every field but the name and label, as int64."""
        return pack_values(self, PolicySwitches)


PolicySwitches = packed_type(Policy, scalar=np.int64)


def _field(row: FieldPolicy) -> Policy:
    """The configuration of a field policy's row (`wmtsim.core.field_policies.FIELD_ROWS`):
    no tree, no scores, no fold; `wmtsim.engine.field.dispatch` selects."""
    return Policy(name=row.name, label=row.label, selection=SEL_BASELINE,
                  family=row.family.code, variant=row.variant, eviction=row.eviction,
                  threshold=row.threshold, cluster=row.cluster, supersede=row.supersede)


POLICIES: dict[str, Policy] = {
    p.name: p
    for p in (
        Policy(name="no_memory", label="No Memory", selection=SEL_NONE),
        Policy(name="linear", label="Linear History", selection=SEL_EVERYTHING),
        Policy(name="tree", label="Tree Memory", tree=True, selection=SEL_EVERYTHING),
        Policy(name="tree_selection", label="Tree + Selection", tree=True,
               selection=SEL_ITEMS),
        Policy(name="tree_summary", label="Tree + Summary", tree=True,
               selection=SEL_EVERYTHING, fold=True),
        Policy(name="tree_selection_summary", label="Tree + Selection + Summary", tree=True,
               selection=SEL_ITEMS, fold=True),
        Policy(name="wmt", label="Full WMT", tree=True, scores=True, selection=SEL_ITEMS,
               fold=True, reopen=True, lifecycle=True, supersede=True),
        Policy(name="a1_unweighted", label="A1 Unweighted Tree", tree=True,
               selection=SEL_ITEMS, fold=True, reopen=True),
        Policy(name="a2_no_controller", label="A2 No Memory Controller", tree=True,
               scores=True, selection=SEL_ITEMS),
        Policy(name="a3_no_semantic", label="A3 No Semantic Retrieval", tree=True,
               scores=True, selection=SEL_BRANCHES, fold=True, reopen=True, lifecycle=True,
               supersede=True),
        # The field (docs/field.md), declared in `wmtsim.core.field_policies`.
        *(_field(row) for row in FIELD_ROWS),
    )
}

for _p in POLICIES.values():
    family_of(_p.family)  # every row's family is registered

FIELD_POLICIES = tuple(name for name, p in POLICIES.items() if p.family != WMT.code)

TABLE4_POLICIES = ("linear", "a1_unweighted", "a2_no_controller", "a3_no_semantic", "wmt")
TABLE123_POLICIES = ("no_memory", "linear", "tree", "tree_selection", "tree_summary",
                     "tree_selection_summary", "wmt")


def get_policy(name: str | Policy) -> Policy:
    """The registered configuration ``name`` (a `Policy` is passed through unchanged, so
    studies can run configurations built with `dataclasses.replace`)."""
    if isinstance(name, Policy):
        return name
    try:
        return POLICIES[name]
    except KeyError:
        from wmtsim.core.formatting import did_you_mean

        raise ValueError(
            f"policy={name!r} is unknown{did_you_mean(name, POLICIES)}; allowed: "
            f"{', '.join(POLICIES)}"
        ) from None
