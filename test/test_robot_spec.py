"""The typed robot spec (description/spec.py, issue 21 §1): every shipped robot parses without a warning; a missing
or wrong key is one InvalidModelError line naming the file, the key and what was expected; an unknown key is a
warning naming it and the file; the spec is immutable; its home is the YAML's home, converted once."""

import copy
import dataclasses
import math
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
import yaml
from scipy.spatial.transform import Rotation

from pkm_control.description import (RobotSpecWarning, load_robot, parse_spec, robot_config, robot_names, robot_urdf,
                                     robot_variants)
from pkm_control.description.paths import config_path
from pkm_control.description.spec import TASK_SPACE_DIM
from pkm_control.errors import InvalidModelError
from pkm_control.kinematics import TaskSpace, robot_kinematics

ROBOTS = [(r, v) for r in robot_names() for v in robot_variants(r)]
THREE_RRR = Path(__file__).parent / "data" / "three_rrr" / "robot.yaml"


def _parse(mapping, source="config/test.yaml"):
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # a shipped robot has no unknown key
        return parse_spec(mapping, source)


@pytest.mark.parametrize("robot,variant", ROBOTS)
def test_every_shipped_robot_parses_without_warning(robot, variant):
    spec = _parse(robot_config(robot, variant), str(config_path(robot)))
    assert spec.task_space in TASK_SPACE_DIM and spec.home.shape == (spec.task_dim,)
    assert spec.actuators.force_limit.shape == spec.actuators.stiffness.shape == (len(spec.actuated_joints),)
    assert spec.workspace is not None and np.all(spec.workspace.lower <= spec.workspace.upper)
    assert spec.end_stops.natural_frequency > 0 and spec.friction and spec.closures
    assert all(x.shape == (spec.task_dim,) for x in spec.demo_poses)


def test_example_robot_convention_parses():
    spec = _parse(yaml.safe_load(THREE_RRR.read_text()), str(THREE_RRR))
    assert spec.actuated_joints == ("leg1_motor", "leg2_motor", "leg3_motor")
    assert [(c.name, c.type, c.axes) for c in spec.closures] == [(f"closure{i}", "point", (0, 1, 2)) for i in range(3)]
    assert spec.kinematics == "numeric" and spec.task_space == "planar" and spec.assembly_guess["leg1_elbow"] == -1.7


def test_task_space_dimensions_match_the_kinematics():
    assert dict(TASK_SPACE_DIM) == {k: len(v) for k, v in TaskSpace.COORDS.items()}


def _expected_home(text: dict):
    """(p, R) of the YAML's home, written from the task-space conventions (docs/add-a-robot.md), not the code."""
    x, kind = [float(v) for v in text["home"]], text.get("task_space")
    if kind == "spatial":       # R = Rz(yaw) Ry(pitch) Rx(roll)
        return np.array(x[:3]), Rotation.from_euler("ZYX", [x[5], x[4], x[3]]).as_matrix()
    if kind == "translation":
        return np.array(x), np.eye(3)
    if kind == "xy":
        return np.array([x[0], x[1], 0.0]), np.eye(3)
    assert kind == "planar"     # alpha about +z, or about -z with alpha_sign -1
    return np.array([x[0], x[1], 0.0]), Rotation.from_rotvec([0, 0, text.get("alpha_sign", 1) * x[2]]).as_matrix()


@pytest.mark.parametrize("robot,variant", ROBOTS)
def test_home_is_the_yaml_home(robot, variant):
    text = yaml.safe_load(config_path(robot).read_text())
    kin = robot_kinematics(robot, variant)
    assert kin.model.spec.home.tolist() == [float(v) for v in text["home"]]
    p, R = _expected_home(text)
    home = kin.home_pose()
    assert np.allclose(home.position, p, atol=1e-15) and np.allclose(home.rotation, R, atol=1e-15)


def test_spec_is_immutable():
    spec = load_robot("palida").spec
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.home = np.zeros(6)
    for array in (spec.home, spec.gravity, spec.workspace.lower, spec.actuators.force_limit, spec.demo_poses[0]):
        with pytest.raises(ValueError, match="read-only"):
            array[0] = 1.0
    for mapping in (spec.limits, spec.friction, spec.friction["prismatic"], spec.blocks, spec.blocks["platform"],
                    spec.raw, spec.assembly_guess):
        with pytest.raises(TypeError):
            mapping["x"] = 1.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.closures[0].name = "x"
    other = spec.with_friction({"prismatic": {"coulomb": 1.0}})
    assert other.friction["prismatic"]["coulomb"] == 1.0 == other.raw["friction"]["prismatic"]["coulomb"]
    assert spec.friction["prismatic"]["coulomb"] == (22.0, 25.0, 20.0, 24.0, 21.0, 23.0)


# --------------------------------------------------------------------------- bad inputs

def _set(path, value):
    def change(cfg):
        *parents, last = path
        for key in parents:
            cfg = cfg[key]
        if value is _DELETE:
            del cfg[last]
        else:
            cfg[last] = value(cfg[last]) if callable(value) else value
    return change


_DELETE = object()
NAN = float("nan")

#: (change, key named in the message, what is expected); each applies to every shipped robot
BAD = [
    (_set(["actuated_joints"], _DELETE), "actuated_joints", "missing"),
    (_set(["home"], lambda h: h[:-1]), "home", "expected {dim} numbers (task_space {ts}), got {short}"),
    (_set(["home"], lambda h: [*h, 0.0]), "home", "expected {dim} numbers (task_space {ts}), got {long}"),
    (_set(["home"], "home"), "home", "expected {dim} numbers"),
    (_set(["home"], lambda h: [NAN, *h[1:]]), "home[0]", "expected a finite number, got nan"),
    (_set(["home"], lambda h: [*h[:-1], True]), "home[{last}]", "expected a number, got True"),
    (_set(["demo_poses"], lambda p: [p[0][:-1]]), "demo_poses[0]", "expected {dim} numbers"),
    (_set(["workspace", "lower"], _DELETE), "workspace", "expected lower and upper"),
    (_set(["workspace", "upper"], lambda u: [math.inf, *u[1:]]), "workspace.upper[0]", "expected a finite number"),
    (_set(["workspace"], lambda w: {"lower": w["upper"], "upper": w["lower"]}), "workspace", "lower <= upper"),
    (_set(["gravity"], [0.0, -9.81]), "gravity", "expected 3 numbers (gx gy gz), got 2"),
    (_set(["gravity"], -9.81), "gravity", "expected 3 numbers"),
    (_set(["task_space"], "spherical"), "task_space", "expected spatial | translation | planar | xy"),
    (_set(["kinematics"], 6), "kinematics", "expected a name"),
    (_set(["closures"], 3), "closures", "expected a list of closures"),
    (_set(["closures"], lambda c: [{**c[0], "type": "ball"}, *c[1:]]), "closures[0].type",
     "expected point, frame or coupling"),
    (_set(["actuators", "force_limit"], lambda f: [1.0] * 9), "actuators.force_limit",
     "expected {nact} numbers (one per actuated joint), got 9"),
    (_set(["actuators", "stiffness"], -1.0), "actuators.stiffness", "expected a finite number > 0"),
    (_set(["end_stops", "damping_ratio"], _DELETE), "end_stops.damping_ratio", "expected a number"),
    (_set(["end_stops", "natural_frequency"], "fast"), "end_stops.natural_frequency", "expected a number"),
    (_set(["friction"], lambda f: {**f, next(iter(f)): {"coulomb": -1.0}}), "friction.{role}.coulomb",
     "expected a finite number >= 0"),
    (_set(["limits"], lambda lim: {**lim, "extra": [1.0, 0.0]}), "limits.extra", "expected lower <= upper"),
    (_set(["limits"], lambda lim: {**lim, "extra": [0.0, NAN]}), "limits.extra[1]", "expected a finite number"),
    (_set(["alpha_sign"], 2), "alpha_sign", "expected 1 or -1"),
]


def _mutated(robot, variant, change):
    cfg = copy.deepcopy(robot_config(robot, variant))
    cfg.setdefault("alpha_sign", 1)
    change(cfg)
    return cfg


@pytest.mark.parametrize("robot,variant", ROBOTS)
@pytest.mark.parametrize("case", range(len(BAD)))
def test_bad_key_is_one_line_naming_file_key_and_expectation(robot, variant, case):
    change, key, expected = BAD[case]
    spec = robot_config(robot, variant)
    ts = spec["task_space"]
    fields = dict(dim=TASK_SPACE_DIM[ts], ts=ts, short=TASK_SPACE_DIM[ts] - 1, long=TASK_SPACE_DIM[ts] + 1,
                  last=TASK_SPACE_DIM[ts] - 1, nact=len(spec["actuated_joints"]), role=next(iter(spec["friction"])))
    source = str(config_path(robot))
    with pytest.raises(InvalidModelError) as err:
        parse_spec(_mutated(robot, variant, change), source)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"{source}: {key.format(**fields)}: "), message
    assert expected.format(**fields) in message, message


def test_the_issue_example_message():
    cfg = dict(robot_config("palida"), home=[0.0, 0.0, -0.85, 0.0, 0.0])
    with pytest.raises(InvalidModelError, match=r"^config/palida\.yaml: home: expected 6 numbers \(task_space "
                                                r"spatial\), got 5$"):
        parse_spec(cfg, "config/palida.yaml")


@pytest.mark.parametrize("robot,variant", ROBOTS)
def test_unknown_keys_warn_naming_them_and_the_file(robot, variant):
    cfg = dict(robot_config(robot, variant), homee=[0.0], frictions={})
    with pytest.warns(RobotSpecWarning, match=r"^config/x\.yaml: unknown keys frictions, homee \(ignored"):
        spec = parse_spec(cfg, "config/x.yaml")
    assert spec.home is not None        # the known keys are still read
    cfg = copy.deepcopy(robot_config(robot, variant))
    role = next(iter(cfg["friction"]))
    cfg["friction"][role]["stribeck"] = 0.1
    cfg["workspace"]["centre"] = [0.0]
    with pytest.warns(RobotSpecWarning) as record:
        parse_spec(cfg, "config/x.yaml")
    messages = sorted(str(w.message) for w in record)
    assert messages[0].startswith(f"config/x.yaml: friction.{role}: unknown keys stribeck")
    assert messages[1].startswith("config/x.yaml: workspace: unknown keys centre")


def test_a_robot_of_ones_own_names_its_file(tmp_path):
    """Through load_robot: the message names the user's YAML; an unknown key warns once, at load."""
    (tmp_path / "mybot.urdf").write_text(robot_urdf("five_bar"))
    text = (config_path("five_bar")).read_text()
    (tmp_path / "mybot.yaml").write_text(text.replace("home: [0.0, 0.30]", "home: [0.0, 0.30, 0.1]"))
    where = re.escape(str(tmp_path))
    with pytest.raises(InvalidModelError, match=rf"^{where}/mybot\.yaml: home: expected 2 numbers \(task_space xy\), "
                                                r"got 3$"):
        load_robot(str(tmp_path / "mybot.yaml"))
    (tmp_path / "other.urdf").write_text(robot_urdf("five_bar"))
    (tmp_path / "other.yaml").write_text(text + "\nhome_speed: 1.0\n")
    with pytest.warns(RobotSpecWarning, match=rf"^{where}/other\.yaml: unknown keys home_speed"):
        clm = load_robot(str(tmp_path / "other.yaml"))
    assert clm.spec.home.tolist() == [0.0, 0.3]


def test_numeric_kinematics_without_home_names_the_key():
    from pkm_control.description import load_model
    from pkm_control.kinematics import make_kinematics

    cfg = {k: v for k, v in robot_config("five_bar").items() if k != "home"}
    clm = load_model(robot_urdf("five_bar"), cfg, source="config/five_bar.yaml")
    with pytest.raises(InvalidModelError, match=r"^config/five_bar\.yaml: home: missing \(the numeric kinematics"):
        make_kinematics(clm)
    clm = load_model(robot_urdf("five_bar"), dict(cfg, home=[0.0, 0.3], kinematics="screw"),
                     source="config/five_bar.yaml")
    with pytest.raises(InvalidModelError, match=r"^config/five_bar\.yaml: kinematics: expected one of hexapod_ups \| "
                                                r".* \| numeric, got 'screw'$"):
        make_kinematics(clm)
