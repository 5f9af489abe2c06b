"""The declared ranges of the run-time parameters (control/settings.py RANGES), ROS-free: every numeric run-time key
has one, the shipped settings lie inside it, and ``validate`` refuses a value beyond it (per element of a list)
with a reason naming the parameter, the value and the range."""

import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

from pkm_control.control.settings import CHOICE_KEYS, RANGES, RUNTIME_KEYS, load_settings, validate
from pkm_control.errors import InvalidInputError

N = 6            # palida's actuated joints
RUNTIME = sorted({k for keys in RUNTIME_KEYS.values() for k in keys})


def test_every_run_time_key_has_a_range_or_a_set_of_choices():
    for key in RUNTIME:
        assert (key in RANGES) != (key in CHOICE_KEYS), key
        if key in RANGES:
            r = RANGES[key]
            assert math.isfinite(r.low) and math.isfinite(r.high) and r.low < r.high and r.reason, key


@pytest.mark.parametrize("robot", ["palida", "stewart", "delta", "planar_redundant"])
def test_the_shipped_settings_lie_inside_their_ranges(robot):
    s = load_settings(robot, "cf_rb_friction")
    for key in RANGES.keys() & s.keys():
        for x in np.atleast_1d(s[key]):
            assert RANGES[key].contains(float(x)), (robot, key, x)


def test_the_gain_bounds_are_the_discrete_loops_stability_limits():
    """kp dt^2 / m < 4 and kd dt / m < 2 at 2 kHz for m = 1000 (the reasons' figures), derived here again."""
    dt, m = 1 / 2000.0, 1000.0
    assert RANGES["kp"].high == pytest.approx(4 * m / dt ** 2)
    assert RANGES["kd"].high == pytest.approx(2 * m / dt)
    assert RANGES["hold_kp"] == RANGES["kp"] and RANGES["hold_kd"] == RANGES["kd"]


def test_kp_1e30_is_refused_naming_the_parameter_the_value_and_the_range():
    with pytest.raises(InvalidInputError) as e:
        validate("kp", 1e30, N)
    assert "'kp' = 1e+30" in str(e.value) and RANGES["kp"].text() in str(e.value)
    with pytest.raises(InvalidInputError, match=r"'kd' = 1e\+08 is outside"):     # one element of a list
        validate("kd", [300.0] * 5 + [1e8], N)
    with pytest.raises(InvalidInputError, match="'approach_speed' = 0 is outside its range \\(0, 10\\]"):
        validate("approach_speed", 0.0, N)


def _scalar_or_list(key, x):
    return x if key not in ("kp", "kd", "hold_kp", "hold_kd", "force_limit") else [x] * N


@given(key=st.sampled_from(sorted(RANGES)), x=st.floats(allow_nan=False, allow_infinity=False, width=64))
def test_validate_accepts_exactly_the_range(key, x):
    r = RANGES[key]
    value = _scalar_or_list(key, x)
    if r.contains(x):
        out = validate(key, value, N)
        assert np.allclose(out, value)
    else:
        with pytest.raises(InvalidInputError, match=key):
            validate(key, value, N)


@given(key=st.sampled_from(sorted(RANGES)), scale=st.floats(1.0 + 1e-9, 1e290))
def test_beyond_the_upper_bound_is_refused(key, scale):
    with pytest.raises(InvalidInputError, match="outside its range"):
        validate(key, _scalar_or_list(key, RANGES[key].high * scale), N)
