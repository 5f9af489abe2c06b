"""Every shipped description: config completeness, xacro on its own, URDF content, closures.

Checks what the issue asks of each config/<robot>.yaml and urdf/<robot>.urdf.xacro,
for every robot and variant, from the files themselves.
"""

import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin
import pytest
import xacro

from pkm_control.benchmarks.speed import robot_list
from pkm_control.description import closure_residual, load_robot, robot_config
from pkm_control.kinematics import robot_kinematics
from pkm_control.description.paths import urdf_xacro_path

ROBOTS = robot_list()
IDS = [f"{r}-{v}" if v else r for r, v in ROBOTS]


@pytest.mark.parametrize("robot,variant", ROBOTS, ids=IDS)
def test_config_has_every_section(robot, variant):
    cfg = robot_config(robot, variant)
    for key in ("kinematics", "task_space", "gravity", "platform_joints", "actuated_joints", "closures", "home",
                "demo_poses", "workspace", "actuators", "friction", "sources"):
        assert key in cfg, f"{robot}: config lacks '{key}'"
    n_act = len(cfg["actuated_joints"])
    for key in ("force_limit", "stiffness"):
        v = np.broadcast_to(np.asarray(cfg["actuators"][key], float), (n_act,))
        assert np.all(v > 0), f"{robot}: actuators.{key} must be positive"
    assert len(cfg["demo_poses"]) >= 3


@pytest.mark.parametrize("robot,variant", ROBOTS, ids=IDS)
def test_xacro_alone_with_default_config(robot, variant):
    """`xacro urdf/<robot>.urdf.xacro variant:=V` (no config:=) gives the same URDF as the loader."""
    doc = xacro.process_file(str(urdf_xacro_path(robot)), mappings={"variant": variant} if variant else {})
    clm = load_robot(robot, variant)
    assert pin.buildModelFromXML(doc.toxml()).nq == clm.model.nq


@pytest.mark.parametrize("robot,variant", ROBOTS, ids=IDS)
def test_urdf_bodies_shapes_limits(robot, variant):
    clm = load_robot(robot, variant)
    root = ET.fromstring(clm.urdf)
    links = {lk.get("name"): lk for lk in root.findall("link")}
    for lk in links.values():
        inertial = lk.find("inertial")
        if inertial is None:
            continue
        m = float(inertial.find("mass").get("value"))
        a = inertial.find("inertia").attrib
        inertia = np.array([[float(a["ixx"]), float(a["ixy"]), float(a["ixz"])],
                            [float(a["ixy"]), float(a["iyy"]), float(a["iyz"])],
                            [float(a["ixz"]), float(a["iyz"]), float(a["izz"])]])
        ev = np.linalg.eigvalsh(inertia)
        assert m > 0 and ev.min() >= -1e-12, f"{lk.get('name')}: mass {m}, inertia eigenvalues {ev}"
        # triangle inequality of principal moments: a physical body
        assert ev[0] + ev[1] >= ev[2] * (1 - 1e-9), f"{lk.get('name')}: non-physical inertia {ev}"
        # a body with mass is drawn
        assert lk.find("visual") is not None and lk.find("collision") is not None, lk.get("name")
    for j in root.findall("joint"):
        if j.get("type") in ("revolute", "prismatic"):
            lim = j.find("limit")
            assert lim is not None and float(lim.get("lower")) < float(lim.get("upper")), j.get("name")
    # every body with mass hangs on a moving joint: the count of massive links per robot
    assert sum(lk.find("inertial") is not None for lk in links.values()) >= 1 + len(clm.actuated_joints)


@pytest.mark.parametrize("robot,variant", ROBOTS, ids=IDS)
def test_closures_hold_at_home_and_mobility(robot, variant):
    kin = robot_kinematics(robot, variant)
    clm = kin.model
    home = kin.task.pose(np.asarray(clm.config["home"], float))
    q = kin.inverse(home).q
    data = clm.create_data()
    assert np.abs(closure_residual(clm, data, q)).max() <= 1e-12
    from pkm_control.description import closure_jacobian
    K = closure_jacobian(clm, data, q)
    # mobility nv - rank K equals the task dimension: the closures make the tree a mechanism with
    # exactly the platform's degrees of freedom
    assert clm.model.nv - np.linalg.matrix_rank(K, tol=1e-9) == kin.task.dim


def test_variants_differ_as_described():
    s66, s36 = robot_config("stewart", "6-6"), robot_config("stewart", "3-6")
    assert s66["variant"] == "6-6" and s36["variant"] == "3-6"
    k36 = robot_kinematics("stewart", "3-6")
    clm = k36.model
    data = clm.create_data()
    q = k36.inverse(k36.task.pose(np.asarray(s36["home"], float))).q
    pin.forwardKinematics(clm.model, data, q)
    pin.updateFramePlacements(clm.model, data)
    anchors = np.array([data.oMf[clm.model.getFrameId(f"platform_anchor{i}")].translation for i in range(1, 7)])
    distinct = {tuple(np.round(a, 9)) for a in anchors}
    assert len(distinct) == 3
    red, nonred = load_robot("planar_redundant", "redundant"), load_robot("planar_redundant", "nonredundant")
    assert red.n_actuated == 4 and nonred.n_actuated == 3 and "strut1" not in nonred.joint_names
