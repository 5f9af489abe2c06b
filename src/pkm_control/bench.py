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
