"""Declarative knobs: every knob declares its default, range and doc once."""

from __future__ import annotations

import typing
from dataclasses import fields

import pytest

from wmtsim.core.field_knobs import Baselines
from wmtsim.core.knobs import Knob, knob_of
from wmtsim.core.params import Params
from wmtsim.core.stubs import Stubs
from wmtsim.core.validation import KnobError
from wmtsim.core.world_spec import PoisonSpec, WorldSpec
from wmtsim.studies.scenarios.schema import json_schema

CLASSES = (Params, Stubs, WorldSpec, PoisonSpec, Baselines)
ANNOTATION = {"bool": bool, "int": int, "real": float, "choice": str,
              "int_range": tuple[int, int]}


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_every_field_is_a_knob_of_its_annotated_kind(cls: type) -> None:
    hints = typing.get_type_hints(cls)
    for f in fields(cls):
        if cls is WorldSpec and f.name in ("poison", "n_subtasks_p"):
            # the injections: a list of PoisonSpec, checked by WorldSpec itself; the
            # probabilities of a distribution of n_subtasks, held beside its support
            continue
        spec = knob_of(cls, f.name)
        assert isinstance(spec, Knob), f.name
        assert hints[f.name] == ANNOTATION[spec.kind], f.name


def test_schema_ranges_come_from_the_declarations() -> None:
    schema = json_schema()
    assert schema["properties"]["stubs"]["properties"]["selector_noise"]["maximum"] == 10.0
    rho = schema["properties"]["params"]["properties"]["rho"]
    assert rho["exclusiveMinimum"] == 0.0 and rho["maximum"] == 1.0
    mb = schema["properties"]["baselines"]["properties"]["mb_threshold"]
    assert mb["exclusiveMinimum"] == 0.0 and mb["exclusiveMaximum"] == 1.0
    forms = schema["properties"]["world"]["properties"]["n_subtasks"]["anyOf"]
    pair = forms[1]["prefixItems"]  # a number, a range, listed probabilities, a named law
    assert all(item["minimum"] == 1 and item["maximum"] == 100_000 for item in pair)
    assert schema["$defs"]["PoisonSpec"]["properties"]["kind"]["enum"][0] == "failed"


def test_knob_error_carries_its_parts() -> None:
    with pytest.raises(KnobError) as info:
        Stubs(p_leak=1.5)
    e = info.value
    assert (e.owner, e.name, e.value, e.allowed) == ("Stubs", "p_leak", 1.5, "[0, 1]")
    assert str(e) == "Stubs.p_leak=1.5 is invalid; allowed: [0, 1]"
