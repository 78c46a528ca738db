"""The scenario file's format: its sections, top-level keys and defaults, and its JSON Schema
(``wmtsim/schemas/scenario.schema.json``), generated from the dataclass fields, types and
knob declarations (`wmtsim.core.knobs`: default, range, doc) of `WorldSpec`, `PoisonSpec`,
`Stubs`, `Params` and the field's knobs; a test asserts the shipped file is current. Loading
is `wmtsim.studies.scenarios.scenario`.
"""

from __future__ import annotations

import json
import types
import typing
from dataclasses import MISSING, fields
from pathlib import Path
from typing import Any

from wmtsim.core.field_knobs import Baselines
from wmtsim.core.knobs import Knob
from wmtsim.core.params import Params
from wmtsim.core.policies import POLICIES
from wmtsim.core.stubs import Stubs
from wmtsim.core.subtask_counts import N_SUBTASK_DISTS
from wmtsim.core.world_spec import MAX_NODES, PoisonSpec, WorldSpec

PAPER_TABLES = ("table4", "table123")


SECTIONS: dict[str, type] = {"world": WorldSpec, "stubs": Stubs, "params": Params,
                             "baselines": Baselines}


TOP_LEVEL = ("name", "description", "n", "seed", "policies", "paper")


SCHEMA_FILE = Path(__file__).resolve().parents[2] / "schemas" / "scenario.schema.json"


SCHEMA_ID = "https://wmtsim.invalid/schemas/scenario.schema.json"


DEFAULT_N = 1000


DEFAULT_SEED = 0


def _type_schema(tp: Any) -> dict[str, Any]:
    origin = typing.get_origin(tp)
    if tp is bool:
        return {"type": "boolean"}
    if tp is int:
        return {"type": "integer"}
    if tp is float:
        return {"type": "number"}
    if tp is str:
        return {"type": "string"}
    if origin is tuple:
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": _type_schema(args[0])}
        return {"type": "array", "prefixItems": [_type_schema(a) for a in args],
                "minItems": len(args), "maxItems": len(args)}
    if origin in (typing.Union, types.UnionType):
        return {"anyOf": [_type_schema(a) for a in typing.get_args(tp)]}
    if tp is type(None):
        return {"type": "null"}
    if isinstance(tp, type) and hasattr(tp, "__dataclass_fields__"):
        return {"$ref": f"#/$defs/{tp.__name__}"}
    raise TypeError(f"no JSON Schema for {tp!r}")


def _add_knob(s: dict[str, Any], spec: Knob) -> None:
    """A knob's declared range (on each item of a ``(min, max)`` pair) and doc."""
    bounds = spec.schema()
    if spec.kind == "int_range":
        for item in s["prefixItems"]:
            item.update(bounds)
    else:
        s.update(bounds)
    if spec.doc:
        s["description"] = spec.doc


def _dataclass_schema(cls: type, skip: tuple[str, ...] = ()) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    props: dict[str, Any] = {}
    required: list[str] = []
    for f in fields(cls):
        if f.name in skip:
            continue
        s = _type_schema(hints[f.name])
        if f.default is not MISSING:
            d = f.default
            s["default"] = list(d) if isinstance(d, tuple) else d
        elif f.default_factory is MISSING:
            required.append(f.name)
        spec = f.metadata.get("knob")
        if isinstance(spec, Knob):
            _add_knob(s, spec)
        props[f.name] = s
    out: dict[str, Any] = {"type": "object", "title": cls.__name__,
                           "description": (cls.__doc__ or "").strip().split("\n\n")[0]
                           .replace("\n", " "),
                           "properties": props, "additionalProperties": False}
    if required:
        out["required"] = required
    return out


def _world_schema() -> dict[str, Any]:
    """`WorldSpec`'s schema; ``n_subtasks`` takes a number, a range or a distribution
    (`WorldSpec.n_subtasks`), and its held probabilities are not a key of the file."""
    out = _dataclass_schema(WorldSpec, skip=("poison", "n_subtasks_p"))
    pair = out["properties"]["n_subtasks"]
    bounds = {"minimum": 1, "maximum": MAX_NODES}
    pair["anyOf"] = [
        {"type": "integer", **bounds},
        {"type": "array", "prefixItems": pair.pop("prefixItems"), "minItems": 2,
         "maxItems": 2},
        {"type": "object", "additionalProperties": False, "required": ["values", "p"],
         "properties": {"values": {"type": "array", "minItems": 1,
                                   "items": {"type": "integer", **bounds}},
                        "p": {"type": "array", "items": {"type": "number", "minimum": 0,
                                                         "maximum": 1}}}},
        {"type": "object", "additionalProperties": False,
         "required": ["dist", "mean", "min", "max"],
         "properties": {"dist": {"enum": list(N_SUBTASK_DISTS)},
                        "mean": {"type": "number", "exclusiveMinimum": 0},
                        "min": {"type": "integer", **bounds},
                        "max": {"type": "integer", **bounds}}},
    ]
    for key in ("type", "minItems", "maxItems"):
        pair.pop(key, None)
    return out


def json_schema() -> dict[str, Any]:
    """The scenario format's JSON Schema (draft 2020-12), from the dataclass fields."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "wmtsim scenario",
        "description": "A wmtsim scenario file (TOML); see docs/scenario_format.md. "
                       "Generated by `wmtsim schema scenario` from the dataclasses.",
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "Scenario name (default: file stem)."},
            "description": {"type": "string", "default": ""},
            "n": {"type": "integer", "minimum": 1, "default": DEFAULT_N,
                  "description": "Trajectories per configuration."},
            "seed": {"type": "integer", "minimum": 0, "default": DEFAULT_SEED},
            "policies": {"type": "array", "items": {"enum": list(POLICIES)},
                         "minItems": 1, "uniqueItems": True,
                         "description": "Configurations `compare` runs (default: the "
                                        "paper table's, else linear and wmt)."},
            "paper": {"enum": list(PAPER_TABLES),
                      "description": "Paper table shown beside the results."},
            "world": _world_schema(),
            "stubs": _dataclass_schema(Stubs),
            "params": _dataclass_schema(Params),
            "baselines": _dataclass_schema(Baselines),
            "poison": {"type": "array", "items": {"$ref": "#/$defs/PoisonSpec"}},
        },
        "additionalProperties": False,
        "$defs": {"PoisonSpec": _dataclass_schema(PoisonSpec)},
    }


def schema_text() -> str:
    return json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"


def write_schema(path: Path = SCHEMA_FILE) -> Path:
    """Regenerate the shipped schema file."""
    path.write_text(schema_text(), encoding="utf-8")
    return path


if __name__ == "__main__":  # `make docs` (scripts/docs.py): the package's own copy
    print(f"wrote {write_schema()}")
