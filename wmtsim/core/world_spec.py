"""The synthetic world: agent trajectories generated from a world specification.

docs/world.md, "Trajectory generation". A trajectory is one query's execution: a root
query, subtasks run depth-first, actions with outcomes, token sizes, relevance and
evidence, distractors, global memories, resumed subtasks and scripted poison injections.
The world never depends on the memory policy: trajectory ``i`` is a pure function of
``(seed, world, i)`` (common random numbers), drawn with `wmtsim.core.rng` keyed by
``(seed, i, STEP_WORLD, counter, PURPOSE_WORLD)``.

A generated batch is a `World`: per-trajectory arrays of *world nodes* (static
properties) and a *script* of events the engine plays in order:

====================  =============================================================
``OP_GLOBAL w``       a global memory exists from the start (conversation mode)
``OP_TASK w``         subtask ``w`` starts: created under its parent and activated
``OP_ACTION w``       the agent acted: action ``w`` and its outcome are recorded, then
                      the prompt for the next decision is built (one prompt step)
``OP_SUPERSEDE w``    a later clean observation supersedes poisoned memory ``w``
``OP_REVISE w``       a later observation revises action ``w``'s outcome (Eq. 2 again)
``OP_COMPLETE w``     critical step: the subtask's answer (one prompt step), then the
                      subtask completes (fold, where the policy folds)
``OP_REOPEN w``       execution returns to completed subtask ``w`` (reopen + activate)
``OP_FINAL``          critical step: the final answer at the root (one prompt step)
``OP_PROMOTE w``      conversation mode: the task ends; ``w`` is the global memory its
                      summary becomes where the policy promotes (docs/world.md)
``OP_ROOT w``         conversation mode: the next task's root query ``w``
``OP_REINJECT w``     the attacker re-injects ``w``, a copy of the poison superseded by
                      the event just before, when that supersession took effect for
                      the policy (attack rule ``reinject``); played as ``OP_ACTION w``
====================  =============================================================
"""

from __future__ import annotations

import math
import numbers
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import numpy as np

from wmtsim.core.knobs import check_knobs, knob
from wmtsim.core.packing import pack_values, packed_type, slots
from wmtsim.core.subtask_counts import N_SUBTASKS_ALLOWED, subtask_distribution
from wmtsim.core.validation import fail

OP_GLOBAL = 0
OP_TASK = 1
OP_ACTION = 2
OP_SUPERSEDE = 3
OP_COMPLETE = 4
OP_REOPEN = 5
OP_FINAL = 6
OP_REVISE = 7
OP_PROMOTE = 8
OP_ROOT = 9
OP_REINJECT = 10
OP_NAMES = ("global", "task", "action", "supersede", "complete", "reopen", "final", "revise",
            "promote", "root", "reinject")


def max_prompt_steps(op: np.ndarray) -> int:
    """The most prompt steps a script of ``op`` rows (one per trajectory) can make: its
    ACTION, COMPLETE and FINAL events, and the REINJECT events a policy may play."""
    prompts = ((op == OP_ACTION) | (op == OP_COMPLETE) | (op == OP_FINAL)
               | (op == OP_REINJECT))
    return int(prompts.sum(axis=1).max()) if op.size else 0

SUPERSEDE_RULES = ("each", "first")
SUPERSEDE_EACH, SUPERSEDE_FIRST = range(2)

# What a resumed subtask's fold does in a configuration that folds but does not reopen
# (`WorldSpec.resume_folded`, docs/world.md "Trajectory generation").
RESUME_FOLDED_RULES = ("new", "unfold", "hidden")
RESUME_NEW, RESUME_UNFOLD, RESUME_HIDDEN = range(3)

POISON_KINDS = ("failed", "plausible", "global", "summary")
POISON_FAILED, POISON_PLAUSIBLE, POISON_GLOBAL, POISON_SUMMARY = range(4)

# Adaptive attack rules (`PoisonSpec.adaptive`, docs/attack.md): an injection that reacts
# to the run instead of landing where the script says.
ADAPTIVE_RULES = ("none", "after_evidence", "reinject")
ADAPT_NONE, ADAPT_AFTER_EVIDENCE, ADAPT_REINJECT = range(3)

NO_TOPIC = -1  # a global memory about nothing in particular; the root's topic

# Bounds checked when a spec is built, so that no count or size can overflow. Token sizes
# live in int32 arrays (world nodes and forest slots); a fold or running summary holds at
# most ceil(c_sum · its branch's tokens) <= the trajectory's total + 1 per summary, so
# keeping every trajectory's total under 2^30 (and its memories under MAX_NODES) keeps
# every stored size below 2^31 - 1 with room to spare. Sums over prompts are float64.
MAX_TOKENS = 2**30
MAX_NODES = 100_000
# The largest |z| the generator's Box-Muller normal can reach: its uniforms have 53 bits,
# so 1 - u >= 2^-53 and |z| <= sqrt(2 · 53 · ln 2) = 8.572. An action's token size is at
# most tokens_median · e^(Z_MAX · tokens_sigma), however unlikely that draw.
Z_MAX = math.sqrt(2 * 53 * math.log(2))


@dataclass(frozen=True)
class PoisonSpec:
    """One scripted poison injection (docs/world.md, "Scripted poison injections").

    Each knob's default, range and doc is its `knob` declaration.
    """

    kind: str = knob(choices=POISON_KINDS,
        doc='``failed`` (recorded as a failure, starts at u_failure), ``plausible`` (recorded as '
            'a success, starts at u_success — the hard case of paper A.4), ``global`` (a poisoned'
            ' global memory), ``summary`` (a plausible-looking observation crafted to ride into '
            "its branch's fold summary: low apparent relevance, leaks with "
            '``Stubs.p_leak_rider``).')
    subtask: int = knob(-1, lo=-1, hi=MAX_NODES,
        doc='index of the top-level subtask it targets, in execution order (taken modulo the '
            "trajectory's number of subtasks); -1 draws one at random.")
    position: int = knob(-1, lo=-1, hi=MAX_NODES,
        doc="position among that subtask's actions (0 = first; clipped to the end); -1 draws one "
            'at random.')
    count: int = knob(1, hi=1000, doc='how many copies of this injection each trajectory gets.')
    p_inject: float = knob(1.0, lo=0.0, hi=1.0,
        doc='probability that each copy is injected in a given trajectory.')
    apparent_relevance: float = knob(0.9, lo=0.0, hi=1.0,
        doc='how relevant it looks to the selector (poison is crafted to look relevant), in [0, '
            '1].')
    persuasiveness: float = knob(1.0, lo=0.0, hi=1.0,
        doc="multiplier in [0, 1] on the reasoner's persuasion probability.")
    p_supersede: float = knob(0.0, lo=0.0, hi=1.0,
        doc='detection probability: a later clean action of the same subtask detects and '
            'supersedes it (marks it obsolete, for policies that act on supersede events, '
            '`Policy.supersede`) with this probability, at each later clean action or at the '
            'first one only (`WorldSpec.supersede_rule`). No later clean action, no detection '
            '(unless `WorldSpec.supersede_review` is switched on).')
    tokens: int = knob(0, hi=MAX_TOKENS, doc="its token size; 0 draws it like a regular action's.")
    depth: int = knob(1, lo=1, hi=6,
        doc='1 targets the top-level subtask itself; ``d > 1`` a subtask nested ``d − 1`` levels '
            'below it: one child, drawn at random, of the first subtask at depth ``d − 1`` (in '
            'execution order) that has children. Not injected when the target has no subtask at '
            'that depth.')
    on_resume: bool = knob(False,
        doc='lands in the resumed visit of its top-level target (docs/world.md, ``p_resume``) '
            'instead of the first visit; not injected when the target is not resumed. Needs '
            '``depth = 1`` (only top-level subtasks are resumed).')

    adaptive: str = knob("none", choices=ADAPTIVE_RULES,
        doc='an adaptive attack rule (docs/attack.md): ``none`` lands where ``subtask`` and '
            '``position`` say; ``after_evidence`` waits for the subtask\'s evidence and lands '
            'right after the action that carries it (not injected in a visit that finds no '
            'evidence and follows none); ``reinject`` re-injects a fresh copy right after a '
            'supersession of it takes effect for the policy (once per injection).')

    def __post_init__(self) -> None:
        owner = "PoisonSpec"
        check_knobs(owner, self)
        if self.kind == "global" and self.adaptive != "none":
            fail(owner, "adaptive", self.adaptive,
                 "none for a global injection (it is not placed in a subtask)")
        if self.on_resume and self.depth != 1:
            fail(owner, "on_resume", self.on_resume,
                 "false when depth > 1 (only top-level subtasks are resumed)")
        if self.kind == "global" and (self.depth != 1 or self.on_resume):
            fail(owner, "depth" if self.depth != 1 else "on_resume",
                 self.depth if self.depth != 1 else self.on_resume,
                 "the defaults for a global injection (it is not placed in a subtask)")


@dataclass(frozen=True)
class WorldSpec:
    """The synthetic world's knobs, with documented defaults (docs/world.md).

    Ranges ``(min, max)`` are drawn uniformly over the integers, both ends included.

    Each knob's default, range and doc is its `knob` declaration.
    """

    n_subtasks: tuple[int, int] = knob((2, 4), lo=1, hi=MAX_NODES, allowed=N_SUBTASKS_ALLOWED,
        doc='top-level subtasks per query: fixed (``3``), a range drawn uniformly '
            '(``[2, 4]``), or a distribution: ``{values = [2, 3, 5], p = [0.3, 0.5, 0.2]}`` '
            'or ``{dist = "poisson", mean = 3.0, min = 1, max = 8}`` (a Poisson law cut to '
            '[min, max] and renormalised). Held as its support ``[min, max]`` with '
            '``n_subtasks_p``, the probabilities of min, min + 1, ..., max (empty: uniform).')
    n_subtasks_p: tuple[float, ...] = ()  # the distribution of n_subtasks (empty: uniform)
    max_depth: int = knob(1, lo=1, hi=6,
        doc='nesting depth of subtasks (1 = subtasks directly under the query).')
    p_nested: float = knob(0.0, lo=0.0, hi=1.0,
        doc='probability that a subtask below ``max_depth`` has child subtasks.')
    nested_subtasks: tuple[int, int] = knob((1, 2), lo=1, hi=MAX_NODES,
        doc='how many child subtasks a nesting subtask has.')
    n_actions: tuple[int, int] = knob((2, 5), hi=MAX_NODES,
        doc='actions (interaction steps) per subtask.')
    p_success: float = knob(0.8, lo=0.0, hi=1.0, doc='probability that an action succeeds.')
    p_evidence: float = knob(0.9, lo=0.0, hi=1.0,
        doc="probability that a subtask's evidence is found by one of its successful, non-"
            'distractor actions.')
    p_distractor: float = knob(0.2, lo=0.0, hi=1.0,
        doc='probability that an action is a distractor (relevant-looking noise).')
    relevance: float = knob(0.7, lo=0.0, hi=1.0,
        doc='latent relevance of an action to its own subtask (mean, s.d.; clipped to [0, 1]).')
    relevance_sd: float = knob(0.1, lo=0.0, hi=1.0,
        doc='latent relevance of an action to its own subtask (mean, s.d.; clipped to [0, 1]).')
    distractor_relevance: float = knob(0.6, lo=0.0, hi=1.0,
        doc='apparent relevance of a distractor to its own subtask.')
    cross_relevance: float = knob(0.3, lo=0.0, hi=1.0,
        doc='multiplier on relevance to any other subtask (and to the final answer, except for '
            'subtask nodes and summaries, which carry results).')
    task_relevance: float = knob(0.8, lo=0.0, hi=1.0,
        doc='relevance of a subtask node / a fold summary.')
    summary_relevance: float = knob(0.7, lo=0.0, hi=1.0,
        doc='relevance of a subtask node / a fold summary.')
    tokens_median: float = knob(60.0, lo=1.0, hi=1e6, doc='lognormal token size of an action.')
    tokens_sigma: float = knob(0.5, lo=0.0, hi=5.0, doc='lognormal token size of an action.')
    task_tokens: int = knob(20, hi=MAX_TOKENS,
        doc='token size of a subtask description / of the query.')
    query_tokens: int = knob(40, hi=MAX_TOKENS,
        doc='token size of a subtask description / of the query.')
    n_globals: int = knob(0, hi=10_000,
        doc='benign global memories present from the start (conversation mode).')
    global_relevance: float = knob(0.5, lo=0.0, hi=1.0,
        doc='their relevance; each concerns a random subtask with probability 1/2, else none in '
            'particular.')
    p_resume: float = knob(0.1, lo=0.0, hi=1.0,
        doc='probability that, after a top-level subtask (other than the first) completes, the '
            'agent returns to an earlier one (reopen).')
    resume_actions: tuple[int, int] = knob((1, 2), hi=MAX_NODES,
        doc='actions taken in a resumed subtask.')
    resume_folded: str = knob('new', choices=RESUME_FOLDED_RULES,
        doc='a resumed subtask in a configuration that folds but does not reopen '
            '(``tree_summary``, ``tree_selection_summary``; the same rule for every policy): '
            '``new`` (it stays folded, its summary covers what it folded, and the actions of '
            'the resumed visit are candidates until it folds again), ``unfold`` (the fold is '
            'undone, as a reopen would) or ``hidden`` (the old rule: the new actions are '
            'hidden until the re-fold summarises them).')
    supersede_rule: str = knob('each', choices=SUPERSEDE_RULES,
        doc="when a later clean action of the poison's subtask may detect it: ``each`` (every "
            'later clean action, each with probability ``p_supersede``) or ``first`` (only the '
            'first later clean action). docs/world.md: "a later clean action can supersede it".')
    supersede_review: bool = knob(False,
        doc="opt-in timing beyond the paper (default off): just before a subtask's answer, each of"
            ' its injected poisons not yet detected is detected with probability ``p_supersede`` '
            'by a review, with or without a later clean action.')
    p_revise: float = knob(0.0, lo=0.0, hi=1.0,
        doc="probability that an action's outcome is revised (flipped) by the next action of the "
            'same subtask: a second Eq. 2 event on it (docs/model.md Eq. 2, "recorded or '
            'revised"). No revision when no action follows.')
    p_stale: float = knob(0.0, lo=0.0, hi=1.0,
        doc="staleness (docs/world.md, \"Stale observations\"; default off): probability that a "
            "clean, successful, non-distractor action's content is outdated by the next such "
            'action of the same visit (a re-read of a resource that changed): that action then '
            "carries what the earlier one knew (the subtask's evidence passes to it) and a "
            'supersede event marks the earlier one wrong (docs/model.md §3). No such later '
            'action in the visit, no staleness.')
    final_share: float = knob(1.0, lo=0.0, hi=1.0,
        doc="the final answer's rule (docs/world.md, reasoner; the same for every policy): it "
            'is correct only if at least ceil(final_share · K) of the K top-level subtask '
            'results are usable (1 = all of them).')
    p_recover: float = knob(0.1, lo=0.0, hi=1.0,
        doc="the final answer's rule: a correctly answered subtask whose result (its evidence-"
            'carrying memory or its summary) is not in the context is still usable with this '
            'probability, one draw per missing result.')
    tasks: int = knob(1, lo=1, hi=100,
        doc='conversation mode (docs/world.md): tasks per trajectory, played in sequence, each '
            'a query with its own tree (1 = one task, no conversation).')
    p_related: float = knob(0.0, lo=0.0, hi=1.0,
        doc="conversation mode: probability that a task's result is needed by one top-level "
            'subtask of a later task (drawn uniformly), which then finds no evidence of its own.')
    poison: tuple[PoisonSpec, ...] = field(default_factory=tuple)  # the scripted injections

    def __post_init__(self) -> None:
        owner = "WorldSpec"
        # n_subtasks as written (fixed, range, distribution) -> support and probabilities.
        support, p = subtask_distribution(self.n_subtasks, MAX_NODES)
        if self.n_subtasks_p:
            given = tuple(self.n_subtasks_p)
            if p or not isinstance(self.n_subtasks, list | tuple):
                fail(owner, "n_subtasks_p", given,
                     "empty when n_subtasks is a distribution or a fixed number")
            span = support[1] - support[0] + 1
            if (len(given) != span or any(not isinstance(x, numbers.Real) or isinstance(
                    x, bool) or not 0 <= x <= 1 for x in given)
                    or abs(math.fsum(given) - 1.0) > 1e-9 or given[0] <= 0 or given[-1] <= 0):
                fail(owner, "n_subtasks_p", given,
                     f"{span} probabilities of n_subtasks = {support[0]} .. {support[1]}, "
                     "summing to 1, the first and last positive")
            p = tuple(float(x) for x in given)
        object.__setattr__(self, "n_subtasks", support)
        object.__setattr__(self, "n_subtasks_p", p)
        # Lists from TOML/JSON become tuples so the spec stays hashable.
        for name in ("n_subtasks", "nested_subtasks", "n_actions", "resume_actions"):
            value = getattr(self, name)
            if isinstance(value, list):
                object.__setattr__(self, name, tuple(value))
        check_knobs(owner, self)
        poison = tuple(self.poison)
        for k, item in enumerate(poison):
            if not isinstance(item, PoisonSpec):
                fail(owner, f"poison[{k}]", item, "a PoisonSpec")
        object.__setattr__(self, "poison", poison)
        if self.max_subtasks() > MAX_NODES:
            fail(owner, "nested_subtasks", self.nested_subtasks,
                 f"a nesting that keeps subtasks per trajectory under {MAX_NODES:,}")
        self._check_totals()

    def _check_totals(self) -> None:
        """Memories and tokens per trajectory within `MAX_NODES` and `MAX_TOKENS`."""
        owner = "WorldSpec"
        nodes = self.node_bound()
        if nodes > MAX_NODES:
            key = "n_actions" if self.n_actions[1] * self.max_subtasks() * 2 >= nodes \
                else "n_globals" if self.n_globals * 2 >= nodes else "n_subtasks"
            fail(owner, key, getattr(self, key),
                 f"values that keep memories per trajectory under {MAX_NODES:,} (this "
                 f"world can make {nodes:,}: n_subtasks, nesting, n_actions, "
                 "resume_actions, n_globals and poison counts multiply)")
        sources = {"tokens_sigma" if self.tokens_sigma > 0 else "tokens_median":
                   self.max_action_tokens(),
                   "task_tokens": float(self.task_tokens),
                   "query_tokens": float(self.query_tokens)}
        for k, p in enumerate(self.poison):
            sources[f"poison[{k}].tokens"] = float(p.tokens)
        key = max(sources, key=lambda k: sources[k])
        if nodes * sources[key] <= MAX_TOKENS:
            return
        allowed = (f"values that keep a trajectory's memory tokens under 2^30 ({nodes:,} "
                   f"memories × the largest size {sources[key]:.3g} = "
                   f"{nodes * sources[key]:.3g})")
        if key == "tokens_sigma":
            room = MAX_TOKENS / nodes / self.tokens_median
            most = math.log(room) / Z_MAX if room > 1 else 0.0
            allowed += (f"; the largest action size is tokens_median·e^({Z_MAX:.3f}·"
                        f"tokens_sigma), so with tokens_median={self.tokens_median:g} "
                        f"tokens_sigma <= {most:.3g}")
        if key.startswith("poison["):
            fail(owner, key, self.poison[int(key[7:key.index("]")])].tokens, allowed)
        fail(owner, key, getattr(self, key), allowed)

    def max_action_tokens(self) -> float:
        """The largest token size an action can draw (`Z_MAX`), as a float."""
        return max(1.0, self.tokens_median * math.exp(Z_MAX * self.tokens_sigma))

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["poison"] = [asdict(p) for p in self.poison]
        # A distribution of n_subtasks is written as the file writes it; no n_subtasks_p.
        del d["n_subtasks_p"]
        if self.n_subtasks_p:
            lo = self.n_subtasks[0]
            d["n_subtasks"] = {"values": list(range(lo, lo + len(self.n_subtasks_p))),
                               "p": list(self.n_subtasks_p)}
        return d

    def n_subtasks_cdf(self) -> np.ndarray:
        """The cumulative probabilities of n_subtasks = min, ..., max as the generator reads
        them (a running sum, the last set to 1 exactly); empty for a uniform range."""
        out = []
        total = 0.0
        for x in self.n_subtasks_p:
            total += x
            out.append(total)
        if out:
            out[-1] = 1.0
        return np.array(out, dtype=np.float64)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> WorldSpec:
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - names)
        if unknown:
            raise ValueError(f"unknown WorldSpec field(s) {', '.join(unknown)}; "
                             f"allowed: {', '.join(sorted(names))}")
        values = dict(values)
        values["poison"] = tuple(
            p if isinstance(p, PoisonSpec) else PoisonSpec(**p)
            for p in values.get("poison", ())
        )
        return cls(**values)

    # --- bounds used to size the generator's scratch arrays -----------------------------

    def max_subtasks(self) -> int:
        per_top = sum(self.nested_subtasks[1] ** d for d in range(self.max_depth))
        return self.n_subtasks[1] * per_top

    def max_injections(self) -> int:
        return sum(p.count for p in self.poison)

    def node_bound(self) -> int:
        per_task = (2 + self.max_subtasks() * (1 + self.n_actions[1])  # root, promoted
                    + self.n_subtasks[1] * self.resume_actions[1])
        # A ``reinject`` injection may add one copy of itself.
        copies = sum(p.count for p in self.poison if p.adaptive == "reinject")
        return (self.tasks * per_task - 1 + self.n_globals + self.max_injections()
                + copies)

    def event_bound(self) -> int:
        # Every node once, every action at most once more (a revision), every subtask's
        # completion, a reopen and re-completion per top-level subtask, one supersession
        # per injection, the final answer; with staleness, one supersession per action.
        return ((3 if self.p_stale > 0 else 2) * self.node_bound()
                + self.tasks * (self.max_subtasks() + 2 * self.n_subtasks[1] + 1)
                + self.max_injections())

    def pack(self) -> tuple[Any, np.ndarray]:
        """The scalars as the kernels read them (`PackedWorld`: ``w.p_nested``; a range
        as ``n_subtasks_min`` / ``n_subtasks_max``) and the injections as a matrix, one
        row per `PoisonSpec` and one column per field (`PZ`: ``poison[k, PZ.count]``)."""
        poison = np.zeros((len(self.poison), len(PZ)), dtype=np.float64)
        for k, spec in enumerate(self.poison):
            poison[k] = pack_values(spec, _PackedPoison).item()
        return pack_values(self, PackedWorld, skip=_NOT_PACKED), poison


_NOT_PACKED = ("poison", "n_subtasks_p")  # arrays of their own (`pack`, `n_subtasks_cdf`)
PackedWorld = packed_type(WorldSpec, skip=_NOT_PACKED)
_PackedPoison = packed_type(PoisonSpec)
PZ = slots("PoisonColumns", _PackedPoison.names or (), __name__)
"""The columns of the injection matrix, one per `PoisonSpec` field (``PZ.count``)."""
IJ = slots("InjectionPlan", ("spec", "target", "pos", "depth", "resume"), __name__)
"""The columns of the per-trajectory injection plan (`_generate_one`): the `PoisonSpec`
row, the target subtask, the position, the depth, on a resumed visit (``inj[q, IJ.pos]``)."""


@dataclass
class World:
    """A generated batch: world nodes ``(n, max_nodes)`` and scripts ``(n, max_events)``.

    The node and script arrays are `wmtsim.core.node_arrays.WORLD_ARRAYS`, in its order
    (each declared there with its dtype, empty value and meaning; a test checks the
    fields): ``parent`` (world id, -1 for globals), ``kind``, ``tokens``, ``outcome``,
    ``poisoned``, ``evidence`` (carries its subtask's evidence), ``topic`` (the subtask a
    memory is about, -1 for none), ``rel`` (relevance to its topic as the selector sees
    it), ``persuasiveness``, ``rider`` (summary-riding poison), ``top`` (the top-level
    subtask a subtask belongs to, for the final answer); the script ``op``, ``arg``.
    """

    seed: int
    start: int
    spec: WorldSpec
    parent: np.ndarray
    kind: np.ndarray
    tokens: np.ndarray
    outcome: np.ndarray
    poisoned: np.ndarray
    evidence: np.ndarray
    topic: np.ndarray
    rel: np.ndarray
    persuasiveness: np.ndarray
    rider: np.ndarray
    top: np.ndarray
    op: np.ndarray
    arg: np.ndarray
    n_nodes: np.ndarray
    n_events: np.ndarray
    n_injected: np.ndarray

    @property
    def n(self) -> int:
        return int(self.n_nodes.shape[0])

    @property
    def trajectories(self) -> np.ndarray:
        """Global trajectory indices of this batch."""
        return np.arange(self.start, self.start + self.n, dtype=np.int64)
