"""Trajectory core: profiles against finite differences and their closed forms, task-space
trajectories against finite differences of their own sampled poses, the circle and semi-ellipse
geometry, specs, and the PaLiDA benchmark circle's reachability."""

import math

import numpy as np
import pytest

from pkm_control.errors import InvalidInputError, UnreachablePoseError
from pkm_control.kinematics import Pose, robot_kinematics
from pkm_control.kinematics.task_space import rpy_to_matrix, so3_log
from pkm_control.trajectory import (PROFILES, Circle, PointToPoint, SemiEllipse, Sequence, Waypoints,
                                    check_reachable, home_pose, palida_benchmark_circle, profile_function,
                                    profile_integral, profile_peaks, trajectory_from_spec)

T = 0.8
# (name, options, breakpoints in units of T where dds may jump)
CASES = [("parabolic", {}, [0.5]),
         ("trapezoidal", {}, [0.25, 0.75]),
         ("trapezoidal", {"ramp": 0.3}, [0.375, 0.625]),
         ("trapezoidal", {"ramp": 0.4}, [0.5]),
         ("sine_on_ramp", {}, []),
         ("asymmetric_sine_on_ramp", {}, [1 / 3]),
         ("asymmetric_sine_on_ramp", {"accel_fraction": 0.6}, [0.6]),
         ("trig_spline3", {}, []),
         ("quintic", {}, [])]
SMOOTH_ENDS = {"sine_on_ramp", "asymmetric_sine_on_ramp", "trig_spline3", "quintic"}


def _away(t, breaks, h):
    """Mask of times at least 3h from every breakpoint and from the ends."""
    m = (t > 3 * h) & (t < T - 3 * h)
    for b in breaks:
        m &= np.abs(t - b * T) > 3 * h
    return m


def test_registry_is_complete():
    assert set(PROFILES) == {"parabolic", "trapezoidal", "sine_on_ramp", "asymmetric_sine_on_ramp",
                             "trig_spline3", "quintic"}


@pytest.mark.parametrize("name,opts,breaks", CASES)
def test_profile_boundaries_derivatives_continuity(name, opts, breaks):
    f = profile_function(name, opts)
    s0, ds0, dds0 = f(0.0, T)
    s1, ds1, dds1 = f(T, T)
    assert s0 == 0.0 and abs(s1 - 1.0) < 1e-15
    assert abs(ds0) < 1e-15 and abs(ds1) < 1e-15                    # rest to rest
    if name in SMOOTH_ENDS:
        assert abs(dds0) < 1e-12 and abs(dds1) < 1e-9
    # rest outside [0, T]
    s, ds, dds = f(np.array([-1.0, -1e-9, T + 1e-9, T + 5.0]), T)
    np.testing.assert_allclose(s, [0.0, 0.0, 1.0, 1.0], rtol=0, atol=1e-15)
    np.testing.assert_array_equal(ds, 0.0)
    np.testing.assert_array_equal(dds, 0.0)
    # ds and dds against central differences (h = 1e-5 s: truncation ~ h^2 s''' ~ 1e-7 relative)
    h = 1e-5
    t = np.linspace(0.0, T, 4001)
    m = _away(t, breaks, h)
    s, ds, dds = f(t, T)
    sp, dsp, _ = f(t + h, T)
    sm, dsm, _ = f(t - h, T)
    vmax, amax = profile_peaks(name, T, **opts)[:2]
    np.testing.assert_allclose(ds[m], ((sp - sm) / (2 * h))[m], rtol=0, atol=1e-8 * vmax)
    np.testing.assert_allclose(dds[m], ((dsp - dsm) / (2 * h))[m], rtol=0, atol=1e-6 * amax)
    # monotone, within [0, 1]
    assert (ds >= 0).all() and s.min() >= 0.0 and s.max() <= 1.0 + 1e-15
    # s and ds continuous everywhere (also across the breakpoints), dds continuous for smooth profiles
    eps = 1e-9
    for b in breaks + [0.0, 1.0]:
        a_, b_ = f(b * T - eps, T), f(b * T + eps, T)
        assert abs(a_[0] - b_[0]) < 1e-8 and abs(a_[1] - b_[1]) < 1e-6 * vmax
        if name in SMOOTH_ENDS:
            assert abs(a_[2] - b_[2]) < 1e-6 * amax
    # scalar fast path == vector path
    for ti in np.linspace(-0.1, T + 0.1, 37):
        sc = f(float(ti), T)
        vec = f(np.array([ti]), T)
        assert all(isinstance(x, float) for x in sc)
        np.testing.assert_allclose(sc, [v[0] for v in vec], rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("name,opts,breaks", CASES)
def test_profile_peaks_and_integral(name, opts, breaks):
    f = profile_function(name, opts)
    t = np.linspace(0.0, T, 400001)
    s, ds, dds = f(t, T)
    pk = profile_peaks(name, T, **opts)
    assert abs(ds.max() - pk.velocity) < 1e-9 * pk.velocity
    assert abs(dds.max() - pk.acceleration) < 1e-8 * pk.acceleration
    assert abs(-dds.min() - pk.deceleration) < 1e-8 * pk.deceleration
    # the integral: its derivative is s, its value at T the quadrature of s, continues with slope 1
    I = profile_integral(name, t, T, **opts)
    assert I[0] == 0.0
    np.testing.assert_allclose(I[-1], np.trapezoid(s, t), rtol=0, atol=1e-11)
    h = 1e-5
    Ip, Im = profile_integral(name, t + h, T, **opts), profile_integral(name, t - h, T, **opts)
    m = _away(t, breaks, h)
    np.testing.assert_allclose(((Ip - Im) / (2 * h))[m], s[m], rtol=0, atol=1e-9)
    assert abs(profile_integral(name, T + 2.0, T, **opts) - (I[-1] + 2.0)) < 1e-12
    for ti in (0.1 * T, 0.45 * T, 0.55 * T, 0.9 * T):
        assert abs(profile_integral(name, ti, T, **opts) - profile_integral(name, np.array([ti]), T, **opts)[0]) < 1e-15


def test_closed_form_peaks_by_hand():
    T = 2.0
    assert profile_peaks("parabolic", T) == (1.0, 1.0, 1.0)
    assert profile_peaks("sine_on_ramp", T) == (1.0, math.pi / 2, math.pi / 2)
    v, a, d = profile_peaks("trapezoidal", T, ramp=0.5)
    assert (v, a, d) == (1 / 1.5, 1 / 0.75, 1 / 0.75)
    v, a, d = profile_peaks("quintic", T)
    assert abs(v - 15 / 16) < 1e-15 and abs(a - 2.5 / math.sqrt(3)) < 1e-15


def test_codourey_fig8_peak_accelerations():
    """Fig. 8 of Codourey (seed 002): parabolic 51 m/s^2, sine-on-ramp 80, nonsymmetrical sine-on-ramp
    120 up / 60 down. One and the same move time T reproduces all four numbers (to the two digits
    the figure prints), which is what identifies the profiles' definitions."""
    T2 = 4.0 / 51.0                                       # from the parabolic profile, scaled by the move
    Tm = math.sqrt(T2)
    assert abs(profile_peaks("sine_on_ramp", Tm).acceleration * 1.0 - 80.0) < 0.5
    _, up, down = profile_peaks("asymmetric_sine_on_ramp", Tm)
    assert abs(up - 120.0) < 0.5 and abs(down - 60.0) < 0.5
    # and the ratios are the exact ones: pi/2 and 3 pi / 4, 3 pi / 8
    assert abs(profile_peaks("sine_on_ramp", 1.0).acceleration / 4.0 - math.pi / 2) < 1e-15


def test_asymmetric_half_is_sine_on_ramp():
    t = np.linspace(-0.1, 1.1, 1001)
    a = PROFILES["asymmetric_sine_on_ramp"](t, 1.0, accel_fraction=0.5)
    b = PROFILES["sine_on_ramp"](t, 1.0)
    for x, y in zip(a, b):
        np.testing.assert_allclose(x, y, rtol=0, atol=1e-14)


def test_profile_bad_input():
    for name, f in PROFILES.items():
        for bad in (0.0, -1.0, float("nan"), "x"):
            with pytest.raises(InvalidInputError, match="duration"):
                f(0.1, bad)
        with pytest.raises(InvalidInputError, match="time"):
            f(float("nan"), 1.0)
        with pytest.raises(InvalidInputError, match="time"):
            f(np.array([0.0, np.inf]), 1.0)
    with pytest.raises(InvalidInputError, match="ramp"):
        PROFILES["trapezoidal"](0.1, 1.0, ramp=0.6)
    with pytest.raises(InvalidInputError, match="accel_fraction"):
        PROFILES["asymmetric_sine_on_ramp"](0.1, 1.0, accel_fraction=1.0)
    with pytest.raises(InvalidInputError, match="profile must be one of"):
        profile_function("cubic")
    with pytest.raises(InvalidInputError, match="options"):
        profile_function("quintic", {"ramp": 0.1})


# ---------------------------------------------------------------------------- trajectories
@pytest.fixture(scope="module")
def kins():
    return {r: robot_kinematics(r) for r in ("palida", "planar_redundant", "delta")}


def _pose(kin, x):
    return kin.task.pose(np.asarray(x, float))


def _trajectories(kins):
    pal, pla, dlt = kins["palida"], kins["planar_redundant"], kins["delta"]
    hp, hl, hd = home_pose(pal), home_pose(pla), home_pose(dlt)
    gp = _pose(pal, [0.08, -0.05, -0.80, 0.15, -0.1, 0.3])
    gl = Pose(hl.position + np.array([0.3, -0.2, 0.0]), hl.rotation @ rpy_to_matrix(0, 0, 0.4))
    gd = _pose(dlt, [0.1, 0.05, -0.33])
    tilted = rpy_to_matrix(0.3, -0.2, 0.5) @ np.array([0.0, 0.0, 1.0])
    return {
        "ptp_spatial": PointToPoint(pal.task, hp, gp, 0.7, "quintic"),
        "ptp_planar": PointToPoint(pla.task, hl, gl, 1.1, "trig_spline3"),
        "ptp_translation": PointToPoint(dlt.task, hd, gd, 0.4, "asymmetric_sine_on_ramp"),
        "waypoints": Waypoints(pal.task, [hp, gp, _pose(pal, [0.0, 0.1, -0.9, 0.0, 0.2, -0.2])], [0.5, 0.6],
                               "sine_on_ramp"),
        "circle_spatial": Circle(pal.task, gp, 0.12, tilted, 0.8, 1.5, 0.3, "quintic", start_angle=0.7),
        "circle_planar": Circle(pla.task, hl, 0.2, [0, 0, -1], 0.5, 1.0, 0.4, "trig_spline3"),
        "circle_translation": Circle(dlt.task, hd, 0.1, [1.0, 0.0, 0.0], 1.2, 0.5, 0.2,
                                     "asymmetric_sine_on_ramp", {"accel_fraction": 0.4}),
        "ellipse_spatial": SemiEllipse(pal.task, hp, gp, 0.06, 0.8, "sine_on_ramp"),
        "ellipse_planar": SemiEllipse(pla.task, hl, gl, 0.1, 0.9, "quintic", up=[0, 1, 0]),
        "ellipse_translation": SemiEllipse(dlt.task, hd, gd, 0.05, 0.3),
    }


def _task_velocity_fd(traj, t, h):
    """Task velocity from central differences of the sampled poses (omega: so3_log(R+ R-^T) / 2h)."""
    Pp, Rp, _, _ = traj.sample_many(t + h)
    Pm, Rm, _, _ = traj.sample_many(t - h)
    v = (Pp - Pm) / (2 * h)
    w = np.array([so3_log(a @ b.T) for a, b in zip(Rp, Rm)]) / (2 * h)
    k = traj.task.kind
    if k == "spatial":
        return np.hstack([v, w])
    if k == "translation":
        return v
    return np.column_stack([v[:, 0], v[:, 1], traj.task.alpha_sign * w[:, 2]])


def test_trajectories_against_finite_differences(kins):
    for name, traj in _trajectories(kins).items():
        h = 1e-5
        # interior grid offset off every rational fraction of the duration, so that no sample falls within
        # a few h of a profile breakpoint (where dds is continuous but the jerk jumps: FD error O(h jerk))
        t = (np.arange(300) + 0.3717) / 300 * traj.duration
        P, R, V, A = traj.sample_many(t)
        scale_v = max(1.0, np.abs(V).max())
        scale_a = max(1.0, np.abs(A).max())
        np.testing.assert_allclose(V, _task_velocity_fd(traj, t, h), rtol=0, atol=1e-7 * scale_v, err_msg=name)
        # acceleration: central differences of the twist, away from the kinks of the profile in time
        _, _, Vp, _ = traj.sample_many(t + h)
        _, _, Vm, _ = traj.sample_many(t - h)
        np.testing.assert_allclose(A, (Vp - Vm) / (2 * h), rtol=0, atol=1e-5 * scale_a, err_msg=name)
        # the twist integrates back to the poses (trapezoid rule over a fine grid, whole duration)
        tt = np.linspace(0.0, traj.duration, 20001)
        P2, _, V2, _ = traj.sample_many(tt)
        lin = V2[:, :3] if traj.task.kind != "planar" else np.column_stack([V2[:, :2], np.zeros(len(tt))])
        np.testing.assert_allclose(P2[-1] - P2[0], np.trapezoid(lin, tt, axis=0), rtol=0, atol=1e-6, err_msg=name)
        assert [x.shape[0] for x in traj.sample_many(np.array([]))] == [0, 0, 0, 0]
        # rotations stay rotations; rest at both ends; sample() == sample_many()
        assert np.abs(np.einsum("nij,nkj->nik", R, R) - np.eye(3)).max() < 1e-12
        ends = traj.sample_many(np.array([-0.5, 0.0, traj.duration, traj.duration + 0.5]))
        assert np.abs(ends[2]).max() < 1e-12, name
        np.testing.assert_array_equal(ends[0][0], ends[0][1])
        np.testing.assert_array_equal(ends[0][2], ends[0][3])
        ts = np.concatenate([[-0.1], np.linspace(0.0, traj.duration, 41), [traj.duration + 0.1]])
        P, R, V, A = traj.sample_many(ts)
        for i, ti in enumerate(ts):
            pose, v, a = traj.sample(float(ti))
            assert v.shape == (traj.task.dim,) and a.shape == (traj.task.dim,)
            np.testing.assert_allclose(pose.position, P[i], rtol=0, atol=1e-14, err_msg=name)
            np.testing.assert_allclose(pose.rotation, R[i], rtol=0, atol=1e-14, err_msg=name)
            np.testing.assert_allclose(v, V[i], rtol=0, atol=1e-13, err_msg=name)
            np.testing.assert_allclose(a, A[i], rtol=0, atol=1e-12, err_msg=name)
        # every sampled pose belongs to the task space (what IK gets)
        for p, r in zip(P, R):
            kin = {"spatial": kins["palida"], "planar": kins["planar_redundant"],
                   "translation": kins["delta"]}[traj.task.kind]
            back = kin.task.pose(kin.task.coordinates(Pose(p, r)))
            np.testing.assert_allclose(back.position, p, atol=1e-12)
            np.testing.assert_allclose(back.rotation, r, atol=1e-12)


def test_point_to_point_endpoints_and_axis(kins):
    pal = kins["palida"]
    a, b = home_pose(pal), _pose(pal, [0.08, -0.05, -0.80, 0.15, -0.1, 0.3])
    ptp = PointToPoint(pal.task, a, b, 0.7)
    P, R, V, _ = ptp.sample_many(np.array([0.0, 0.7]))
    np.testing.assert_allclose(P, [a.position, b.position], atol=1e-15)
    np.testing.assert_allclose(R[1], b.rotation, atol=1e-14)
    # the angular velocity keeps one direction, the axis of R_goal R_start^T; positions on the line
    t = np.linspace(0.01, 0.69, 50)
    P, R, V, _ = ptp.sample_many(t)
    axis = so3_log(b.rotation @ a.rotation.T)
    axis /= np.linalg.norm(axis)
    np.testing.assert_allclose(V[:, 3:] / np.linalg.norm(V[:, 3:], axis=1)[:, None], np.tile(axis, (50, 1)),
                               atol=1e-12)
    d = (b.position - a.position) / np.linalg.norm(b.position - a.position)
    off = (P - a.position) - np.outer((P - a.position) @ d, d)
    assert np.abs(off).max() < 1e-15


def test_circle_geometry_and_speed(kins):
    pal = kins["palida"]
    c = home_pose(pal)
    n = rpy_to_matrix(0.3, -0.2, 0.5) @ np.array([0.0, 0.0, 1.0])
    V, r, laps, Tr = 0.8, 0.12, 2.0, 0.3
    circ = Circle(pal.task, c, r, n, V, laps, Tr, "sine_on_ramp")
    assert abs(circ.duration - (2 * Tr + laps * 2 * math.pi * r / V)) < 1e-14
    t = np.linspace(0.0, circ.duration, 3001)
    P, R, Tw, _ = circ.sample_many(t)
    d = P - c.position
    np.testing.assert_allclose(np.linalg.norm(d, axis=1), r, rtol=0, atol=1e-14)   # radius
    assert np.abs(d @ n).max() < 1e-14                                            # plane
    np.testing.assert_allclose(R, np.broadcast_to(c.rotation, R.shape), atol=0)   # orientation held
    speed = np.linalg.norm(Tw[:, :3], axis=1)
    cruise = (t > Tr) & (t < circ.duration - Tr)
    np.testing.assert_allclose(speed[cruise], V, rtol=0, atol=1e-13)
    assert np.abs(Tw[:, 3:]).max() == 0.0
    # the arc length matches the path length measured by summing chords, and the cruise covers `laps` turns
    chord = np.linalg.norm(np.diff(P, axis=0), axis=1).sum()
    sig = circ.arc_length(np.array([circ.duration]))[0][0]
    assert abs(chord - sig) < 1e-5
    s1 = circ.arc_length(np.array([Tr, circ.duration - Tr]))[0]
    assert abs(s1[1] - s1[0] - laps * 2 * math.pi * r) < 1e-12
    # ramp arc lengths: symmetric profile -> V Tr / 2 each
    assert abs(s1[0] - V * Tr / 2) < 1e-14
    # counterclockwise about the normal
    assert (np.cross(d, Tw[:, :3]) @ n >= -1e-15).all()


def test_palida_benchmark_circle(kins):
    pal = kins["palida"]
    circ = palida_benchmark_circle(pal, 0.15)
    home = home_pose(pal)
    np.testing.assert_allclose(circ.center.position, home.position)
    # inclination: the x-axis makes 30 deg with the circle plane, the plane contains the y-axis
    assert abs(math.degrees(math.asin(abs(circ.normal[0]))) - 30.0) < 1e-12
    assert abs(circ.normal[1]) < 1e-15
    # and the plane makes 30 deg with the horizontal x-y plane
    assert abs(math.degrees(math.acos(circ.normal[2])) - 30.0) < 1e-12
    t = np.linspace(0.0, circ.duration, 2001)
    P, _, Tw, _ = circ.sample_many(t)
    cruise = (t > circ.ramp_time) & (t < circ.duration - circ.ramp_time)
    np.testing.assert_allclose(np.linalg.norm(Tw[cruise, :3], axis=1), 1.0, atol=1e-13)
    # the circle's lowest/highest points differ in z by 2 r sin 30 deg
    assert abs(P[:, 2].max() - P[:, 2].min() - 2 * 0.15 * 0.5) < 1e-5
    other = palida_benchmark_circle(pal, 0.15, tilt_axis="x")
    assert abs(other.normal[0]) < 1e-15 and abs(math.degrees(math.acos(other.normal[2])) - 30.0) < 1e-12
    with pytest.raises(InvalidInputError, match="tilt_axis"):
        palida_benchmark_circle(pal, 0.15, tilt_axis="z")


@pytest.mark.parametrize("radius", [0.1, 0.15, 0.2])
def test_palida_benchmark_reachable(kins, radius):
    pal = kins["palida"]
    circ = palida_benchmark_circle(pal, radius, laps=1.0)
    ts, q = check_reachable(pal, circ)
    assert len(ts) >= circ.duration / 0.002 and q.shape == (len(ts), pal.model.model.nv)
    P, R, _, _ = circ.sample_many(ts)
    q2, ok = pal.inverse_batch(P, R)
    assert ok.all()
    # the single-pose IK agrees (the batch is not trusted alone)
    for i in range(0, len(ts), 97):
        np.testing.assert_allclose(pal.inverse(Pose(P[i], R[i])).q, q[i], atol=1e-12)


def test_check_reachable_names_the_time(kins):
    pal = kins["palida"]
    home = home_pose(pal)
    far = Pose(home.position + np.array([1.5, 0.0, 0.0]), home.rotation)
    ptp = PointToPoint(pal.task, home, far, 1.0, "parabolic")
    with pytest.raises(UnreachablePoseError, match=r"t = 0\.\d+ s") as e:
        check_reachable(pal, ptp, n=1001)
    # the time named is the first invalid sample: the sample just before it is reachable
    t_bad = float(str(e.value).split("t = ")[1].split(" s")[0])
    assert 0.0 < t_bad < 1.0
    P, R, _, _ = ptp.sample_many(np.array([t_bad - 1e-3, t_bad]))
    assert list(pal.inverse_batch(P, R)[1]) == [True, False]


def test_semi_ellipse_geometry(kins):
    pal = kins["palida"]
    a, b = home_pose(pal), _pose(pal, [0.1, -0.04, -0.82, 0.0, 0.0, 0.2])
    h = 0.05
    se = SemiEllipse(pal.task, a, b, h, 0.8, "sine_on_ramp")
    P, R, _, _ = se.sample_many(np.array([0.0, 0.4, 0.8]))
    np.testing.assert_allclose(P[0], a.position, atol=1e-15)
    np.testing.assert_allclose(P[2], b.position, atol=1e-15)
    np.testing.assert_allclose(R[2], b.rotation, atol=1e-14)
    # apex at half time (symmetric profile): midpoint + h along the vertical part normal to the chord
    mid = 0.5 * (a.position + b.position)
    d = b.position - a.position
    up = np.array([0.0, 0.0, 1.0]) - d[2] * d / (d @ d)
    up /= np.linalg.norm(up)
    np.testing.assert_allclose(P[1], mid + h * up, atol=1e-15)
    # on the ellipse, in the vertical plane through start and goal, and the apex is the highest distance
    t = np.linspace(0.0, 0.8, 2001)
    P, _, _, _ = se.sample_many(t)
    x = (P - mid) @ (d / np.linalg.norm(d))
    y = (P - mid) @ up
    np.testing.assert_allclose((x / (0.5 * np.linalg.norm(d))) ** 2 + (y / h) ** 2, 1.0, atol=1e-12)
    nrm = np.cross(d, up)
    assert np.abs((P - mid) @ nrm).max() < 1e-15
    assert abs(y.max() - h) < 1e-12 and y.min() > -1e-15
    # level start and goal: the apex is h above them
    g2 = _pose(pal, [0.12, 0.0, -0.85, 0.0, 0.0, 0.0])
    se2 = SemiEllipse(pal.task, a, g2, h, 0.5)
    z = se2.sample_many(np.linspace(0, 0.5, 1001))[0][:, 2]
    assert abs(z.max() - (a.position[2] + h)) < 1e-12
    with pytest.raises(InvalidInputError, match="parallel"):
        SemiEllipse(pal.task, a, _pose(pal, [0.0, 0.0, -0.8, 0, 0, 0]), h, 0.5)
    with pytest.raises(InvalidInputError, match="differ"):
        SemiEllipse(pal.task, a, a, h, 0.5)


def test_trajectory_bad_input(kins):
    pal, pla, dlt = kins["palida"], kins["planar_redundant"], kins["delta"]
    hp, hl = home_pose(pal), home_pose(pla)
    with pytest.raises(InvalidInputError, match="radius"):
        Circle(pal.task, hp, -0.1)
    with pytest.raises(InvalidInputError, match="normal"):
        Circle(pal.task, hp, 0.1, [0, 0, 0])
    with pytest.raises(InvalidInputError, match="x-y plane"):
        Circle(pla.task, hl, 0.1, [1, 0, 0])
    with pytest.raises(InvalidInputError, match="planar"):
        PointToPoint(pla.task, hl, Pose(hl.position + [0, 0, 0.1], hl.rotation), 1.0)
    with pytest.raises(InvalidInputError, match="translation"):
        PointToPoint(dlt.task, home_pose(dlt), Pose(np.zeros(3), rpy_to_matrix(0.1, 0, 0)), 1.0)
    with pytest.raises(InvalidInputError, match="duration"):
        PointToPoint(pal.task, hp, hp, 0.0)
    with pytest.raises(InvalidInputError, match="ramp"):
        PointToPoint(pal.task, hp, hp, 1.0, "trapezoidal", {"ramp": 0.7})
    with pytest.raises(InvalidInputError, match="starts"):
        Sequence([PointToPoint(pal.task, hp, _pose(pal, [0.1, 0, -0.85, 0, 0, 0]), 1.0),
                  PointToPoint(pal.task, hp, hp, 1.0)])
    ptp = PointToPoint(pal.task, hp, hp, 1.0)
    with pytest.raises(InvalidInputError, match="finite"):
        ptp.sample(float("nan"))
    with pytest.raises(InvalidInputError, match="1-D"):
        ptp.sample_many(np.zeros((2, 2)))


# ---------------------------------------------------------------------------- specs
def test_trajectory_from_spec_every_type(kins):
    pal, pla = kins["palida"], kins["planar_redundant"]
    home = home_pose(pal)
    g = [0.05, 0.02, -0.83, 0.0, 0.1, 0.0]
    ptp = trajectory_from_spec(pal, {"type": "point_to_point", "goal": g, "duration": 1.0, "profile": "quintic"})
    assert isinstance(ptp, PointToPoint) and ptp.duration == 1.0
    np.testing.assert_allclose(ptp.start.position, home.position)
    np.testing.assert_allclose(pal.task.coordinates(ptp.end_pose), g, atol=1e-15)
    tr = trajectory_from_spec(pal, {"type": "point_to_point", "goal": g, "duration": 1.0,
                                    "start": [0, 0, -0.9, 0, 0, 0], "profile": {"name": "trapezoidal", "ramp": 0.2}})
    assert tr.profile == "trapezoidal" and tr.profile_options == {"ramp": 0.2}
    assert abs(tr.start.position[2] + 0.9) < 1e-15
    wp = trajectory_from_spec(pal, {"type": "waypoints", "poses": [g, [0, 0, -0.85, 0, 0, 0]], "durations": [0.5, 0.7]})
    assert isinstance(wp, Waypoints) and len(wp.segments) == 2 and abs(wp.duration - 1.2) < 1e-15
    np.testing.assert_allclose(wp.start_pose.position, home.position)           # from the home pose
    wp2 = trajectory_from_spec(pal, {"type": "waypoints", "poses": [g, [0, 0, -0.85, 0, 0, 0]], "durations": 0.5})
    assert len(wp2.segments) == 1 and np.allclose(wp2.start_pose.position, g[:3])
    c = trajectory_from_spec(pal, {"type": "circle", "radius": 0.1, "normal": [0, 1, 1], "speed": 1.0, "laps": 2,
                                   "ramp_time": 0.3, "profile": "sine_on_ramp"})
    assert isinstance(c, Circle) and c.laps == 2.0
    np.testing.assert_allclose(c.normal, [0, 1 / math.sqrt(2), 1 / math.sqrt(2)])
    np.testing.assert_allclose(c.center.position, home.position)
    se = trajectory_from_spec(pal, {"type": "semi_ellipse", "goal": g, "height": 0.05, "duration": 0.8})
    assert isinstance(se, SemiEllipse) and np.allclose(se.e2[2] > 0, True)
    # planar robot: 'up' defaults to against its gravity (+y)
    sp = trajectory_from_spec(pla, {"type": "semi_ellipse", "goal": list(pla.model.config["home"][:2]) + [0.1],
                                    "height": 0.05, "duration": 0.8, "start": [pla.model.config["home"][0] - 0.2,
                                                                                  pla.model.config["home"][1], 0.0]})
    np.testing.assert_allclose(sp.e2, [0, 1, 0], atol=1e-15)
    b = trajectory_from_spec(pal, {"type": "benchmark_circle", "radius": 0.12})
    assert isinstance(b, Circle) and abs(math.degrees(math.asin(b.normal[0])) - 30) < 1e-12


@pytest.mark.parametrize("spec,match", [
    ({"type": "spiral"}, "'type'"),
    ({"goal": [0, 0, -0.8, 0, 0, 0]}, "'type'"),
    ({"type": "point_to_point", "duration": 1.0}, "'goal'"),
    ({"type": "point_to_point", "goal": [0, 0, -0.8], "duration": 1.0}, "'goal'"),
    ({"type": "point_to_point", "goal": [0, 0, -0.8, 0, 0, float("nan")], "duration": 1.0}, "'goal'"),
    ({"type": "point_to_point", "goal": [0, 0, -0.8, 0, 0, 0], "duration": "fast"}, "'duration'"),
    ({"type": "point_to_point", "goal": [0, 0, -0.8, 0, 0, 0], "duration": 1.0, "speed": 2}, "unknown field"),
    ({"type": "point_to_point", "goal": [0, 0, -0.8, 0, 0, 0], "duration": 1.0, "profile": "cubic"}, "profile"),
    ({"type": "point_to_point", "goal": [0, 0, -0.8, 0, 0, 0], "duration": 1.0, "profile": {"ramp": 1}}, "'name'"),
    ({"type": "point_to_point", "goal": [0, 0, -0.8, 0, 0, 0], "duration": 1.0, "start": [1, 2]}, "'start'"),
    ({"type": "waypoints", "poses": [[0, 0, -0.8, 0, 0, 0]], "durations": [1.0, 2.0, 3.0]}, "'durations'"),
    ({"type": "waypoints", "poses": [], "durations": []}, "'poses'"),
    ({"type": "waypoints", "poses": [[0, 0, -0.8, 0, 0, 0], [0, 0]], "durations": [1.0]}, r"'poses\[1\]'"),
    ({"type": "circle", "radius": -0.1}, "radius"),
    ({"type": "circle"}, "'radius'"),
    ({"type": "circle", "radius": 0.1, "normal": [0, 0]}, "'normal'"),
    ({"type": "circle", "radius": 0.1, "laps": True}, "'laps'"),
    ({"type": "semi_ellipse", "goal": [0.1, 0, -0.85, 0, 0, 0], "duration": 1.0}, "'height'"),
    ({"type": "benchmark_circle", "radius": 0.1, "start": [0, 0, -0.8, 0, 0, 0]}, "'start'"),
    ("circle", "mapping"),
])
def test_trajectory_from_spec_bad(kins, spec, match):
    with pytest.raises(InvalidInputError, match=match):
        trajectory_from_spec(kins["palida"], spec)


def test_hybrid_spec_phases_force_and_selection():
    """A hybrid (motion + force) spec (issue 24): the motion rests at each phase's goal at the phase's end, the force
    goes from the previous phase's to this one's with the quintic (half way at mid-phase: s(1/2) = 1/2 by symmetry),
    the selection carries over until a phase sets it; bad phases are refused by name."""
    from pkm_control.trajectory.spec import hybrid_from_spec

    kin = robot_kinematics("stewart")
    spec = {"type": "hybrid", "phases": [
        {"phase": "approach", "goal": [0, 0, 1.198, 0, 0, 0], "duration": 0.2},
        {"phase": "contact", "force": [0, 0, -50, 0, 0, 0], "selection": ["z"], "duration": 0.2},
        {"phase": "follow", "goal": [0.03, 0, 1.198, 0, 0, 0], "duration": 0.4},
        {"phase": "release", "force": [0] * 6, "duration": 0.1},
        {"phase": "approach", "goal": [0, 0, 1.2, 0, 0, 0], "selection": [], "duration": 0.2}]}
    h = hybrid_from_spec(kin, spec)
    assert h.duration == pytest.approx(1.1)
    z_only = [False, False, True, False, False, False]
    for t, phase, position, fz, sel in ((0.1, "approach", None, 0.0, [False] * 6),
                                        (0.2, "approach", [0, 0, 1.198], 0.0, [False] * 6),
                                        (0.3, "contact", [0, 0, 1.198], -25.0, z_only),
                                        (0.4, "contact", [0, 0, 1.198], -50.0, z_only),
                                        (0.8, "follow", [0.03, 0, 1.198], -50.0, z_only),
                                        (0.85, "release", [0.03, 0, 1.198], -25.0, z_only),
                                        (1.1, "approach", [0, 0, 1.2], 0.0, [False] * 6)):
        f, s = h.force(t)
        assert h.phase(t) == phase
        assert f[2] == pytest.approx(fz, abs=1e-9) and np.abs(np.delete(f, 2)).max() == 0
        assert s.tolist() == sel
        if position is not None:
            pose, twist, _ = h.sample(t)
            assert np.allclose(pose.position, position, atol=1e-12) and np.abs(twist).max() < 1e-9
    for bad, match in (({**spec, "phases": [{"phase": "press", "duration": 1}]}, "phase must be one of"),
                       ({**spec, "phases": [{"phase": "contact", "selection": ["w"], "duration": 1}]}, "selection"),
                       ({**spec, "phases": [{"phase": "contact", "duration": -1}]}, "duration"),
                       ({**spec, "phases": [{"phase": "contact", "force": [1, 2], "duration": 1}]}, "force"),
                       ({**spec, "phases": []}, "phases"), ({"type": "hybrid", "extra": 1, "phases": []}, "unknown")):
        with pytest.raises(InvalidInputError, match=match):
            hybrid_from_spec(kin, bad)
