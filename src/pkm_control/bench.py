"""Benchmarks and the kinematics tour behind ``pkm bench`` and ``pkm demo``.

Every figure is measured in the run that prints it, next to a baseline measured
in the same run on the same poses: the generic constraint-model Jacobian for
IK + J, a Python loop of single calls for the batched IK, a cold start from the
home pose for the warm-started FK.
"""

from __future__ import annotations

import json
import time

import numpy as np

from .description import closure_residual, robot_names, robot_variants
from .errors import PkmError
from .kinematics import robot_kinematics
from .kinematics.analysis import singularity
from .kinematics.forward import forward_kinematics
from .kinematics.workspace import coords_to_arrays, random_poses, workspace_box

#: issue targets for the hexapods on a 2-core machine
TARGETS = {"ik_jacobian_us": 20.0, "batch_per_s": 2e5, "fk_warm_us": 100.0}
HEXAPODS = ("stewart", "palida", "lopes")


def robot_list(robots=None):
    """(robot, variant) pairs: every variant of every shipped robot, or of the ones named."""
    return [(r, v) for r in (robots or robot_names()) for v in robot_variants(r)]


def _per_call_us(fn, items, repeat=5):
    """Median over ``repeat`` passes of the mean time per call over ``items``, in microseconds."""
    best = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for it in items:
            fn(it)
        best.append((time.perf_counter() - t0) / len(items) * 1e6)
    return float(np.median(best))


def _warm_guess(kin, pose, rng):
    """A pose one 1 kHz control period away at 1 m/s and 1 rad/s: 1 mm and 1 mrad."""
    d = rng.standard_normal(kin.task.dim)
    d /= np.linalg.norm(d)
    return kin.task.retract(pose, 1e-3 * d)


def bench_robot(robot, variant, samples=100_000, n_poses=200, seed=0):
    kin = robot_kinematics(robot, variant)
    rng = np.random.default_rng(seed)
    poses = random_poses(kin, n_poses, rng)
    qs = [kin.inverse(p).q for p in poses]
    data = kin.model.create_data()
    r = {"robot": robot, "variant": variant}
    r["ik_jacobian_us"] = _per_call_us(lambda p: kin.inverse(p, jacobian=True), poses)
    r["generic_jacobian_us"] = _per_call_us(lambda q: kin.constraint_joint_jacobian(q, data), qs)

    lo, hi = workspace_box(kin)
    P, R = coords_to_arrays(kin.task, lo + (hi - lo) * rng.random((samples, kin.task.dim)))
    t0 = time.perf_counter()
    _, ok = kin.inverse_batch(P, R)
    r["batch_per_s"] = samples / (time.perf_counter() - t0)
    r["batch_valid_fraction"] = float(ok.mean())
    loop = [(P[i], R[i]) for i in range(min(samples, 2000))]
    from .kinematics.task_space import Pose

    def single(pr):
        try:
            kin.inverse(Pose(*pr))
        except PkmError:
            pass
    r["loop_per_s"] = 1e6 / _per_call_us(single, loop, repeat=1)

    qa = [q[kin.model.actuated_idx] for q in qs]
    warm = [_warm_guess(kin, p, rng) for p in poses]
    home = kin.task.pose(np.asarray(kin.model.config["home"], float))
    its = {"warm": [], "cold": []}
    failures = {"warm": 0, "cold": 0}

    def fk(args, key):
        # a cold start far from the pose may converge to another assembly mode (then a limit
        # error) or not at all: counted, as that is part of what a warm start buys
        try:
            its[key].append(forward_kinematics(kin, args[0], args[1]).iterations)
        except PkmError:
            failures[key] += 1
    r["fk_warm_us"] = _per_call_us(lambda i: fk((qa[i], warm[i]), "warm"), range(len(poses)))
    r["fk_cold_us"] = _per_call_us(lambda i: fk((qa[i], home), "cold"), range(len(poses)))
    r["fk_warm_iterations"] = float(np.mean(its["warm"])) if its["warm"] else float("nan")
    r["fk_cold_iterations"] = float(np.mean(its["cold"])) if its["cold"] else float("nan")
    for key in failures:  # fraction of solves that failed (each pose solved once per timing pass)
        r[f"fk_{key}_failures"] = failures[key] / (failures[key] + len(its[key]))
    return r


def bench_kinematics(robots=None, samples=100_000, as_json=False):
    rows = []
    if not as_json:
        print(f"kinematics benchmark: {samples} poses for the batched IK; targets for the hexapods "
              f"{', '.join(HEXAPODS)}: IK+J <= {TARGETS['ik_jacobian_us']:.0f} us, batched >= "
              f"{TARGETS['batch_per_s']:.0e}/s, FK warm <= {TARGETS['fk_warm_us']:.0f} us")
        print(f"{'robot':26s} {'IK+J us':>8s} {'generic J':>9s} {'ratio':>6s} | {'batch /s':>9s} {'loop /s':>8s} "
              f"{'ratio':>6s} | {'FK warm us':>10s} {'it':>4s} {'cold us':>8s} {'it':>4s} {'ratio':>6s}")
    for robot, variant in robot_list(robots):
        r = bench_robot(robot, variant, samples=samples)
        hexapod = robot in HEXAPODS
        r["meets_targets"] = (None if not hexapod else bool(
            r["ik_jacobian_us"] <= TARGETS["ik_jacobian_us"] and r["batch_per_s"] >= TARGETS["batch_per_s"]
            and r["fk_warm_us"] <= TARGETS["fk_warm_us"]))
        rows.append(r)
        if not as_json:
            name = robot + (f" ({variant})" if variant else "")
            print(f"{name:26s} {r['ik_jacobian_us']:8.1f} {r['generic_jacobian_us']:9.1f} "
                  f"{r['generic_jacobian_us'] / r['ik_jacobian_us']:6.1f} | {r['batch_per_s']:9.3g} "
                  f"{r['loop_per_s']:8.3g} {r['batch_per_s'] / r['loop_per_s']:6.1f} | {r['fk_warm_us']:10.1f} "
                  f"{r['fk_warm_iterations']:4.1f} {r['fk_cold_us']:8.1f} {r['fk_cold_iterations']:4.1f} "
                  f"{r['fk_cold_us'] / r['fk_warm_us']:6.1f}"
                  + (f"  (cold failed {r['fk_cold_failures']:.0%})" if r["fk_cold_failures"] else "")
                  + ("" if r["meets_targets"] is None else ("   targets met" if r["meets_targets"]
                                                            else "   TARGETS MISSED")))
    if not as_json:
        print("ratio columns: baseline / ours (generic constraint-model Jacobian, Python loop of single IK calls, "
              "FK cold-started from home)")
    else:
        print(json.dumps(rows, indent=2))
    return rows


def kinematics_tour(as_json=False, deg=False):
    """Home and demo poses of every robot through IK, FK, Jacobian condition number and singularity class."""
    rows = []
    for robot, variant in robot_list():
        kin = robot_kinematics(robot, variant)
        cfg = kin.model.config
        data = kin.model.create_data()
        poses = [("home", cfg["home"])] + [(f"demo{i + 1}", x) for i, x in enumerate(cfg.get("demo_poses") or ())]
        for label, x in poses:
            x = np.asarray(x, float)
            row = {"robot": robot, "variant": variant, "pose": label, "coords": x}
            try:
                pose = kin.task.pose(x)
                q = kin.inverse(pose).q
                row["closure_residual"] = float(np.abs(closure_residual(kin.model, data, q)).max())
                guess = kin.task.pose(np.asarray(cfg["home"], float)) if label != "home" else \
                    kin.task.retract(pose, np.full(kin.task.dim, 1e-2))
                fk = forward_kinematics(kin, q[kin.model.actuated_idx], guess)
                row["fk_error"] = float(np.linalg.norm(kin.task.difference(fk.pose, pose)))
                row["fk_iterations"] = fk.iterations
                rep = singularity(kin, pose)
                row["condition_number"] = rep.condition_number
                row["singularity"] = rep.classification
                row["status"] = "ok"
            except PkmError as exc:
                row["status"] = f"{type(exc).__name__}: {exc}"
            rows.append(row)
    if as_json:
        print(json.dumps(rows, indent=2, default=lambda o: o.tolist()))
        return rows
    print("kinematics tour: every robot, home and demo poses -> IK (all joints) -> FK (Newton) -> J\n")
    print(f"{'robot':28s} {'pose':6s} {'task coordinates':44s} {'closure':>8s} {'FK err':>8s} {'it':>3s} "
          f"{'kappa(J)':>9s} {'singularity':12s}")
    for r in rows:
        name = r["robot"] + (f" ({r['variant']})" if r["variant"] else "")
        kin = robot_kinematics(r["robot"], r["variant"])
        x = np.where(np.isin(np.arange(kin.task.dim), kin.task.angular), np.degrees(r["coords"]), r["coords"]) \
            if deg else r["coords"]
        coords = " ".join(f"{v:.4g}" for v in x)
        if r["status"] == "ok":
            print(f"{name:28s} {r['pose']:6s} {coords:44s} {r['closure_residual']:8.1e} {r['fk_error']:8.1e} "
                  f"{r['fk_iterations']:3d} {r['condition_number']:9.3g} {r['singularity']:12s}")
        else:
            print(f"{name:28s} {r['pose']:6s} {coords:44s} {r['status']}")
    print("\nclosure: max closure residual (m) at the IK solution; FK err: |pose(FK(IK(pose))) - pose|; "
          "angles in " + ("degrees" if deg else "radians"))
    return rows


# ----------------------------------------------------------------------------- dynamics

DYN_TARGETS = {"palida": {"id_us": 30.0, "batch_per_s": 1e5}}


def _circle(kin, n, radius_frac=0.2, period=1.0):
    """A circle in the first two task coordinates around home: (positions, rotations, twists, accels)."""
    from .kinematics.workspace import coords_to_arrays

    lo, hi = workspace_box(kin)
    home = np.asarray(kin.model.config["home"], float)
    r = radius_frac * np.min((hi - lo)[:2])
    w = 2 * np.pi / period
    t = np.linspace(0, period, n, endpoint=False)
    X = np.tile(home, (n, 1))
    X[:, 0] += r * np.cos(w * t)
    X[:, 1] += r * np.sin(w * t)
    V = np.zeros_like(X)
    A = np.zeros_like(X)
    V[:, 0], V[:, 1] = -r * w * np.sin(w * t), r * w * np.cos(w * t)
    A[:, 0], A[:, 1] = -r * w * w * np.cos(w * t), -r * w * w * np.sin(w * t)
    P, R = coords_to_arrays(kin.task, X)
    return P, R, V, A


def bench_dynamics_robot(robot, variant, n_states=100, n_traj=2000, seed=0):
    from .dynamics import robot_dynamics
    from .dynamics.formulations import formulation, methods_for
    from .dynamics.parameters import sample_states
    from .kinematics.task_space import Pose

    dyn = robot_dynamics(robot, variant)
    states = sample_states(dyn, n_states, np.random.default_rng(seed))
    methods = methods_for(robot)
    form = formulation(methods[0], dyn) if methods else None
    friction = bool(form is not None and getattr(form, "models_friction", False))
    r = {"robot": robot, "variant": variant, "method": methods[0] if methods else None, "friction": friction}
    r["generic_id_us"] = _per_call_us(lambda s: dyn.inverse_dynamics(*s, friction=friction), states)
    r["generic_mass_us"] = _per_call_us(lambda s: dyn.mass_matrix(s[0]), states)
    taus = [dyn.inverse_dynamics(*s, friction=friction).tau for s in states]
    r["generic_fd_us"] = _per_call_us(lambda i: dyn.forward_dynamics(states[i][0], states[i][1], taus[i],
                                                                     friction=friction), range(len(states)))
    P, R, V, A = _circle(dyn.kin, n_traj)
    traj = [(Pose(P[i], R[i]), V[i], A[i]) for i in range(n_traj)]
    t0 = time.perf_counter()
    for s in traj:
        dyn.inverse_dynamics(*s, friction=friction)
    r["generic_batch_per_s"] = n_traj / (time.perf_counter() - t0)
    if form is not None:
        r["form_id_us"] = _per_call_us(lambda s: form.inverse_dynamics(*s, friction=friction), states)
        if hasattr(form, "inverse_dynamics_batch"):
            form.inverse_dynamics_batch(P[:10], R[:10], V[:10], A[:10], friction=friction)   # JIT warm-up
            t0 = time.perf_counter()
            form.inverse_dynamics_batch(P, R, V, A, friction=friction)
            r["form_batch_per_s"] = n_traj / (time.perf_counter() - t0)
        else:
            t0 = time.perf_counter()
            for s in traj:
                form.inverse_dynamics(*s, friction=friction)
            r["form_batch_per_s"] = n_traj / (time.perf_counter() - t0)
        if hasattr(form, "mass_matrix"):
            r["form_mass_us"] = _per_call_us(lambda s: form.mass_matrix(s[0]), states)
            if not dyn.redundant:
                zero = np.zeros(dyn.n)

                def fd(i):
                    pose, twist, _ = states[i]
                    bias = form.inverse_dynamics(pose, twist, zero, friction=friction)
                    J = dyn.kin.jacobian(pose)
                    return np.linalg.solve(form.mass_matrix(pose), J.T @ (taus[i] - bias))
                r["form_fd_us"] = _per_call_us(fd, range(len(states)))
    tgt = DYN_TARGETS.get(robot)
    if tgt and form is not None:
        r["meets_targets"] = bool(min(r["form_id_us"], r["generic_id_us"]) <= tgt["id_us"]
                                  and max(r["form_batch_per_s"], r["generic_batch_per_s"]) >= tgt["batch_per_s"])
    return r


def bench_dynamics(robots=None, as_json=False):
    rows = []
    if not as_json:
        print("dynamics benchmark: generic engine (pinocchio tree + closures, virtual power) beside the robot's "
              "paper formulation;\nratio = generic / formulation. Target palida (friction in all joints): "
              "inverse dynamics <= 30 us single, >= 1e5 samples/s batched.\n")
        print(f"{'robot':26s} {'method':22s} | {'ID us':>7s} {'form':>7s} {'ratio':>5s} | {'batch /s':>9s} "
              f"{'form':>9s} {'ratio':>5s} | {'M us':>6s} {'form':>6s} | {'FD us':>6s} {'form':>6s}")
    for robot, variant in robot_list(robots):
        r = bench_dynamics_robot(robot, variant)
        rows.append(r)
        if as_json:
            continue
        name = robot + (f" ({variant})" if variant else "")
        meth = (r["method"] or "-") + (" +friction" if r["friction"] else "")

        def f(key, fmt):
            return format(r[key], fmt) if key in r else "-"

        def ratio(a, b, inverse=False):
            if a not in r or b not in r:
                return "-"
            return f"{(r[b] / r[a] if inverse else r[a] / r[b]):.1f}"
        print(f"{name:26s} {meth:22s} | {f('generic_id_us', '7.1f')} {f('form_id_us', '7.1f'):>7s} "
              f"{ratio('generic_id_us', 'form_id_us'):>5s} | {f('generic_batch_per_s', '9.3g')} "
              f"{f('form_batch_per_s', '9.3g'):>9s} {ratio('generic_batch_per_s', 'form_batch_per_s', True):>5s} | "
              f"{f('generic_mass_us', '6.1f')} {f('form_mass_us', '6.1f'):>6s} | {f('generic_fd_us', '6.1f')} "
              f"{f('form_fd_us', '6.1f'):>6s}"
              + ("" if "meets_targets" not in r else ("   targets met" if r["meets_targets"] else "   TARGETS MISSED")))
    if as_json:
        print(json.dumps(rows, indent=2))
    return rows
