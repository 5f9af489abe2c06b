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


# ----------------------------------------------------------------------------- a user's YAML files

def _bombs(tmp_path):
    """100,000 nested [ (the issue's file; a RecursionError of the loader before), and nested block sequences
    ('- - - ...': no bracket to count, the loader's recursion caught)."""
    flow = tmp_path / "flow.yaml"
    flow.write_text("[" * 100_000)
    block = tmp_path / "block.yaml"
    block.write_text("- " * 5000 + "1\n")
    return flow, block


def test_every_loader_refuses_a_deeply_nested_file(tmp_path):
    from pkm_control.control.feedforward import load_parameter_set
    from pkm_control.dynamics import robot_dynamics
    from pkm_control.hardware.canopen_drives import CanopenConfig
    from pkm_control.kinematics import robot_kinematics

    dyn = robot_dynamics("palida")
    names = robot_kinematics("palida").model.actuated_joints
    loaders = {"parameter set": lambda p: load_parameter_set(p, dyn),
               "controller config": lambda p: load_settings("palida", "cf_rb_friction", str(p)),
               "CANopen config": lambda p: CanopenConfig.load(p, names)}
    flow, block = _bombs(tmp_path)
    for what, load in loaders.items():
        with pytest.raises(InvalidInputError, match=f"{what} .* nests 100000 brackets deep \\(limit 32\\)"):
            load(flow)
        with pytest.raises(InvalidInputError, match=f"{what} .* too deeply"):
            load(block)


def test_a_robot_yaml_and_a_large_file_are_refused(tmp_path):
    from pkm_control.description.paths import MAX_YAML_BYTES, read_user_yaml
    from pkm_control.description.robots import robot_variants

    flow, _ = _bombs(tmp_path)
    robot = tmp_path / "mybot.yaml"
    robot.write_text(flow.read_text())
    (tmp_path / "mybot.urdf").write_text("<robot name='mybot'/>")
    with pytest.raises(InvalidInputError, match="robot config .* nests 100000"):
        robot_variants(str(robot))
    big = tmp_path / "big.yaml"
    big.write_text("a: 1\n" + "#" * MAX_YAML_BYTES)
    with pytest.raises(InvalidInputError, match=f"more than {MAX_YAML_BYTES} bytes"):
        read_user_yaml(big, "parameter set")
    quoted = tmp_path / "quoted.yaml"                # brackets inside a string are text, not nesting
    quoted.write_text("a: '" + "[" * 1000 + "'\n")
    assert read_user_yaml(quoted, "parameter set") == {"a": "[" * 1000}
