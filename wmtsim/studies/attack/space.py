"""The attacker's space: poisoning attacks declared like any other knob set.

A *point* of the space is an `Attack`: a tuple of `Injection` s, each one memory the
attacker writes into a trajectory: its kind (``failed``, ``plausible``, ``global``,
``summary``), where it lands (top-level subtask index or random, position among that
subtask's actions or random, depth, first or resumed visit), how relevant it looks to the
selector and how persuasive it is to the reasoner, and the probability it is injected.
The attacker's budget k is the expected number of injections per trajectory,
Σ ``p_inject`` (the paper's corpus: 409 poisoned memories / 100 scenarios = 4.09): at
budget k the search places ⌊k⌋ injections that are always made and, when k is not an
integer, one more made with probability k − ⌊k⌋ (`slot_probabilities`).

`AttackSpace` holds the bounds (which kinds, relevance and persuasiveness ranges, whether
the attacker chooses the place) and the **stealth trade-off** (`p_supersede`): poison that
looks more relevant or persuades harder is easier to detect. The world detects poison the
way it always does (a later clean action of its subtask supersedes it with probability
``PoisonSpec.p_supersede``, `WorldSpec.supersede_rule`); the trade-off only sets that
probability from the injection's relevance r and persuasiveness π, on the logistic scale,
through an *anchor* (r₀, π₀, p₀)::

    logit p_supersede = logit p₀ + β_r · (r − r₀) + β_π · (π − π₀)

Why this form: it stays in [0, 1] without clipping (no flat regions for the optimiser),
rises with both r and π, multiplies the odds of detection by a constant e^(0.1·β) per
+0.1 of either (a constant odds ratio, the usual logistic detection model), β = 0 switches
the trade-off off, and it passes through its anchor exactly. The anchor of each kind is
the scenario's first scripted injection of that kind (its fitted detection rate at its
relevance and persuasiveness), so the scripted attack is a point of the space with its own
``p_supersede`` (`scripted_attack`, a test checks every shipped scenario); a kind the
scenario does not script borrows the anchor of its first scripted injection, and a
scenario without poison uses the anchor knobs. p₀ = 0 or 1 stays there (no trade-off).
The world never detects a ``global`` injection (detection needs a later clean action of
the same subtask), so the trade-off does not bind it; that is the world's rule, reported,
not hidden (docs/attack.md).

Mapping a point to the scenario format (`to_poison`) gives one `PoisonSpec` per injection
(``count = 1``, in order); a scripted ``count = c`` entry is c consecutive injections, which
draws the same world (one world draw sequence per copy, in order).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace

from wmtsim.core.knobs import check_knobs, knob
from wmtsim.core.validation import fail
from wmtsim.core.world_spec import ADAPTIVE_RULES, MAX_NODES, POISON_KINDS, PoisonSpec, WorldSpec

MAX_BUDGET = 64.0  # expected injections per trajectory the search accepts
RANDOM = -1  # subtask / position: drawn at random per trajectory (as the scripted attacks)
LAST = MAX_NODES  # position: the end of the visit, after every injection placed before it


@dataclass(frozen=True)
class Injection:
    """One injected memory: a point's coordinates per injection (`PoisonSpec`'s meaning)."""

    kind: str = knob("plausible", choices=POISON_KINDS,
        doc="failed | plausible | global | summary (`PoisonSpec.kind`).")
    subtask: int = knob(RANDOM, lo=-1, hi=MAX_NODES,
        doc="top-level subtask index (modulo the trajectory's subtasks); -1: random.")
    position: int = knob(RANDOM, lo=-1, hi=MAX_NODES,
        doc="position among the subtask's actions (clipped to the end); -1: random; "
            f"{LAST:,} (`LAST`): the end of the visit.")
    depth: int = knob(1, lo=1, hi=6, doc="1: the top-level subtask; d > 1 a subtask below it.")
    on_resume: bool = knob(False, doc="lands in the resumed visit of its top-level target.")
    apparent_relevance: float = knob(0.9, lo=0.0, hi=1.0,
        doc="how relevant it looks to the selector.")
    persuasiveness: float = knob(1.0, lo=0.0, hi=1.0,
        doc="multiplier on the reasoner's persuasion probability.")
    p_inject: float = knob(1.0, lo=0.0, hi=1.0,
        doc="probability that it is injected in a given trajectory.")
    adaptive: str = knob("none", choices=ADAPTIVE_RULES,
        doc="an adaptive rule (`PoisonSpec.adaptive`): none | after_evidence | reinject.")

    def __post_init__(self) -> None:
        check_knobs("Injection", self)


@dataclass(frozen=True)
class Attack:
    """A point of the attack space: the injections, in the order they are drawn."""

    injections: tuple[Injection, ...]

    @property
    def budget(self) -> float:
        """Expected injections per trajectory (Σ ``p_inject``)."""
        return float(sum(i.p_inject for i in self.injections))

    def to_dict(self) -> dict[str, object]:
        return {"injections": [{f.name: getattr(i, f.name) for f in fields(Injection)}
                               for i in self.injections]}


@dataclass(frozen=True)
class Anchor:
    """A kind's point on the stealth curve: at relevance ``r0`` and persuasiveness
    ``pi0`` the world detects it with probability ``p0``."""

    r0: float
    pi0: float
    p0: float


@dataclass(frozen=True)
class AttackSpace:
    """Bounds of the attacker and the stealth trade-off (module docstring).

    Each knob's default, range and doc is its `knob` declaration.
    """

    allow_failed: bool = knob(True, doc="the attacker may inject failed poison.")
    allow_plausible: bool = knob(True, doc="the attacker may inject plausible poison.")
    allow_global: bool = knob(True, doc="the attacker may inject poisoned global memories.")
    allow_summary: bool = knob(True, doc="the attacker may inject summary-riding poison.")
    relevance_min: float = knob(0.0, lo=0.0, hi=1.0, doc="lowest apparent relevance.")
    relevance_max: float = knob(1.0, lo=0.0, hi=1.0, doc="highest apparent relevance.")
    persuasiveness_min: float = knob(0.0, lo=0.0, hi=1.0, doc="lowest persuasiveness.")
    persuasiveness_max: float = knob(1.0, lo=0.0, hi=1.0, doc="highest persuasiveness.")
    choose_place: bool = knob(True,
        doc="the attacker picks the subtask index, position, depth and visit; off: every "
            "injection lands at random, as the scripted attacks do.")
    adaptive: bool = knob(True,
        doc="the attacker may use the adaptive rules (after_evidence: land right after the "
            "subtask's evidence; reinject: re-inject after a supersession takes effect); "
            "needs choose_place.")
    stealth_relevance: float = knob(4.0, lo=0.0, hi=50.0,
        doc="β_r: log-odds of detection added per unit of apparent relevance above the "
            "anchor (0: no trade-off).")
    stealth_persuasiveness: float = knob(4.0, lo=0.0, hi=50.0,
        doc="β_π: log-odds of detection added per unit of persuasiveness above the anchor.")
    anchor_relevance: float = knob(0.5, lo=0.0, hi=1.0,
        doc="r₀ of the stealth curve when the scenario scripts no poison.")
    anchor_persuasiveness: float = knob(1.0, lo=0.0, hi=1.0,
        doc="π₀ of the stealth curve when the scenario scripts no poison.")
    anchor_p_supersede: float = knob(0.5, lo=0.0, hi=1.0,
        doc="p₀ of the stealth curve when the scenario scripts no poison.")

    def __post_init__(self) -> None:
        owner = "AttackSpace"
        check_knobs(owner, self)
        if not self.kinds():
            fail(owner, "allow_plausible", self.allow_plausible,
                 "at least one allowed kind (allow_failed, allow_plausible, allow_global, "
                 "allow_summary)")
        if self.relevance_min > self.relevance_max:
            fail(owner, "relevance_min", self.relevance_min,
                 f"a value <= relevance_max ({self.relevance_max:g})")
        if self.persuasiveness_min > self.persuasiveness_max:
            fail(owner, "persuasiveness_min", self.persuasiveness_min,
                 f"a value <= persuasiveness_max ({self.persuasiveness_max:g})")

    def kinds(self) -> tuple[str, ...]:
        """The allowed kinds, in `POISON_KINDS` order."""
        allowed = {"failed": self.allow_failed, "plausible": self.allow_plausible,
                   "global": self.allow_global, "summary": self.allow_summary}
        return tuple(k for k in POISON_KINDS if allowed[k])

    def to_dict(self) -> dict[str, object]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_kinds(cls, kinds: tuple[str, ...], **values: object) -> AttackSpace:
        """A space allowing exactly ``kinds`` (ValueError naming an unknown kind)."""
        for k in kinds:
            if k not in POISON_KINDS:
                raise ValueError(f"--kinds {k!r} is unknown; allowed: {', '.join(POISON_KINDS)}")
        flags = {f"allow_{k}": k in kinds for k in POISON_KINDS}
        return cls(**flags, **values)  # type: ignore[arg-type]


# --- the stealth trade-off ---------------------------------------------------------------


def _logit(p: float) -> float:
    return math.log(p) - math.log1p(-p)


def p_supersede(space: AttackSpace, anchor: Anchor, relevance: float,
                persuasiveness: float) -> float:
    """Detection probability of an injection (the module docstring's logistic curve)."""
    if anchor.p0 <= 0.0 or anchor.p0 >= 1.0:
        return anchor.p0
    if relevance == anchor.r0 and persuasiveness == anchor.pi0:
        return anchor.p0  # exactly the anchor (no round trip through logit and back)
    z = (_logit(anchor.p0) + space.stealth_relevance * (relevance - anchor.r0)
         + space.stealth_persuasiveness * (persuasiveness - anchor.pi0))
    return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))


def anchors(space: AttackSpace, world: WorldSpec) -> dict[str, Anchor]:
    """Each kind's anchor: the scenario's first scripted injection of that kind, else its
    first scripted injection, else the space's anchor knobs."""
    first: dict[str, Anchor] = {}
    for p in world.poison:
        first.setdefault(p.kind, Anchor(p.apparent_relevance, p.persuasiveness, p.p_supersede))
    default = (next(iter(first.values())) if first else
               Anchor(space.anchor_relevance, space.anchor_persuasiveness,
                      space.anchor_p_supersede))
    return {k: first.get(k, default) for k in POISON_KINDS}


# --- points and the scenario format --------------------------------------------------------


def to_poison(attack: Attack, space: AttackSpace, world: WorldSpec) -> tuple[PoisonSpec, ...]:
    """The attack as scripted injections: one `PoisonSpec` per injection, in order, its
    ``p_supersede`` from the stealth trade-off."""
    table = anchors(space, world)
    return tuple(PoisonSpec(
        kind=i.kind, subtask=i.subtask, position=i.position, count=1, p_inject=i.p_inject,
        apparent_relevance=i.apparent_relevance, persuasiveness=i.persuasiveness,
        p_supersede=p_supersede(space, table[i.kind], i.apparent_relevance, i.persuasiveness),
        tokens=0, depth=i.depth, on_resume=i.on_resume, adaptive=i.adaptive)
        for i in attack.injections)


def attack_world(world: WorldSpec, attack: Attack, space: AttackSpace) -> WorldSpec:
    """``world`` with its scripted poison replaced by ``attack`` (anchors from ``world``)."""
    return replace(world, poison=to_poison(attack, space, world))


def scripted_attack(world: WorldSpec) -> Attack:
    """The scenario's scripted injections as a point (a ``count = c`` entry becomes c
    injections). ValueError when an entry has a fixed token size (the space draws poison
    sizes like a regular action's)."""
    out = []
    for k, p in enumerate(world.poison):
        if p.tokens != 0:
            raise ValueError(f"poison[{k}].tokens={p.tokens}: the attack space draws poison "
                             "sizes like an action's; allowed: 0")
        inj = Injection(kind=p.kind, subtask=p.subtask,
                        position=canonical_position(p.position, world), depth=p.depth,
                        on_resume=p.on_resume, apparent_relevance=p.apparent_relevance,
                        persuasiveness=p.persuasiveness, p_inject=p.p_inject,
                        adaptive=p.adaptive)
        out += [inj] * p.count
    return Attack(tuple(out))


def canonical_position(position: int, world: WorldSpec) -> int:
    """A scripted position as the space writes it: one at or beyond every visit's length
    (its clean actions and every injection placed before it) always lands at the end,
    which the space writes `LAST`; any other position is itself."""
    longest = max(world.n_actions[1], world.resume_actions[1]) + world.max_injections()
    return LAST if longest <= position and longest <= LAST else position


def expanded_poison(world: WorldSpec) -> tuple[PoisonSpec, ...]:
    """The scenario's injections with every ``count = c`` entry written as c entries of
    count 1 and each position written as the space writes it (`canonical_position`): the
    form `to_poison` produces, drawing the same world."""
    return tuple(replace(p, count=1, position=canonical_position(p.position, world))
                 for p in world.poison for _ in range(p.count))


def slot_probabilities(budget: float) -> tuple[float, ...]:
    """``p_inject`` of each injection at budget k: ⌊k⌋ ones, then k − ⌊k⌋ if positive."""
    if not (math.isfinite(budget) and 0 < budget <= MAX_BUDGET):
        raise ValueError(f"--budget {budget!r}: allowed: a number in (0, {MAX_BUDGET:g}]")
    whole = math.floor(budget + 1e-9)
    frac = round(budget - whole, 9)
    return (1.0,) * whole + ((frac,) if frac > 0 else ())


def truncate(attack: Attack, budget: float) -> Attack | None:
    """The attack's first injections up to budget k, shaped like the search's points at k
    (`slot_probabilities`: ⌊k⌋ sure injections, then the fractional one), or None when its
    injections do not have that shape (too few, or another probability)."""
    slots = slot_probabilities(budget)
    head = attack.injections[:len(slots)]
    if len(head) < len(slots) or any(abs(i.p_inject - p) > 1e-9
                                     for i, p in zip(head, slots, strict=True)):
        return None
    return Attack(tuple(head))


# --- the coordinates a search varies -------------------------------------------------------


@dataclass(frozen=True)
class Dimension:
    """One coordinate of the search: ``choices`` (categorical) or a float in [lo, hi]."""

    name: str
    choices: tuple[object, ...] = ()
    lo: float = 0.0
    hi: float = 0.0


FIELDS_PER_SLOT = ("kind", "subtask", "position", "depth", "on_resume", "adaptive",
                   "apparent_relevance", "persuasiveness")


def dimensions(space: AttackSpace, world: WorldSpec, budget: float) -> list[Dimension]:
    """The coordinates of the points at budget k: per injection slot ``s{j}.<field>``.

    Subtask indices run to the world's largest number of top-level subtasks, positions to
    its largest number of actions per subtask (-1 = random for both); depth and resumed
    visit only where the world has them. Without ``choose_place`` every injection lands
    at random."""
    dims: list[Dimension] = []
    place = space.choose_place
    subtasks = (RANDOM, *range(world.n_subtasks[1])) if place else (RANDOM,)
    positions = (RANDOM, *range(world.n_actions[1] + 1), LAST) if place else (RANDOM,)
    depths = tuple(range(1, world.max_depth + 1)) if place else (1,)
    resume = (False, True) if place and world.p_resume > 0 else (False,)
    rules = ADAPTIVE_RULES if place and space.adaptive else ("none",)
    for j in range(len(slot_probabilities(budget))):
        dims += [Dimension(f"s{j}.kind", space.kinds()),
                 Dimension(f"s{j}.subtask", subtasks),
                 Dimension(f"s{j}.position", positions),
                 Dimension(f"s{j}.depth", depths),
                 Dimension(f"s{j}.on_resume", resume),
                 Dimension(f"s{j}.adaptive", rules),
                 Dimension(f"s{j}.apparent_relevance", lo=space.relevance_min,
                           hi=space.relevance_max),
                 Dimension(f"s{j}.persuasiveness", lo=space.persuasiveness_min,
                           hi=space.persuasiveness_max)]
    return dims


def varied(dims: list[Dimension]) -> list[Dimension]:
    """The coordinates with more than one value (a search need not sample the others)."""
    return [d for d in dims if len(d.choices) > 1 or (not d.choices and d.lo < d.hi)]


def fixed(dims: list[Dimension]) -> dict[str, object]:
    """The coordinates with one value, and that value."""
    return {d.name: d.choices[0] if d.choices else d.lo for d in dims
            if d not in varied([d])}


def from_params(params: dict[str, object], budget: float) -> Attack:
    """The point with coordinates ``params`` (`dimensions`' names)."""
    out = []
    for j, p in enumerate(slot_probabilities(budget)):
        v = {f: params[f"s{j}.{f}"] for f in FIELDS_PER_SLOT}
        kind = str(v["kind"])
        placed = kind != "global"
        out.append(Injection(
            kind=kind, subtask=int(v["subtask"]),  # type: ignore[call-overload]
            position=int(v["position"]) if placed else RANDOM,  # type: ignore[call-overload]
            depth=int(v["depth"]) if placed else 1,  # type: ignore[call-overload]
            on_resume=bool(v["on_resume"]) and placed,
            apparent_relevance=float(v["apparent_relevance"]),  # type: ignore[arg-type]
            persuasiveness=float(v["persuasiveness"]),  # type: ignore[arg-type]
            p_inject=p, adaptive=str(v["adaptive"]) if placed else "none"))
    return Attack(tuple(out))


def to_params(attack: Attack) -> dict[str, object]:
    """The coordinates of a point (the inverse of `from_params`)."""
    out: dict[str, object] = {}
    for j, i in enumerate(attack.injections):
        for f in FIELDS_PER_SLOT:
            out[f"s{j}.{f}"] = getattr(i, f)
    return out


def outside(attack: Attack, space: AttackSpace, world: WorldSpec, budget: float) -> list[str]:
    """Why ``attack`` is not a point of the search at budget k (empty: it is one)."""
    if truncate(attack, budget) != attack:
        return [f"its injections' probabilities {[i.p_inject for i in attack.injections]} "
                f"are not those of budget {budget:g} {list(slot_probabilities(budget))}"]
    reasons = []
    params = to_params(attack)
    for d in dimensions(space, world, budget):
        v = params[d.name]
        if d.choices and v not in d.choices:
            reasons.append(f"{d.name}={v!r} is not one of {list(d.choices)}")
        elif not d.choices and not d.lo <= float(v) <= d.hi:  # type: ignore[arg-type]
            reasons.append(f"{d.name}={v!r} is outside [{d.lo:g}, {d.hi:g}]")
    return reasons
