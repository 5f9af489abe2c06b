"""The extended-URDF loader on hand-written mechanisms (not the shipped robots).

Four-bar and five-bar linkages written in the same convention as the robots:
spanning-tree URDF + closures mapping. Expected ranks and mobilities follow
from Gruebler's count for planar loops; closure Jacobians and biases are
checked against central finite differences of the closure residual.
"""

import numpy as np
import pinocchio as pin
import pytest

from pkm_control.description import closure_bias, closure_jacobian, closure_residual, load_model
from pkm_control.errors import InvalidModelError


def _link(name, length=None, mass=1.0):
    inertial = ""
    if length is not None:
        inertial = (f'<inertial><origin xyz="{length / 2} 0 0"/><mass value="{mass}"/>'
                    f'<inertia ixx="1e-3" iyy="{mass * length**2 / 12}" izz="{mass * length**2 / 12}" '
                    'ixy="0" ixz="0" iyz="0"/></inertial>')
    return f'<link name="{name}">{inertial}</link>'


def _rev(name, parent, child, xyz, axis="0 0 1"):
    return (f'<joint name="{name}" type="revolute"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="{xyz}"/><axis xyz="{axis}"/><limit lower="-6" upper="6" effort="1" velocity="1"/></joint>')


def _fixed(name, parent, child, xyz):
    return (f'<joint name="{name}" type="fixed"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="{xyz}"/></joint>')


# four-bar: ground d = 0.4, crank a = 0.1, coupler b = 0.35, rocker c = 0.3, cut at coupler-rocker joint
FOUR_BAR = "".join([
    '<robot name="four_bar">', _link("base"), _link("crank", 0.1), _link("coupler", 0.35), _link("rocker", 0.3),
    _link("coupler_tip"), _link("rocker_tip"),
    _rev("crank_joint", "base", "crank", "0 0 0"), _rev("coupler_joint", "crank", "coupler", "0.1 0 0"),
    _fixed("coupler_tip_joint", "coupler", "coupler_tip", "0.35 0 0"),
    _rev("rocker_joint", "base", "rocker", "0.4 0 0"),
    _fixed("rocker_tip_joint", "rocker", "rocker_tip", "0.3 0 0"), "</robot>"])

# five-bar: two actuated cranks 0.3 apart, distal links meeting at one point (cut there)
FIVE_BAR = "".join([
    '<robot name="five_bar">', _link("base"), _link("l1", 0.2), _link("l2", 0.2), _link("d1", 0.3),
    _link("d2", 0.3), _link("d1_tip"), _link("d2_tip"),
    _rev("a1", "base", "l1", "0 0 0"), _rev("p1", "l1", "d1", "0.2 0 0"), _fixed("t1", "d1", "d1_tip", "0.3 0 0"),
    _rev("a2", "base", "l2", "0.3 0 0"), _rev("p2", "l2", "d2", "0.2 0 0"), _fixed("t2", "d2", "d2_tip", "0.3 0 0"),
    "</robot>"])


def _fd_jacobian(clm, data, q, h=1e-6):
    cols = []
    for i in range(clm.model.nv):
        e = np.zeros(clm.model.nv)
        e[i] = h
        cols.append((closure_residual(clm, data, q + e) - closure_residual(clm, data, q - e)) / (2 * h))
    return np.column_stack(cols)


@pytest.mark.parametrize("axes,rows", [("xyz", 3), (["x", "y"], 2)])
def test_four_bar_rank_and_mobility(axes, rows):
    clm = load_model(FOUR_BAR, {"closures": [{"name": "cut", "type": "point", "frames": ["coupler_tip", "rocker_tip"],
                                              "axes": list(axes)}],
                                "actuated_joints": ["crank_joint"]})
    assert clm.model.nv == 3 and clm.n_constraints == rows
    data = clm.create_data()
    rng = np.random.default_rng(0)
    for _ in range(20):
        q = rng.uniform(-np.pi, np.pi, 3)
        K = closure_jacobian(clm, data, q)
        assert K.shape == (rows, 3)
        np.testing.assert_allclose(K, _fd_jacobian(clm, data, q), atol=1e-9)
        # planar loop: two independent closure equations whatever the rows, so one DoF
        assert np.linalg.matrix_rank(K, tol=1e-9) == 2
        assert clm.model.nv - np.linalg.matrix_rank(K, tol=1e-9) == 1


def test_four_bar_assembled_bias():
    """At an assembled state with consistent rates, K v = 0 and K a + Kdot v = 0; Kdot v matches FD."""
    clm = load_model(FOUR_BAR, {"closures": [{"name": "cut", "type": "point", "frames": ["coupler_tip", "rocker_tip"],
                                              "axes": ["x", "y"]}],
                                "actuated_joints": ["crank_joint"]})
    data = clm.create_data()
    # assemble by Newton on the passive joints for crank angle 0.7
    q = np.array([0.7, 0.5, 1.5])
    for _ in range(50):
        r = closure_residual(clm, data, q)
        K = closure_jacobian(clm, data, q)
        q[1:] -= np.linalg.solve(K[:, 1:], r)
    assert np.abs(closure_residual(clm, data, q)).max() < 1e-13
    K = closure_jacobian(clm, data, q)
    v = np.concatenate([[1.3], -np.linalg.solve(K[:, 1:], K[:, :1] @ [1.3])])
    assert np.abs(K @ v).max() < 1e-12
    h = 1e-6
    kdot_v = (closure_jacobian(clm, data, q + h * v) @ v - closure_jacobian(clm, data, q - h * v) @ v) / (2 * h)
    np.testing.assert_allclose(closure_bias(clm, data, q, v), kdot_v, atol=1e-8)


def test_five_bar_two_dof():
    clm = load_model(FIVE_BAR, {"closures": [{"name": "cut", "type": "point", "frames": ["d1_tip", "d2_tip"],
                                              "axes": ["x", "y"]}],
                                "actuated_joints": ["a1", "a2"]})
    assert clm.dof == 2 and list(clm.passive_idx) == [clm.joint_index["p1"], clm.joint_index["p2"]]
    data = clm.create_data()
    rng = np.random.default_rng(1)
    for _ in range(20):
        q = rng.uniform(-np.pi, np.pi, 4)
        K = closure_jacobian(clm, data, q)
        np.testing.assert_allclose(K, _fd_jacobian(clm, data, q), atol=1e-9)
        assert np.linalg.matrix_rank(K, tol=1e-9) == 2


def test_frame_and_coupling_closures():
    """A 6-D frame closure between two coaxial revolutes and a gear coupling, rows checked against FD."""
    urdf = "".join(['<robot name="pair">', _link("base"), _link("a", 0.1), _link("b", 0.1),
                    _rev("ja", "base", "a", "0 0 0"), _rev("jb", "base", "b", "0 0 0"), "</robot>"])
    clm = load_model(urdf, {"closures": [{"type": "frame", "frames": ["a", "b"]},
                                         {"type": "coupling", "joints": ["jb", "ja"], "ratio": 2.0, "offset": 0.1}],
                            "actuated_joints": ["ja"]})
    data = clm.create_data()
    q = np.array([0.3, -0.2])
    r = closure_residual(clm, data, q)
    np.testing.assert_allclose(r, [0, 0, 0, 0, 0, 0.5, -0.2 - 0.6 - 0.1], atol=1e-15)
    np.testing.assert_allclose(closure_jacobian(clm, data, q), _fd_jacobian(clm, data, q), atol=1e-9)


@pytest.mark.parametrize("spec,message", [
    ({"closures": [{"type": "point", "frames": ["coupler_tip", "nowhere"]}], "actuated_joints": ["crank_joint"]},
     "nowhere"),
    ({"closures": [{"type": "bogus"}], "actuated_joints": ["crank_joint"]}, "bogus"),
    ({"closures": [], "actuated_joints": ["no_such_joint"]}, "no_such_joint"),
    ({"closures": []}, "actuated_joints"),
])
def test_bad_specs_are_named(spec, message):
    with pytest.raises(InvalidModelError, match=message):
        load_model(FOUR_BAR, spec)


def test_continuous_joint_rejected():
    urdf = FOUR_BAR.replace('name="crank_joint" type="revolute"', 'name="crank_joint" type="continuous"')
    with pytest.raises(InvalidModelError, match="crank_joint"):
        load_model(urdf, {"closures": [], "actuated_joints": ["crank_joint"]})


def test_gravity_from_spec():
    clm = load_model(FOUR_BAR, {"closures": [], "actuated_joints": ["crank_joint"], "gravity": [0, -9.81, 0]})
    np.testing.assert_array_equal(clm.model.gravity.linear, [0, -9.81, 0])
    assert isinstance(clm.model, pin.Model)
