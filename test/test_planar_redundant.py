"""planar_redundant: Wu et al. 2009 (seed 003) 3-DOF planar manipulator, variants redundant / nonredundant.

Reference numbers are computed here from the paper's formulas (eq. 18-25, Tables 1-2) or
from the generic closure model (pinocchio), never from the code under test.
"""

import math
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from pkm_control.description import closure_bias, closure_jacobian, closure_residual, robot_urdf
from pkm_control.errors import InvalidInputError, JointLimitError, UnreachablePoseError
from pkm_control.kinematics import Pose, robot_kinematics
from pkm_control.kinematics.forward import forward_kinematics
from pkm_control.kinematics.workspace import coords_to_arrays, random_poses

VARIANTS = ["redundant", "nonredundant"]
# Wu Table 1 (mm -> m) and Table 2 (kg)
D, L, L5, L6 = 1.2, 1.2, 0.25, 0.25
MASSES = {"platform": 150.0, "slider": 120.0, "link": 220.0, "strut_upper": 60.0, "strut_lower": 20.0,
          "counterweight": 495.0}
# Wu sec. 5 test motion
START, END = np.array([0.3, 3.2, np.pi / 3]), np.array([0.9, 2.3, 0.0])


@pytest.fixture(scope="module", params=VARIANTS)
def kin(request):
    return robot_kinematics("planar_redundant", request.param)


def struts_of(kin):
    return [1, 2] if kin.model.variant == "redundant" else [2]


# ----------------------------------------------------------------------------- Wu's formulas
def wu_ik(X, columns):
    """Eq. 18-20 ('-' root): q1, q2, l1, l2, beta1, beta2, phi1, phi2 for task coordinates X."""
    x, y, al = X
    q, beta = [], []
    for xd in columns:                        # x_Di = x_Ei = column X
        sb = (x - xd) / L                      # eq. 19
        cb = math.sqrt(1.0 - sb * sb)          # '-' root: A1 above D_i
        beta.append(math.atan2(sb, cb))
        q.append(y - L5 - L * cb)              # eq. 20a-b
    xb, yb = x - L6 * math.sin(al), y - L6 * math.cos(al)   # eq. 20c-d
    ln, phi = [], []
    for xe, qi in zip(columns, q):
        li = math.hypot(xb - xe, yb - qi)
        ln.append(li)
        phi.append(math.atan2((xb - xe) / li, (yb - qi) / li))   # eq. 18
    return q, ln, beta, phi


def wu_jacobian(X, columns, redundant):
    """Eq. 21-25. E is taken as [[0, 1], [-1, 0]] so that E R r'_B = d(R r'_B)/d alpha and
    E [sin b, cos b] = d[sin b, cos b]/db (eq. 31); the OCR'd transpose would flip the alpha column,
    inconsistent with eq. 20c-d."""
    x, y, al = X
    q, ln, beta, phi = wu_ik(X, columns)
    E = np.array([[0.0, 1.0], [-1.0, 0.0]])
    R = np.array([[math.cos(al), math.sin(al)], [-math.sin(al), math.cos(al)]])   # O'x'y' -> OXY, eq. 17
    rB = np.array([0.0, -L6])                                                     # B in O'x'y'
    e1, e2, e3 = np.eye(3)
    rows = [np.array([math.tan(b), 1.0, 0.0]) for b in beta]                      # J_1, J_2 (eq. 21)
    for i in (0, 1):
        sc = np.array([math.sin(phi[i]), math.cos(phi[i])])
        rows.append(sc @ (np.vstack([e1, e2]) + np.outer(E @ R @ rB, e3)) - rows[i] * math.cos(phi[i]))  # eq. 22
    J = np.array(rows)
    return J if redundant else J[[0, 1, 3]]                                       # eq. 24 / eq. 25


def wu_columns(kin):
    return tuple(kin.model.config["geometry"]["column_x"])


# ----------------------------------------------------------------------------- description
def test_paper_numbers_and_description(kin):
    clm = kin.model
    geo = clm.config["geometry"]
    assert (geo["d"], geo["l"], geo["l5"], geo["l6"]) == (D, L, L5, L6)
    assert geo["column_x"][1] - geo["column_x"][0] == pytest.approx(D, abs=1e-15)
    m = clm.model
    assert np.allclose(m.gravity.linear, [0.0, -9.81, 0.0])
    # masses of Table 2, read from the pinocchio bodies of the tree joints
    body = {"platform_alpha": "platform"}
    for i in (1, 2):
        body.update({f"slider{i}": "slider", f"link{i}_beta": "link", f"counterweight{i}": "counterweight"})
    for s in struts_of(kin):
        body.update({f"strut{s}_phi": "strut_upper", f"strut{s}": "strut_lower"})
    for jn, b in body.items():
        assert m.inertias[m.getJointId(jn)].mass == pytest.approx(MASSES[b], abs=1e-12), jn
    # every tree joint is revolute/prismatic with limits; structure of the variant
    root = ET.fromstring(robot_urdf("planar_redundant", clm.variant))
    joints = {j.get("name"): j for j in root.findall("joint")}
    links = {ln.get("name") for ln in root.findall("link")}
    assert all(j.get("type") in ("revolute", "prismatic", "fixed") for j in joints.values())
    assert all(j.find("limit") is not None for j in joints.values() if j.get("type") != "fixed")
    children = {j.find("child").get("link") for j in joints.values()}
    assert links - children == {"base_link"}                # the tree root
    strut1 = {"strut1", "strut1_phi", "strut1_upper", "strut1_lower", "leg3_tip", "platform_anchor3"}
    if clm.variant == "redundant":
        assert strut1 <= (links | set(joints))
        assert clm.actuated_joints == ("slider1", "slider2", "strut1", "strut2")
    else:
        assert not (strut1 & (links | set(joints)))        # strut E1B1 removed entirely
        assert clm.actuated_joints == ("slider1", "slider2", "strut2")
    # the 'world' view frame has the base Y axis pointing up (+z) for RViz
    data = clm.create_data()
    import pinocchio as pin
    pin.framesForwardKinematics(m, data, clm.neutral())
    R_bw = data.oMf[m.getFrameId("world")].rotation      # world frame in the base
    assert np.allclose(R_bw.T @ [0.0, 1.0, 0.0], [0.0, 0.0, 1.0])
    # every moving body has visual geometry
    for ln in root.findall("link"):
        if ln.find("inertial") is not None:
            assert ln.find("visual") is not None and ln.find("collision") is not None, ln.get("name")


# ----------------------------------------------------------------------------- IK, J, G, Jdot at random poses
def _fd(f, t0=0.0, h=1e-3):
    """4th-order central first and second derivatives of f at t0."""
    fm2, fm1, f0, fp1, fp2 = (f(t0 + k * h) for k in (-2, -1, 0, 1, 2))
    d1 = (fm2 - 8 * fm1 + 8 * fp1 - fp2) / (12 * h)
    d2 = (-fm2 + 16 * fm1 - 30 * f0 + 16 * fp1 - fp2) / (12 * h * h)
    return d1, d2


def _rel(a, b):
    return np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-12)


def test_random_poses_against_paper_closures_and_finite_differences(kin):
    clm = kin.model
    data = clm.create_data()
    rng = np.random.default_rng(3)
    poses = random_poses(kin, 200, rng)
    assert len(poses) == 200
    cols = wu_columns(kin)
    ia, ip = clm.actuated_idx, clm.platform_idx
    ji = clm.joint_index
    for pose in poses:
        X = kin.task.coordinates(pose)
        xd = rng.normal(size=3) * [0.3, 0.3, 0.5]
        xdd = rng.normal(size=3) * [0.5, 0.5, 1.0]
        m = kin.inverse(pose, xd, xdd, jacobian=True)
        # positions: Wu eq. 18-20, and the closures of the generic model
        q, ln, beta, phi = wu_ik(X, cols)
        exp = {"slider1": q[0], "slider2": q[1], "link1_beta": beta[0], "link2_beta": beta[1],
               "counterweight1": -q[0] + 3.8, "counterweight2": -q[1] + 3.8}
        for s in struts_of(kin):
            exp.update({f"strut{s}": ln[s - 1], f"strut{s}_phi": phi[s - 1]})
        for n, val in exp.items():
            assert m.q[ji[n]] == pytest.approx(val, abs=1e-12), n
        assert np.allclose(m.q[ip], X, atol=1e-15)
        assert np.abs(closure_residual(clm, data, m.q)).max() <= 1e-12
        # Jacobians: Wu eq. 21-25 and the constraint model
        J = m.jacobian
        assert J.shape == (clm.n_actuated, 3)
        assert _rel(J, wu_jacobian(X, cols, clm.variant == "redundant")) <= 1e-9
        assert np.allclose(kin.jacobian(pose), J, rtol=0, atol=1e-15)
        G = kin.joint_jacobian(pose)
        Gc = kin.constraint_joint_jacobian(m.q, data)
        assert _rel(G, Gc) <= 1e-9
        assert _rel(J, Gc[ia]) <= 1e-9
        Jx, Jq = kin.jacobian_xq(pose)
        assert _rel(np.linalg.solve(Jq, Jx), J) <= 1e-9
        # closure velocity and acceleration of the generic model at the IK rates
        K = closure_jacobian(clm, data, m.q)
        assert np.abs(K @ m.v).max() <= 1e-10
        assert np.abs(K @ m.a + closure_bias(clm, data, m.q, m.v)).max() <= 1e-9
        assert np.allclose(m.v, G @ xd, atol=1e-13)
        # rates and accelerations of every joint (passive ones included) and Jdot: finite differences
        def x_of(t):
            return X + xd * t + 0.5 * xdd * t * t

        def qf(t):
            return kin.inverse(kin.task.pose(x_of(t)), check_limits=False).q
        vfd, afd = _fd(qf)
        assert _rel(m.v, vfd) <= 1e-6
        assert _rel(m.a, afd) <= 1e-6
        Jdfd, _ = _fd(lambda t: kin.jacobian(kin.task.pose(x_of(t))))
        Jd = kin.jacobian_dot(pose, xd)
        assert _rel(Jd, Jdfd) <= 1e-6
        assert np.allclose(m.a[ia], J @ xdd + Jd @ xd, atol=1e-12)


# ----------------------------------------------------------------------------- FK round trip
def test_ik_fk_round_trip(kin):
    """Poses with sigma_min/sigma_max(J_x) >= 0.03: the non-redundant variant has two assembly modes
    (B on either side of the line E_2 A1) that merge at its forward singularity (E_2, B, A1 collinear,
    see test_strut_through_a1_is_forward_singular_without_redundancy); a Newton FK from a guess 1 deg
    off converges to the other mode when the two are closer than that."""
    rng = np.random.default_rng(11)
    poses = random_poses(kin, 1000, rng, min_ratio=0.03)
    worst = 0.0
    for pose in poses:
        qa = kin.actuated(pose)
        X = kin.task.coordinates(pose)
        guess = kin.task.pose(X + rng.uniform(-1, 1, 3) * [0.003, 0.003, np.radians(1)])
        res = forward_kinematics(kin, qa, guess)
        worst = max(worst, np.abs(kin.task.difference(res.pose, pose)).max())
    assert worst <= 1e-10


# ----------------------------------------------------------------------------- batch
def test_inverse_batch_matches_inverse(kin):
    rng = np.random.default_rng(5)
    lo = np.array([-0.3, 1.5, -3.0])
    hi = np.array([1.5, 4.2, 3.0])
    X = lo + (hi - lo) * rng.random((1500, 3))
    P, R = coords_to_arrays(kin.task, X)
    P[:5, 2] = 0.01                                 # out of the plane: invalid
    Q, ok = kin.inverse_batch(P, R)
    assert 0.2 < ok.mean() < 0.95                   # both kinds are exercised
    for i in range(len(X)):
        try:
            q = kin.inverse(Pose(P[i], R[i])).q
        except UnreachablePoseError:                # JointLimitError included
            assert not ok[i], X[i]
            continue
        assert ok[i], X[i]
        assert np.allclose(Q[i], q, rtol=0, atol=1e-12)


# ----------------------------------------------------------------------------- paper test motion
def test_wu_test_motion_reachable(kin):
    for t in np.linspace(0.0, 1.0, 101):
        X = START + t * (END - START)
        m = kin.inverse(kin.task.pose(X))          # all limits enforced
        q, ln, _, _ = wu_ik(X, wu_columns(kin))
        assert m.q[kin.model.joint_index["strut2"]] == pytest.approx(ln[1], abs=1e-12)
    # at the end pose (alpha = 0, l6 = l5) B - E_i = A1 - D_i: every strut is as long as the links
    qa = kin.actuated(kin.task.pose(END))
    assert np.allclose(qa[2:], L, atol=1e-12)


# ----------------------------------------------------------------------------- errors and singularity
def test_errors(kin):
    task = kin.task
    with pytest.raises(UnreachablePoseError, match=r"link1.*l = 1\.2"):
        kin.inverse(task.pose([1.5, 2.8, 0.0]))            # |x - x_D1| = 1.5 > l
    with pytest.raises(JointLimitError, match="slider1"):
        kin.inverse(task.pose([0.6, 4.5, 0.0]))            # q_1 = 3.21 > 3.0
    with pytest.raises(JointLimitError, match="link1_beta"):
        kin.inverse(task.pose([1.19, 2.8, 0.0]))           # beta_1 = 82.6 deg > 80 deg
    with pytest.raises(JointLimitError, match="cut joint 'leg2'"):
        kin.inverse(task.pose([0.1, 2.2, 1.7]))            # beta_2 - alpha = -1.16 - 1.7 = -2.86 rad < -150 deg
    X = np.array([0.06, 2.84, 2.62])
    _, ln, _, phi = wu_ik(X, wu_columns(kin))
    assert math.remainder(phi[1] - X[2], 2 * math.pi) > 5 * math.pi / 6 and ln[0] > 1.6    # strut1 > its 1.6 m
    with pytest.raises(JointLimitError, match="strut1" if 1 in kin.struts else "cut joint 'leg4'"):
        kin.inverse(task.pose(X))                          # phi_2 - alpha = 2.68 rad > 150 deg
    with pytest.raises(UnreachablePoseError, match="plane"):
        kin.inverse(Pose(np.array([0.6, 2.8, 0.1]), np.eye(3)))
    good = task.pose([0.6, 2.8, 0.0])
    with pytest.raises(InvalidInputError):
        kin.inverse(Pose(np.array([np.nan, 2.8, 0.0]), np.eye(3)))
    with pytest.raises(InvalidInputError):
        kin.inverse(Pose(np.array([0.6, 2.8]), np.eye(3)))
    with pytest.raises(InvalidInputError):
        kin.inverse(Pose(np.array([0.6, 2.8, 0.0]), 1.1 * np.eye(3)))
    with pytest.raises(InvalidInputError):
        kin.inverse(good, twist=[0.1, 0.2])
    with pytest.raises(InvalidInputError):
        kin.inverse(good, twist=[0.1, 0.2, np.inf])
    with pytest.raises(InvalidInputError):
        kin.inverse(good, twist=[0.1, 0.2, 0.3], accel=[0.0, 0.0])
    with pytest.raises(InvalidInputError):
        kin.inverse(good, accel=[0.0, 0.0, 0.0])
    # the fast validation path accepts exactly what the base class accepts
    assert np.array_equal(kin.inverse(good, (0.1, 0.2, 0.3)).v, kin.inverse(good, np.array([0.1, 0.2, 0.3])).v)


def test_link_horizontal_is_inverse_singular(kin):
    """beta_1 = 90 deg (link A1D1 horizontal, x = x_D1 + l): eq. 23 blows up.

    From |A1 - D_i|^2 = l^2: h_i qdot_i = dx_i xdot + h_i ydot with h_i = l cos(beta_i), and from
    |B - E_k|^2 = l_k^2: l_k ldot_k + (y_B - q_k) qdot_k = (B - E_k) . Bdot. So J_q is triangular with
    det J_q = h_1 h_2 prod(l_k), zero at beta_1 = 90 deg, while J_x keeps full rank.
    """
    cols = wu_columns(kin)
    sing = kin.task.pose([cols[0] + L, 2.8, 0.5])
    Jx, Jq = kin.jacobian_xq(sing)
    s = np.linalg.svd(Jq, compute_uv=False)
    assert s[-1] < 1e-6
    assert abs(np.linalg.det(Jq)) < 1e-12
    assert np.linalg.svd(Jx, compute_uv=False)[-1] > 1e-3
    home = kin.task.pose(kin.model.config["home"])
    Jx, Jq = kin.jacobian_xq(home)
    s = np.linalg.svd(Jq, compute_uv=False)
    assert s[-1] > 1e-3
    q, ln, beta, _ = wu_ik(kin.model.config["home"], cols)
    ls = [ln[k - 1] for k in struts_of(kin)]
    assert np.linalg.det(Jq) == pytest.approx(np.prod([L * math.cos(b) for b in beta]) * np.prod(ls), rel=1e-12)
    # approaching the singularity, J (eq. 21: tan beta_1) grows without bound
    near = kin.task.pose([cols[0] + L - 1e-10, 2.8, 0.0])
    assert np.abs(kin.jacobian(near)).max() > 1e4


def test_strut_through_a1_is_forward_singular_without_redundancy(kin):
    """Non-redundant variant: with E_2, B and A1 collinear (alpha = direction of A1 - E_2 from the
    vertical), turning the platform about A1 moves B normal to strut 2, so l_2 does not sense it: J_x loses
    rank (forward singularity, a 1-DoF platform motion with q1, q2, l2 locked). The redundant strut
    E_1B_1 senses that motion, so the redundant variant is regular there (Wu's motivation)."""
    x, y = 0.9, 2.3
    q, _, _, _ = wu_ik([x, y, 0.0], wu_columns(kin))
    alpha = math.atan2(x - wu_columns(kin)[1], y - q[1])
    Jx, Jq = kin.jacobian_xq(kin.task.pose([x, y, alpha]))
    s = np.linalg.svd(Jx, compute_uv=False)
    if kin.model.variant == "nonredundant":
        assert s[-1] / s[0] < 1e-6
    else:
        assert s[-1] / s[0] > 1e-3
    assert np.linalg.svd(Jq, compute_uv=False)[-1] > 1e-3
