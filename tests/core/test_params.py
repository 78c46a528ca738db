"""Params validation (MODEL.md §2–3): every invalid value is refused with a message that
names the field, the value and the allowed range."""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pytest

from wmtsim.core.params import N_PARAMS, Params


def kwargs(name: str, value: object) -> dict[str, Any]:
    return {name: value}


INVALID = [
    # (field, value, words that must appear in the "allowed" part of the message)
    ("rho", 0.0, "(0, 1]"),
    ("rho", -0.1, "(0, 1]"),
    ("rho", 1.0000001, "(0, 1]"),
    ("rho", math.inf, "(0, 1]"),
    ("rho_g", 0.0, "(0, 1]"),
    ("rho_g", 1.5, "(0, 1]"),
    ("M", 0, "an integer in [1, 2^53]"),
    ("M", -2, "an integer in [1, 2^53]"),
    ("M", 2.5, "an integer in [1, 2^53]"),
    ("M", 3.0, "an integer in [1, 2^53]"),
    ("M", True, "an integer in [1, 2^53]"),
    ("M", "3", "an integer in [1, 2^53]"),
    ("u_success", 1.01, "[0, 1]"),
    ("u_failure", -0.01, "[0, 1]"),
    ("u_init_root", 1.5, "[0, 1]"),
    ("u_init_task", -1.0, "[0, 1]"),
    ("u_init_action", 2.0, "[0, 1]"),
    ("u_init_global", -0.5, "[0, 1]"),
    ("u_init_summary", 1.0001, "[0, 1]"),
    ("alpha", -0.1, "[0, inf)"),
    ("beta", -1.0, "[0, inf)"),
    ("gamma", -0.2, "[0, inf)"),
    ("delta", -1e-9, "[0, inf)"),
    ("budget", 0, "an integer in [1, 2^53]"),
    ("budget", 2**53 + 1, "an integer in [1, 2^53]"),
    ("budget", -5, "an integer in [1, 2^53]"),
    ("budget", 10.5, "an integer in [1, 2^53]"),
    ("global_miss_count", -1, "an integer in [0, 2^53]"),
    ("event_resets_m", 1, "true or false"),
]


@pytest.mark.parametrize(("name", "value", "allowed"), INVALID)
def test_invalid_value_names_field_value_and_range(name: str, value: object,
                                                   allowed: str) -> None:
    with pytest.raises(ValueError) as exc:
        Params(**kwargs(name, value))
    msg = str(exc.value)
    assert f"Params.{name}={value!r}" in msg
    assert "allowed" in msg
    assert allowed in msg


@pytest.mark.parametrize("name", ["u_success", "u_failure", "u_init_task", "rho", "rho_g",
                                  "alpha", "beta", "gamma", "delta", "tau_obs"])
def test_nan_is_refused(name: str) -> None:
    with pytest.raises(ValueError, match=rf"Params\.{name}=nan .*NaN is not allowed"):
        Params(**kwargs(name, math.nan))


@pytest.mark.parametrize(("succ", "fail"), [(0.3, 0.3), (0.2, 0.3), (0.0, 1.0)])
def test_success_must_exceed_failure(succ: float, fail: float) -> None:
    with pytest.raises(ValueError) as exc:
        Params(u_success=succ, u_failure=fail)
    msg = str(exc.value)
    assert f"u_success={succ!r}" in msg
    assert f"u_failure={fail!r}" in msg
    assert "greater" in msg


def test_with_rejects_unknown_field() -> None:
    with pytest.raises(ValueError, match=r"unknown parameter.*\bro\b.*allowed: u_success"):
        Params().with_(ro=0.5)


def test_with_validates() -> None:
    with pytest.raises(ValueError, match=re.escape("Params.rho=0.0")):
        Params().with_(rho=0.0)


def test_boundary_values_accepted() -> None:
    p = Params(rho=1.0, rho_g=1.0, M=1, u_success=1.0, u_failure=0.0, alpha=0.0, beta=0.0,
               gamma=0.0, delta=0.0, budget=1, global_miss_count=0, tau_obs=-1.0)
    assert p.rho == 1.0
    assert p.M == 1


def test_defaults_are_the_spec_values() -> None:
    p = Params()
    # MODEL.md §2 table and §3 paper coefficients.
    assert (p.u_success, p.u_failure) == (0.75, 0.30)
    assert (p.u_init_root, p.u_init_task, p.u_init_action, p.u_init_global,
            p.u_init_summary) == (1.00, 0.90, 0.50, 0.60, 0.80)
    assert (p.rho, p.rho_g, p.M) == (0.90, 0.98, 3)
    assert (p.alpha, p.beta, p.gamma, p.delta, p.tau_obs) == (0.60, 0.30, 0.20, 0.20, 0.10)


def test_pack_and_roundtrip() -> None:
    p = Params(rho=0.8, M=5, tau_obs=0.2)
    v = p.pack()
    assert v.dtype.names is not None and len(v.dtype.names) == N_PARAMS
    assert all(v.dtype[k] == np.float64 for k in range(N_PARAMS))
    assert (v.rho, v.M, v.tau_obs) == (0.8, 5.0, 0.2)
    assert Params.from_dict(p.to_dict()) == p


@pytest.mark.parametrize(("name", "value"), [("tau_obs", math.inf), ("tau_obs", -math.inf),
                                              ("alpha", math.inf), ("delta", math.inf)])
def test_infinite_values_refused(name: str, value: float) -> None:
    with pytest.raises(ValueError, match=rf"Params\.{name}="):
        Params(**kwargs(name, value))


@pytest.mark.parametrize(("name", "value"), [("M", np.int64(3)), ("budget", np.int64(100)),
                                              ("rho", np.float32(0.5))])
def test_numpy_scalars_accepted(name: str, value: object) -> None:
    assert getattr(Params(**kwargs(name, value)), name) == value
