"""Scenario files: a study described in TOML (format: ``docs/scenario_format.md``).

A scenario bundles the synthetic world (`WorldSpec` and its scripted poison), the stubs'
knobs (`Stubs`), the WMT constants (`Params`), the configurations to compare, the number
of trajectories and the seed::

    name = "paper_poisoning"
    n = 100
    seed = 0
    policies = ["linear", "wmt"]
    paper = "table4"          # which paper table `wmtsim compare` shows beside the results

    [world]                   # WorldSpec fields
    n_subtasks = [2, 4]

    [stubs]                   # Stubs fields
    p_leak = 0.3

    [params]                  # Params fields
    budget = 512

    [[poison]]                # one table per PoisonSpec
    kind = "plausible"

Unknown keys are errors. Every error is a `ScenarioError` whose text names the file, the
key path and what is allowed: ``paper_poisoning.toml: poison[2].kind: 'bogus' is invalid;
allowed: failed | plausible | global | summary``. The validation itself is the
dataclasses'; this module maps their messages to key paths.

The JSON Schema (``wmtsim/schemas/scenario.schema.json``) is generated from the dataclass
fields, types and defaults by `wmtsim.studies.scenarios.schema`; a test asserts the shipped
file is current. The file's bytes are read and parsed by `wmtsim.studies.scenarios.toml_files`.
"""

from __future__ import annotations

import re
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any

import tomli_w

from wmtsim.core.field_knobs import Baselines
from wmtsim.core.params import Params
from wmtsim.core.policies import POLICIES, TABLE4_POLICIES, TABLE123_POLICIES
from wmtsim.core.stubs import Stubs
from wmtsim.core.validation import KnobError
from wmtsim.core.world_spec import POISON_KINDS, PoisonSpec, WorldSpec
from wmtsim.studies.scenarios.schema import (
    DEFAULT_N,
    DEFAULT_SEED,
    PAPER_TABLES,
    SECTIONS,
    TOP_LEVEL,
)
from wmtsim.studies.scenarios.toml_files import parse_toml, read_capped


class ScenarioError(ValueError):
    """A scenario that cannot be loaded: ``<file>: <key.path>: <problem>; allowed: ...``."""

    def __init__(self, source: str, path: str, problem: str, allowed: str | None = None):
        self.source = source
        self.path = path
        self.problem = problem
        self.allowed = allowed
        text = f"{source}: {path}: {problem}"
        if allowed:
            text += f"; allowed: {allowed}"
        super().__init__(text)


def default_policies(paper: str | None) -> tuple[str, ...]:
    """The configurations `compare` runs when a scenario names none."""
    if paper == "table4":
        return TABLE4_POLICIES
    if paper == "table123":
        return TABLE123_POLICIES
    return ("linear", "wmt")


@dataclass(frozen=True)
class Scenario:
    """One study: world, stubs, WMT parameters, configurations, size and seed."""

    name: str
    description: str
    world: WorldSpec
    stubs: Stubs
    params: Params
    policies: tuple[str, ...]
    n: int
    seed: int
    paper: str | None = None
    source: str | None = None
    baselines: Baselines = field(default_factory=Baselines)

    def __post_init__(self) -> None:
        src = self.source or "<scenario>"
        _check_top(src, "name", self.name)
        _check_top(src, "description", self.description)
        _check_top(src, "n", self.n)
        _check_top(src, "seed", self.seed)
        _check_top(src, "paper", self.paper)
        object.__setattr__(self, "policies", tuple(self.policies))
        _check_top(src, "policies", list(self.policies))

    def to_dict(self) -> dict[str, Any]:
        """The scenario as plain data, in the file's layout (``paper`` omitted when None)."""
        d: dict[str, Any] = {"name": self.name, "description": self.description,
                             "n": self.n, "seed": self.seed,
                             "policies": list(self.policies)}
        if self.paper is not None:
            d["paper"] = self.paper
        world = self.world.to_dict()
        poison = world.pop("poison")
        d["world"] = {k: list(v) if isinstance(v, tuple) else v for k, v in world.items()}
        d["stubs"] = self.stubs.to_dict()
        d["params"] = self.params.to_dict()
        if self.baselines != Baselines():
            d["baselines"] = self.baselines.to_dict()
        if poison:
            d["poison"] = poison
        return d

    def to_toml(self) -> str:
        """The scenario as TOML; `load_scenario` / `scenario_from_dict` read it back."""
        return tomli_w.dumps(self.to_dict())

    def with_overrides(self, overrides: dict[str, object]) -> Scenario:
        """A copy with some values changed, validated like a file.

        Keys: ``"params.rho"``, ``"world.p_success"``, ``"stubs.p_leak"``,
        ``"poison[0].p_inject"``, ``"poison[*].p_supersede"`` (every poison injection), a
        top-level key (``"n"``, ``"seed"``, ...), or a bare field name (``"rho"``) that
        names a `Params` field or exactly one other field.
        """
        if not overrides:
            return self
        data = self.to_dict()
        data.setdefault("poison", [])
        data.setdefault("baselines", {})
        source = self.source or "<overrides>"
        for key, value in overrides.items():
            path = _resolve_override(source, key)
            if path.startswith("poison[*]."):
                if not data["poison"]:
                    raise ScenarioError(source, path, "there is no poison to set",
                                        "none (no [[poison]] tables)")
                for entry in data["poison"]:
                    entry[path.split(".", 1)[1]] = value
                continue
            m = re.fullmatch(r"poison\[(\d+)\]\.(\w+)", path)
            if m:
                k = int(m.group(1))
                if k >= len(data["poison"]):
                    raise ScenarioError(source, path, f"there is no poison[{k}]",
                                        f"poison[0] .. poison[{len(data['poison']) - 1}]"
                                        if data["poison"] else "none (no [[poison]] tables)")
                data["poison"][k][m.group(2)] = value
            elif "." in path:
                section, name = path.split(".", 1)
                data[section][name] = value
            else:
                data[path] = value
        if not data["poison"]:
            del data["poison"]
        return scenario_from_dict(data, source=source)


# --- loading ------------------------------------------------------------------------------


def shipped_scenarios() -> dict[str, Path]:
    """The scenarios shipped with the package, by name."""
    from importlib import resources  # ~15 ms of imports: not for a scenario given by path

    root = resources.files("wmtsim") / "data" / "scenarios"
    out: dict[str, Path] = {}
    if root.is_dir():
        for item in sorted(root.iterdir(), key=lambda x: x.name):
            if item.name.endswith(".toml"):
                out[item.name[: -len(".toml")]] = Path(str(item))
    return out


def resolve_scenario_path(path_or_name: str | Path) -> Path:
    """A path to an existing file, or the path of the shipped scenario of that name."""
    p = Path(path_or_name)
    if p.is_file():
        return p
    shipped = shipped_scenarios()
    name = p.name[: -len(".toml")] if p.name.endswith(".toml") else p.name
    # A bare name, or the repository's path (scenarios/<name>.toml) outside the checkout.
    by_repo_path = p.name == f"{name}.toml" and p.parent.as_posix().endswith("scenarios")
    if not p.exists() and (str(path_or_name) in (name, f"{name}.toml") or by_repo_path) \
            and name in shipped:
        return shipped[name]
    allowed = "an existing .toml file, or a shipped scenario name: " + ", ".join(shipped)
    if p.exists():
        raise ScenarioError(str(p), "(file)", "is not a regular file", allowed)
    from wmtsim.core.formatting import did_you_mean

    raise ScenarioError(str(p), "(file)", "no such file or shipped scenario"
                        + did_you_mean(name, shipped), allowed)


def load_scenario(path_or_name: str | Path) -> Scenario:
    """Read a scenario file, or a shipped scenario by name (``"paper_poisoning"``)."""
    path = resolve_scenario_path(path_or_name)
    source = str(path)
    raw = read_capped(path, lambda msg: ScenarioError(source, "(file)", msg))
    try:
        text = raw.decode("utf-8-sig")  # tolerate a byte-order mark
    except UnicodeDecodeError as e:
        raise ScenarioError(source, "(file)", f"not UTF-8 text ({e.reason} at byte "
                                              f"{e.start})", "a UTF-8 TOML file") from None
    data = parse_toml(text, lambda msg: ScenarioError(source, "(syntax)", msg))
    data.setdefault("name", path.stem)
    return scenario_from_dict(data, source=source)


def scenario_from_dict(data: dict[str, Any], source: str = "<dict>") -> Scenario:
    """Build and validate a scenario from plain data laid out like the file."""
    if not isinstance(data, dict):
        raise ScenarioError(source, "(top level)", f"{data!r} is not a table", "a table")
    allowed_top = (*TOP_LEVEL, *SECTIONS, "poison")
    for key in data:
        if key not in allowed_top:
            raise ScenarioError(source, str(key), "unknown key", ", ".join(allowed_top))
    for key in TOP_LEVEL:
        if key in data:
            _check_top(source, key, data[key])
    for key in SECTIONS:
        if key in data and not isinstance(data[key], dict):
            raise ScenarioError(source, key, f"{data[key]!r} is not a table",
                                f"a [{key}] table")

    poison_data = data.get("poison", [])
    if not isinstance(poison_data, list):
        raise ScenarioError(source, "poison", f"{poison_data!r} is not an array of tables",
                            "[[poison]] tables")
    poison = tuple(_build(source, f"poison[{k}]", PoisonSpec, item)
                   for k, item in enumerate(poison_data))
    world_data = dict(data.get("world", {}))
    if "poison" in world_data:
        raise ScenarioError(source, "world.poison", "injections are not a [world] key",
                            "[[poison]] tables at the top level")
    world = _build(source, "world", WorldSpec, {**world_data, "poison": poison})
    stubs = _build(source, "stubs", Stubs, data.get("stubs", {}))
    params = _build(source, "params", Params, data.get("params", {}))
    baselines = _build(source, "baselines", Baselines, data.get("baselines", {}))
    paper = data.get("paper")
    return Scenario(
        name=data.get("name", "scenario"),
        description=data.get("description", ""),
        world=world, stubs=stubs, params=params,
        policies=tuple(data.get("policies", default_policies(paper))),
        n=data.get("n", DEFAULT_N), seed=data.get("seed", DEFAULT_SEED),
        paper=paper, source=None if source.startswith("<") else source,
        baselines=baselines,
    )


def _build(source: str, path: str, cls: type, values: Any) -> Any:
    """``cls(**values)`` with unknown keys and validation errors mapped to ``path``."""
    if not isinstance(values, dict):
        raise ScenarioError(source, path, f"{values!r} is not a table", "a table")
    names = [f.name for f in fields(cls)]
    for key in values:
        if key not in names or (cls is WorldSpec and key == "poison" and path != "world"):
            raise ScenarioError(source, f"{path}.{key}", "unknown key",
                                ", ".join(n for n in names if n != "poison"))
    missing = [f.name for f in fields(cls)
               if f.default is MISSING and f.default_factory is MISSING
               and f.name not in values]
    if missing:
        raise ScenarioError(source, f"{path}.{missing[0]}", "is required",
                            _allowed_text(cls, missing[0]))
    try:
        return cls(**values)
    except ValueError as e:
        raise _map_error(source, path, cls, e) from None
    except TypeError as e:  # e.g. a table where a number belongs
        raise ScenarioError(source, path, str(e)) from None


def _map_error(source: str, path: str, cls: type, error: ValueError) -> ScenarioError:
    message = str(error)
    if isinstance(error, KnobError):
        name = error.name
        key = f"{path}.{name}" if not name.startswith("poison[") else name
        return ScenarioError(source, key, f"{error.value!r} is invalid", error.allowed)
    m = re.match(r"^unknown parameter\(s\) (\w+)", message)
    if m:
        return ScenarioError(source, f"{path}.{m.group(1)}", "unknown key",
                             ", ".join(f.name for f in fields(cls)))
    if cls is Params and "u_success" in message and "u_failure" in message:
        return ScenarioError(source, f"{path}.u_success", message)
    return ScenarioError(source, path, message)


def _check_top(source: str, key: str, value: Any) -> None:
    if key in ("name", "description"):
        if not isinstance(value, str):
            raise ScenarioError(source, key, f"{value!r} is invalid", "a string")
        # A label, never a path (outputs use `wmtsim.core.output.safe_component`), but it is printed
        # and stored in Parquet and JSON: no control characters, valid Unicode.
        if key == "name" and (not value or len(value) > 200):
            raise ScenarioError(source, key, f"{value[:60]!r} is invalid",
                                "a string of 1 to 200 characters")
        bad = next((c for c in value if (ord(c) < 32 and c not in "\t\n")
                    or 0xD800 <= ord(c) <= 0xDFFF or ord(c) == 127), None)
        if bad is not None or (key == "name" and ("\n" in value or "\t" in value)):
            raise ScenarioError(source, key, f"{value[:60]!r} is invalid",
                                "text without control characters"
                                + (" or line breaks" if key == "name" else ""))
    elif key in ("n", "seed"):
        lo, hi = (1, 10_000_000) if key == "n" else (0, 2**63 - 1)
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            raise ScenarioError(source, key, f"{value!r} is invalid",
                                f"an integer in [{lo}, {hi}]")
    elif key == "paper":
        if value is not None and value not in PAPER_TABLES:
            raise ScenarioError(source, key, f"{value!r} is invalid", " | ".join(PAPER_TABLES))
    elif key == "policies":
        if not isinstance(value, list | tuple) or not value:
            raise ScenarioError(source, key, f"{value!r} is invalid",
                                "a non-empty array of policy names")
        for k, p in enumerate(value):
            if p not in POLICIES:
                raise ScenarioError(source, f"policies[{k}]", f"{p!r} is invalid",
                                    " | ".join(POLICIES))
        if len(set(value)) != len(value):
            raise ScenarioError(source, key, f"{list(value)!r} repeats a policy",
                                "each policy at most once")


def canonical_key(key: str, source: str = "<overrides>") -> str:
    """The one spelling of an override key: ``"rho"`` -> ``"params.rho"``,
    ``"p_leak"`` -> ``"stubs.p_leak"``; a `ScenarioError` for unknown or ambiguous keys."""
    return _resolve_override(source, key)


def _near(key: str) -> str:
    """A "did you mean" for a mistyped override key, among every key an override takes."""
    from wmtsim.core.formatting import did_you_mean

    keys = [*TOP_LEVEL, *(f.name for f in fields(Params))]
    keys += [f"{s}.{f.name}" for s, cls in SECTIONS.items() for f in fields(cls)
             if f.name != "poison"]
    if "." not in key:
        keys += [f.name for s in ("stubs", "world", "baselines") for f in fields(SECTIONS[s])]
    return did_you_mean(key, dict.fromkeys(keys))


def _resolve_override(source: str, key: str) -> str:
    if not isinstance(key, str):
        raise ScenarioError(source, repr(key), "override keys are strings")
    if re.fullmatch(r"poison\[(\d+|\*)\]\.\w+", key):
        return key
    if key in TOP_LEVEL:
        return key
    if "." in key:
        section, name = key.split(".", 1)
        if section not in SECTIONS:
            raise ScenarioError(source, key, "unknown section",
                                ", ".join((*SECTIONS, "poison[i]")))
        cls = SECTIONS[section]
        names = [f.name for f in fields(cls) if f.name != "poison"]
        if name not in names:
            raise ScenarioError(source, key, "unknown key" + _near(key), ", ".join(names))
        return key
    if key in {f.name for f in fields(Params)}:
        return f"params.{key}"
    owners = [s for s in ("stubs", "world", "baselines")
              if key in {f.name for f in fields(SECTIONS[s])} and key != "poison"]
    if len(owners) == 1:
        return f"{owners[0]}.{key}"
    if len(owners) > 1:
        raise ScenarioError(source, key, "is ambiguous: it names "
                            + " and ".join(f"{o}.{key}" for o in owners),
                            " | ".join(f"{o}.{key}" for o in owners))
    raise ScenarioError(source, key, "unknown key" + _near(key),
                        "params.<name>, world.<name>, stubs.<name>, baselines.<name>, "
                        "poison[i].<name>, "
                        "a top-level key, or a bare Params field name")


def _allowed_text(cls: type, name: str) -> str:
    if cls is PoisonSpec and name == "kind":
        return " | ".join(POISON_KINDS)
    return "see docs/scenario_format.md"
