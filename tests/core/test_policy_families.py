"""The policy families' registry (`wmtsim.core.policies`, the field's records in
`wmtsim.core.field_policies`): one record per family,
read by the kernels' dispatch, the twin and the studies; an unregistered family is an
error everywhere, never another family's rules."""

from __future__ import annotations

import importlib
import inspect
from dataclasses import replace

import pytest

from wmtsim.core import field_policies as fp
from wmtsim.core import policies as pf
from wmtsim.core.field_knobs import Baselines
from wmtsim.core.field_policies import CAPPED, OWN, QUEUE, Family, ItemCap
from wmtsim.core.knob_readers import READS, Trait, check_narrowing, from_families
from wmtsim.core.policies import FAMILIES, POLICIES, SEL_BASELINE, check_families, family_of
from wmtsim.core.stubs import Stubs
from wmtsim.studies.field.parity import item_cap, ranking_signal
from wmtsim.studies.field.robustness import _own_cap


def _resolve(path: str) -> object:
    """The object at a dotted path (a module's function, or a class's method)."""
    parts = path.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for name in parts[cut:]:
            obj = getattr(obj, name)
        return obj
    raise AssertionError(path)


def _field_families() -> list[Family]:
    used = {p.family for p in POLICIES.values() if p.selection == SEL_BASELINE}
    return [f for f in FAMILIES if f.code in used]


def test_every_policy_row_is_of_a_registered_family_and_every_family_has_policies() -> None:
    codes = {f.code for f in FAMILIES}
    assert {p.family for p in POLICIES.values()} == codes


def test_every_family_names_its_engine_step_and_twin_and_both_exist() -> None:
    for fam in FAMILIES:
        assert callable(_resolve(fam.engine)), fam.name
        assert callable(_resolve(fam.twin)), fam.name


def test_every_field_family_has_a_branch_in_the_kernel_dispatch_and_in_the_twin() -> None:
    """The dispatch compares ``sw.family`` with the family's code and calls its kernel;
    the twin's step calls its method (a family with no branch of its own would fall
    through to another family's rules on both sides, and engine == twin would not see
    it)."""
    from wmtsim.engine.field import dispatch as field
    from wmtsim.twins.field_reference import BaselineMemory

    dispatch = (inspect.getsource(field._baseline_step.py_func)
                + inspect.getsource(field._baseline_retrieve.py_func))
    twin = inspect.getsource(BaselineMemory.step)
    for fam in _field_families():
        consts = [n for n, v in vars(field).items() if n.startswith("FAM_") and v == fam.code]
        assert any(f"== {c}" in dispatch for c in consts), fam.name
        assert fam.engine.rsplit(".", 1)[1] + "(" in dispatch, fam.name
        assert f"self.{fam.twin.rsplit('.', 1)[1]}(" in twin, fam.name


def test_an_unregistered_family_is_an_error_in_the_studies() -> None:
    stray = replace(POLICIES["mem0"], name="stray", family=len(FAMILIES))
    with pytest.raises(ValueError, match="not registered"):
        family_of(stray.family)
    with pytest.raises(ValueError, match="not registered"):
        item_cap(stray, Stubs(top_k=3), Baselines())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not registered"):
        ranking_signal(stray)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not registered"):
        _own_cap(stray)  # type: ignore[arg-type]


def test_a_new_family_is_read_from_its_record(monkeypatch: pytest.MonkeyPatch) -> None:
    """A registered family's item cap, flip and parity row come from its record alone."""
    new = Family(code=len(FAMILIES), name="recent", label="recent items",
                 knobs=("ga_top_k", "own_caps"), item_cap=ItemCap(CAPPED, ("ga_top_k",)),
                 signal=lambda variant, knobs: "recency", engine="x._recent",
                 twin="x.recent")
    check_families((*FAMILIES, new))
    monkeypatch.setattr(pf, "FAMILIES", (*FAMILIES, new))
    pol = replace(POLICIES["mem0"], name="recent", family=new.code)
    assert item_cap(pol, Stubs(top_k=3), Baselines(ga_top_k=5)) == "3"  # type: ignore[arg-type]
    assert item_cap(pol, Stubs(top_k=3),  # type: ignore[arg-type]
                    Baselines(ga_top_k=5, own_caps=True)) == "5"
    assert _own_cap(pol)  # type: ignore[arg-type]
    assert ranking_signal(pol) == "recency"  # type: ignore[arg-type]
    assert "baselines.ga_top_k" in from_families((*FAMILIES, new))


def test_a_family_without_its_declarations_is_refused() -> None:
    base = {"code": len(FAMILIES), "name": "recent", "label": "recent", "knobs": ("top_k",),
            "item_cap": ItemCap(OWN, ("top_k",)), "signal": lambda v, k: "recency",
            "engine": "x", "twin": "y"}
    for missing in ("item_cap", "signal", "knobs", "engine", "twin", "code"):
        with pytest.raises(TypeError, match=missing):
            Family(**{k: v for k, v in base.items() if k != missing})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="code"):
        check_families((*FAMILIES, Family(**{**base, "code": 3})))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="ranking signal"):
        check_families((*FAMILIES, Family(**{**base, "signal": None})))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not Baselines knobs"):
        check_families((*FAMILIES, Family(**{**base, "knobs": ("nope",)})))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not Baselines knobs"):  # its cap reads a knob
        check_families((*FAMILIES, Family(**{**base, "knobs": ()})))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="rule"):
        ItemCap("newest")
    with pytest.raises(ValueError, match="knobs"):
        ItemCap(QUEUE, ("top_k",))


def test_reads_may_only_narrow_a_family_declaration() -> None:
    assert READS["baselines.capacity"].test(POLICIES["traceretain_z"])  # from Family.knobs
    check_narrowing(READS)
    wider = {"baselines.capacity": Trait("the field", lambda p: p.selection == SEL_BASELINE)}
    with pytest.raises(ValueError, match="do not list"):
        check_narrowing(wider)


def test_item_caps_mirror_the_engine_rules() -> None:
    b = Baselines(top_k=0, ga_top_k=5, mb_code_recent=2, mb_code_top_k=2)
    assert fp.TRACERETAIN.cap(0).size(3, b) == 3  # own knob 0: the shared cap
    assert fp.TRACERETAIN.cap(0).size(3, replace(b, top_k=7)) == 7
    assert fp.GENERATIVE.cap(1).size(3, b) == 3  # beneath the shared cap
    assert fp.GENERATIVE.cap(1).size(3, replace(b, own_caps=True)) == 5
    assert fp.MEMORYBANK.cap(2).size(0, b) == 4
    assert fp.MEMGPT.cap(0).size(3, replace(b, own_caps=True)) == 0
    assert not fp.TRACERETAIN.cap(0).reads_own_caps and fp.WINDOW.cap(1).reads_own_caps
