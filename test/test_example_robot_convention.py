"""Closed-loop models in the convention of pinocchio's example parallel robots, read as they are.

test/data/three_rrr: a 3-RRR planar manipulator as robot.urdf (spanning tree, revolute joints without a
range) + robot.yaml (closed_loop frame pairs, type 3d, name_mot), plus pkm_control's task keys. The numeric
kinematics family assembles it with no code of its own; its IK is checked against the closed form of a
two-link leg (law of cosines), written here independently.
"""

from pathlib import Path

import numpy as np
import pytest
import yaml

from pkm_control.description import closure_residual, load_model
from pkm_control.errors import InvalidModelError
from pkm_control.kinematics.forward import forward_kinematics
from pkm_control.kinematics.numeric import Kinematics

DATA = Path(__file__).parent / "data" / "three_rrr"
R_A, R_B, L1, L2 = 0.5, 0.1, 0.3, 0.3       # the geometry written in robot.urdf


def _load(**changes):
    spec = yaml.safe_load((DATA / "robot.yaml").read_text())
    spec.update(changes)
    return load_model((DATA / "robot.urdf").read_text(), spec)


def _closed_form(x, y, alpha):
    """Motor and elbow angles of each leg: the leg frame sits at A_i with x towards the centre; the elbow-right
    branch puts the motor acos((l1^2 + d^2 - l2^2) / (2 l1 d)) off the line A_i B_i."""
    out = []
    for i in range(3):
        a = np.radians(90 + 120 * i)
        A = R_A * np.array([np.cos(a), np.sin(a)])
        B = np.array([x, y]) + R_B * np.array([np.cos(a + alpha), np.sin(a + alpha)])
        d = np.linalg.norm(B - A)
        line = np.arctan2(*(B - A)[::-1]) - (a + np.pi)
        motor = line + np.arccos((L1 ** 2 + d ** 2 - L2 ** 2) / (2 * L1 * d))
        elbow = -(np.pi - np.arccos((L1 ** 2 + L2 ** 2 - d ** 2) / (2 * L1 * L2)))
        out.append((np.angle(np.exp(1j * motor)), elbow))
    return out


def test_reads_the_convention_and_unlimited_revolutes():
    clm = _load()
    assert [(c.name, c.type, c.axes, c.frames) for c in clm.closures] == [
        (f"closure{i}", "point", (0, 1, 2), (f"leg{i + 1}_tip", f"platform_anchor{i + 1}")) for i in range(3)]
    assert clm.actuated_joints == ("leg1_motor", "leg2_motor", "leg3_motor")
    lo, hi = clm.model.lowerPositionLimit, clm.model.upperPositionLimit
    for name in clm.joint_names:
        i = clm.joint_index[name]
        if name in ("platform_x", "platform_y"):         # prismatic joints with their stated range
            assert (lo[i], hi[i]) == (-0.3, 0.3)
        else:                                             # revolutes whose <limit> gives no range
            assert (lo[i], hi[i]) == (-np.inf, np.inf), name


def test_numeric_family_assembles_it():
    """Assembly at home, mobility 3 with no idle motion, IK against the closed form on the elbow-right
    branch, FK back from the motors, all with the joint-limit check on (a [0, 0] range would refuse every pose)."""
    kin = Kinematics(_load())
    clm = kin.model
    assert np.abs(closure_residual(clm, clm.create_data(), kin.reference)).max() <= kin.tol     # 1e-12 m
    mob = kin.mobility()
    assert mob.dof == 3 and mob.idle == ()
    rng = np.random.default_rng(3)
    for x, y, alpha in rng.uniform([-0.05, -0.05, -0.3], [0.05, 0.05, 0.3], (6, 3)):
        pose = kin.task.pose([x, y, alpha])
        q = kin.inverse(pose).q
        for i, (motor, elbow) in enumerate(_closed_form(x, y, alpha)):
            assert abs(q[clm.joint_index[f"leg{i + 1}_motor"]] - motor) < 1e-9
            assert abs(q[clm.joint_index[f"leg{i + 1}_elbow"]] - elbow) < 1e-9
        fk = forward_kinematics(kin, q[clm.actuated_idx], kin.task.pose([0.0, 0.0, 0.0]))
        np.testing.assert_allclose(kin.task.coordinates(fk.pose), [x, y, alpha], atol=1e-9)


@pytest.mark.parametrize("changes,message", [
    ({"closures": []}, "both closed_loop .* and closures"),
    ({"type": ["3d", "3d"]}, r"type: expected 3 of '3d' \| '6d' \(one per closed_loop pair\)"),
    ({"type": ["3d", "2d", "3d"]}, r"type\[1\]: expected '3d' or '6d', got 2d"),
])
def test_bad_convention_is_named(changes, message):
    with pytest.raises(InvalidModelError, match=message):
        _load(**changes)
