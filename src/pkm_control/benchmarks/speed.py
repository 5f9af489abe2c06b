"""Benchmarks and the kinematics tour behind ``pkm bench`` and ``pkm demo``.

Every figure is measured in the run that prints it, next to a baseline measured
in the same run on the same poses: the generic constraint-model Jacobian for
IK + J, a Python loop of single calls for the batched IK, a cold start from the
home pose for the warm-started FK.
"""

from __future__ import annotations

import time

import numpy as np

from ..description import closure_residual, robot_names, robot_variants
from ..errors import InvalidInputError, PkmError
from ..kinematics import robot_kinematics
from ..kinematics.analysis import singularity
from ..kinematics.forward import forward_kinematics
from ..kinematics.workspace import coords_to_arrays, random_poses, workspace_box
from .report import Column, Provenance, Table, print_json, ratio

#: issue targets for the hexapods on a 2-core machine
TARGETS = {"ik_jacobian_us": 20.0, "batch_per_s": 2e5, "fk_warm_us": 100.0}
HEXAPODS = ("stewart", "palida", "lopes")
#: the most poses of the batched-IK throughput run: about 1 GB for a hexapod's batch (q, legs, temporaries)
SAMPLES_MAX = 1_000_000


def robot_list(robots=None):
    """(robot, variant) pairs: every variant of every shipped robot, or of the ones named."""
    return [(r, v) for r in (robots or robot_names()) for v in robot_variants(r)]


#: passes over the states of each per-call figure: the best (least disturbed) pass counts
REPEAT = 7


def _cpu_us(timed, repeat=REPEAT):
    """CPU time per call in microseconds of each ``name: (fn, items)``: the time this thread spent in the calls
    (time.thread_time), which the other processes of a loaded machine do not add to as they do to the wall time,
    the best of ``repeat`` passes over ``items``. The passes of the figures alternate, so that a figure and the
    baseline it is divided by see the same load."""
    best = dict.fromkeys(timed, np.inf)
    for _ in range(repeat):
        for name, (fn, items) in timed.items():
            t0 = time.thread_time()
            for it in items:
                fn(it)
            best[name] = min(best[name], (time.thread_time() - t0) / len(items) * 1e6)
    return {name: float(us) for name, us in best.items()}


def _per_call_us(fn, items, repeat=REPEAT):
    """``_cpu_us`` of one figure."""
    return _cpu_us({"": (fn, items)}, repeat)[""]


def _per_s(fn, count):
    """Throughput of one call over ``count`` samples, by the CPU time of the process (time.process_time: a
    library's worker threads included)."""
    t0 = time.process_time()
    fn()
    return count / max(time.process_time() - t0, 1e-9)


def _warm_guess(kin, pose, rng):
    """A pose one 1 kHz control period away at 1 m/s and 1 rad/s: 1 mm and 1 mrad."""
    d = rng.standard_normal(kin.task.dim)
    d /= np.linalg.norm(d)
    return kin.task.retract(pose, 1e-3 * d)


def bench_robot(robot, variant, samples=100_000, n_poses=200, seed=0):
    if isinstance(samples, bool) or not isinstance(samples, (int, np.integer)) or not 1 <= samples <= SAMPLES_MAX:
        raise InvalidInputError(f"samples must be a whole number from 1 to {SAMPLES_MAX:,}, got {samples!r}")
    kin = robot_kinematics(robot, variant)
    rng = np.random.default_rng(seed)
    poses = random_poses(kin, n_poses, rng)
    qs = [kin.inverse(p).q for p in poses]
    data = kin.model.create_data()
    r = {"robot": robot, "variant": variant}
    us = _cpu_us({"ik": (lambda p: kin.inverse(p, jacobian=True), poses),
                  "generic": (lambda q: kin.constraint_joint_jacobian(q, data), qs)})
    r["ik_jacobian_us"], r["generic_jacobian_us"] = us["ik"], us["generic"]

    lo, hi = workspace_box(kin)
    P, R = coords_to_arrays(kin.task, lo + (hi - lo) * rng.random((samples, kin.task.dim)))
    out = []
    r["batch_per_s"] = _per_s(lambda: out.append(kin.inverse_batch(P, R)), samples)
    ok = out[0][1]
    r["batch_valid_fraction"] = float(ok.mean())
    loop = [(P[i], R[i]) for i in range(min(samples, 2000))]
    from ..kinematics.task_space import Pose

    def single(pr):
        try:
            kin.inverse(Pose(*pr))
        except PkmError:
            pass
    r["loop_per_s"] = 1e6 / _per_call_us(single, loop, repeat=1)

    qa = [q[kin.model.actuated_idx] for q in qs]
    warm = [_warm_guess(kin, p, rng) for p in poses]
    home = kin.home_pose()
    its = {"warm": [], "cold": []}
    failures = {"warm": 0, "cold": 0}

    def fk(args, key):
        # a cold start far from the pose may converge to another assembly mode (then a limit
        # error) or not at all: counted, as that is part of what a warm start buys
        try:
            its[key].append(forward_kinematics(kin, args[0], args[1]).iterations)
        except PkmError:
            failures[key] += 1
    us = _cpu_us({"warm": (lambda i: fk((qa[i], warm[i]), "warm"), range(len(poses))),
                  "cold": (lambda i: fk((qa[i], home), "cold"), range(len(poses)))})
    r["fk_warm_us"], r["fk_cold_us"] = us["warm"], us["cold"]
    r["fk_warm_iterations"] = float(np.mean(its["warm"])) if its["warm"] else float("nan")
    r["fk_cold_iterations"] = float(np.mean(its["cold"])) if its["cold"] else float("nan")
    for key in failures:  # fraction of solves that failed (each pose solved once per timing pass)
        r[f"fk_{key}_failures"] = failures[key] / (failures[key] + len(its[key]))
    return r


#: issue 21 par. 7: the numeric family, warm-started along a trajectory (hexapods)
NUMERIC_TARGETS = {"numeric_ik_jacobian_us": 100.0, "numeric_fk_us": 150.0}
#: issue 21 par. 7: the generic engine against pinocchio at the same states (times slower, at most)
GENERIC_TARGETS = {"id_analytic_x": 5.0, "id_numeric_x": 15.0, "fd_x": 1.5}


def _load_note() -> str:
    """How the figures were taken and the machine's load at the end of the run."""
    import os

    return (f"times: CPU time of the benchmark's thread (time.thread_time; batches: time.process_time), best of "
            f"{REPEAT} passes, a figure's passes alternating with its baseline's; load average "
            f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores at the end of the run (CPU time does not count the "
            "other processes' share, but shared caches still slow a loaded machine a little)")


def _verdict(value, target):
    """PASS / MISS of a figure against its target (at most), "-" without one."""
    if target is None or value is None:
        return "-"
    return "PASS" if value <= target else "MISS"


def _trajectory(kin, n=300, points=1000):
    """The first ``n`` states of ``_circle`` at ``points`` per second (1 kHz: 1 ms apart), as (pose, twist, accel)."""
    from ..kinematics.task_space import Pose

    P, R, V, A = _circle(kin, points)
    return [(Pose(P[i], R[i]), V[i], A[i]) for i in range(n)]


def bench_numeric_robot(robot, variant, n=300):
    """Numeric IK + J and FK along a 1 kHz trajectory (each call warm-started by the one before, as a controller's
    and an estimator's calls are), beside the robot's analytic family at the same poses (robots that have one)."""
    from ..description import load_robot
    from ..kinematics.numeric import Kinematics as Numeric

    kin = robot_kinematics(robot, variant)
    numeric = kin if kin.family == "numeric" else Numeric(load_robot(robot, variant))
    traj = [p for p, _, _ in _trajectory(kin, n)]
    qa = [kin.actuated(p) for p in traj]
    r = {"robot": robot, "variant": variant, "family": kin.family}

    def ik(k):
        return lambda p: k.inverse(p, jacobian=True)

    def fk(k):
        def run(i):
            forward_kinematics(k, qa[i], traj[i - 1] if i else traj[0])
        return run
    timed = {"numeric_ik_jacobian_us": (ik(numeric), traj), "numeric_fk_us": (fk(numeric), range(len(traj)))}
    if kin.family != "numeric":
        timed |= {"analytic_ik_jacobian_us": (ik(kin), traj), "analytic_fk_us": (fk(kin), range(len(traj)))}
    r |= _cpu_us(timed)
    hexapod = robot in HEXAPODS
    for key, target in NUMERIC_TARGETS.items():
        r[f"{key}_target"] = target if hexapod else None
    return r


def _name(r):
    return r["robot"] + (f" ({r['variant']})" if r["variant"] else "")


def _targets(r):
    return "" if r.get("meets_targets") is None else ("met" if r["meets_targets"] else "MISSED")


def _show(table, rows, as_json):
    """The table, or with ``as_json`` the rows as JSON, both with the machine and the command of this run."""
    provenance = Provenance.now()
    if as_json:
        print_json(rows, provenance)
    else:
        print(table.text(provenance))


def bench_kinematics(robots=None, samples=100_000, as_json=False):
    rows = []
    for robot, variant in robot_list(robots):
        r = bench_robot(robot, variant, samples=samples)
        hexapod = robot in HEXAPODS
        r["meets_targets"] = (None if not hexapod else bool(
            r["ik_jacobian_us"] <= TARGETS["ik_jacobian_us"] and r["batch_per_s"] >= TARGETS["batch_per_s"]
            and r["fk_warm_us"] <= TARGETS["fk_warm_us"]))
        rows.append(r)
    columns = (Column("robot", align="<"), Column("IK+J", "us", ".1f"), Column("generic J", "us", ".1f"),
               Column("x generic", "", ".1f"), Column("batch IK", "/s", ".3g"), Column("loop", "/s", ".3g"),
               Column("x loop", "", ".1f"), Column("FK warm", "us", ".1f"), Column("it", "", ".1f"),
               Column("FK cold", "us", ".1f"), Column("it", "", ".1f"), Column("x cold", "", ".1f"),
               Column("cold failed", "", ".0%"), Column("targets", align="<"))
    table = Table(f"kinematics benchmark: {samples} poses for the batched IK; targets for the hexapods "
                  f"{', '.join(HEXAPODS)}: IK+J <= {TARGETS['ik_jacobian_us']:.0f} us, batched >= "
                  f"{TARGETS['batch_per_s']:.0e}/s, FK warm <= {TARGETS['fk_warm_us']:.0f} us",
                  ", ".join(dict.fromkeys(r["robot"] for r in rows)), columns,
                  tuple((_name(r), r["ik_jacobian_us"], r["generic_jacobian_us"],
                         ratio(r["generic_jacobian_us"], r["ik_jacobian_us"]), r["batch_per_s"], r["loop_per_s"],
                         ratio(r["loop_per_s"], r["batch_per_s"], higher_is_better=True), r["fk_warm_us"],
                         r["fk_warm_iterations"], r["fk_cold_us"], r["fk_cold_iterations"],
                         ratio(r["fk_cold_us"], r["fk_warm_us"]), r["fk_cold_failures"], _targets(r)) for r in rows),
                  ("x columns: ours over the baseline measured in the same run (generic constraint-model Jacobian, "
                   "Python loop of single IK calls, FK cold-started from home)", _load_note()))
    numeric = [bench_numeric_robot(robot, variant) for robot, variant in robot_list(robots)]
    for r, n in zip(rows, numeric):
        r["numeric_family"] = n
    if as_json:
        _show(table, rows, True)
        return rows
    provenance = Provenance.now()
    ncols = (Column("robot", align="<"), Column("family", align="<"), Column("num IK+J", "us", ".1f"),
             Column("target", "us", ".0f"), Column("verdict", align="<"), Column("num FK", "us", ".1f"),
             Column("target", "us", ".0f"), Column("verdict", align="<"), Column("analytic IK+J", "us", ".1f"),
             Column("analytic FK", "us", ".1f"), Column("x IK", "", ".1f"), Column("x FK", "", ".1f"))
    ntable = Table("numeric kinematics (issue 21 par. 7): IK + J and FK along a 1 kHz circle, each call warm-started "
                   "by the one before, beside the analytic family at the same poses",
                   table.robot, ncols,
                   tuple((_name(n), n["family"], n["numeric_ik_jacobian_us"], n["numeric_ik_jacobian_us_target"],
                          _verdict(n["numeric_ik_jacobian_us"], n["numeric_ik_jacobian_us_target"]), n["numeric_fk_us"],
                          n["numeric_fk_us_target"], _verdict(n["numeric_fk_us"], n["numeric_fk_us_target"]),
                          n.get("analytic_ik_jacobian_us"), n.get("analytic_fk_us"),
                          ratio(n["numeric_ik_jacobian_us"], n.get("analytic_ik_jacobian_us")),
                          ratio(n["numeric_fk_us"], n.get("analytic_fk_us"))) for n in numeric),
                   ("targets for the hexapods (numeric family): IK + J <= 100 us, FK <= 150 us; x: how many times the "
                    "analytic family is ahead of the numeric one", _load_note()))
    print(table.text(provenance))
    print()
    print(ntable.text(provenance))
    return rows


def kinematics_tour(as_json=False, deg=False):
    """Home and demo poses of every robot through IK, FK, Jacobian condition number and singularity class."""
    rows = []
    for robot, variant in robot_list():
        kin = robot_kinematics(robot, variant)
        cfg = kin.model.spec
        data = kin.model.create_data()
        poses = [("home", cfg.home)] + [(f"demo{i + 1}", x) for i, x in enumerate(cfg.demo_poses)]
        for label, x in poses:
            x = np.asarray(x, float)
            row = {"robot": robot, "variant": variant, "pose": label, "coords": x}
            try:
                pose = kin.task.pose(x)
                q = kin.inverse(pose).q
                row["closure_residual"] = float(np.abs(closure_residual(kin.model, data, q)).max())
                guess = kin.home_pose() if label != "home" else \
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

    def cells(r):
        task = robot_kinematics(r["robot"], r["variant"]).task
        x = np.where(np.isin(np.arange(task.dim), task.angular), np.degrees(r["coords"]), r["coords"]) \
            if deg else r["coords"]
        figures = (r["closure_residual"], r["fk_error"], r["fk_iterations"], r["condition_number"], r["singularity"]) \
            if r["status"] == "ok" else (None, None, None, None, r["status"])
        return (_name(r), r["pose"], " ".join(f"{v:.4g}" for v in x), *figures)

    columns = (Column("robot", align="<"), Column("pose", align="<"), Column("task coordinates", align="<"),
               Column("closure", "m", ".1e"), Column("FK err", "", ".1e"), Column("it", "", "d"),
               Column("kappa(J)", "", ".3g"), Column("singularity or error", align="<"))
    table = Table("kinematics tour: every robot, home and demo poses -> IK (all joints) -> FK (Newton) -> J",
                  ", ".join(dict.fromkeys(r["robot"] for r in rows)), columns,
                  tuple(cells(r) for r in rows),
                  ("closure: max closure residual (m) at the IK solution; FK err: |pose(FK(IK(pose))) - pose|; "
                   "angles in " + ("degrees" if deg else "radians"),))
    _show(table, rows, as_json)
    return rows


# ----------------------------------------------------------------------------- dynamics

DYN_TARGETS = {"palida": {"id_us": 30.0, "batch_per_s": 1e5}}


def _circle(kin, n, radius_frac=0.2, period=1.0):
    """A circle in the first two task coordinates around home: (positions, rotations, twists, accels)."""
    from ..kinematics.workspace import coords_to_arrays

    lo, hi = workspace_box(kin)
    home = kin.model.spec.home
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
    from ..dynamics import robot_dynamics
    from ..dynamics.formulations import formulation, methods_for
    from ..dynamics.parameters import sample_states
    from ..kinematics.task_space import Pose

    dyn = robot_dynamics(robot, variant)
    states = sample_states(dyn, n_states, np.random.default_rng(seed))
    methods = methods_for(robot)
    form = formulation(methods[0], dyn) if methods else None
    friction = form is not None and form.models_friction
    r = {"robot": robot, "variant": variant, "method": methods[0] if methods else None, "friction": friction}
    r["generic_id_us"] = _per_call_us(lambda s: dyn.inverse_dynamics(*s, friction=friction), states)
    r["generic_mass_us"] = _per_call_us(lambda s: dyn.mass_matrix(s[0]), states)
    taus = [dyn.inverse_dynamics(*s, friction=friction).tau for s in states]
    r["generic_fd_us"] = _per_call_us(lambda i: dyn.forward_dynamics(states[i][0], states[i][1], taus[i],
                                                                     friction=friction), range(len(states)))
    P, R, V, A = _circle(dyn.kin, n_traj)
    traj = [(Pose(P[i], R[i]), V[i], A[i]) for i in range(n_traj)]
    r["generic_batch_per_s"] = _per_s(lambda: [dyn.inverse_dynamics(*s, friction=friction) for s in traj], n_traj)
    if form is not None:
        r["form_id_us"] = _per_call_us(lambda s: form.inverse_dynamics(*s, friction=friction), states)
        if "inverse_dynamics_batch" in form.provides:
            form.inverse_dynamics_batch(P[:10], R[:10], V[:10], A[:10], friction=friction)   # JIT warm-up
            r["form_batch_per_s"] = _per_s(lambda: form.inverse_dynamics_batch(P, R, V, A, friction=friction),
                                           n_traj)
        else:
            r["form_batch_per_s"] = _per_s(lambda: [form.inverse_dynamics(*s, friction=friction) for s in traj],
                                           n_traj)
        if "mass_matrix" in form.provides:
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


def bench_generic_robot(robot, variant, n=200):
    """The generic engine against pinocchio at the same states of a 1 kHz trajectory (rigid body, no friction, as
    rnea): inverse dynamics beside ``rnea`` on the spanning tree, forward dynamics beside ``constraintDynamics``
    with the robot's constraint models (robots whose closures pinocchio holds), for the robot's kinematics family
    and, where that is analytic, the numeric family too. ``ik_us``: the IK of the state (q, v, a and G), the share
    of the generic call that pinocchio's figures do not include."""
    import pinocchio as pin

    from ..description import load_robot
    from ..dynamics import robot_dynamics
    from ..dynamics.engine import ClosedLoopDynamics
    from ..kinematics.numeric import Kinematics as Numeric

    dyn = robot_dynamics(robot, variant)
    states = _trajectory(dyn.kin, n)
    m = dyn.pin_model
    d = m.createData()
    motions = [dyn.kin.inverse(*st, check_limits=False) for st in states]
    taus = [dyn.inverse_dynamics(*st, friction=False).tau for st in states]
    timed = {"rnea": (lambda mo: pin.rnea(m, d, mo.q, mo.v, mo.a), motions)}
    if dyn.uses_constraint_dynamics:
        models, datas, cd = dyn._pinocchio_constraints()
        trees = []
        for mo, tau in zip(motions, taus):
            t = np.zeros(m.nv)
            t[dyn.model.actuated_idx] = tau
            trees.append((mo.q, mo.v, t))
        timed["cd"] = (lambda x: pin.constraintDynamics(m, cd, x[0], x[1], x[2], models, datas), trees)
    engines = [dyn] + ([ClosedLoopDynamics(Numeric(load_robot(robot, variant)))] if dyn.kin.family != "numeric"
                       else [])
    for k, eng in enumerate(engines):
        timed[f"id{k}"] = (lambda st, eng=eng: eng.inverse_dynamics(*st, friction=False), states)
        timed[f"ik{k}"] = (lambda st, eng=eng: eng.kin.motion_and_joint_jacobian(*st), states)
        timed[f"fd{k}"] = (lambda i, eng=eng: eng.forward_dynamics(states[i][0], states[i][1], taus[i],
                                                                   friction=False), range(len(states)))
    us = _cpu_us(timed)
    rnea_us, cd_us = us["rnea"], us.get("cd")
    out = []
    for k, eng in enumerate(engines):
        family = eng.kin.family
        r = {"robot": robot, "variant": variant, "family": family, "rnea_us": rnea_us,
             "constraint_dynamics_us": cd_us, "id_us": us[f"id{k}"], "ik_us": us[f"ik{k}"], "fd_us": us[f"fd{k}"]}
        r["id_x"] = r["id_us"] / rnea_us
        r["id_x_target"] = GENERIC_TARGETS["id_numeric_x" if family == "numeric" else "id_analytic_x"]
        r["fd_x"] = None if cd_us is None else r["fd_us"] / cd_us
        r["fd_x_target"] = None if cd_us is None else GENERIC_TARGETS["fd_x"]
        # how far the robot's analytic family stays ahead of the numeric one (ID and FD, numeric over analytic)
        r["id_x_analytic"] = r["id_us"] / out[0]["id_us"] if k else None
        r["fd_x_analytic"] = r["fd_us"] / out[0]["fd_us"] if k else None
        out.append(r)
    return out


def _generic_table(rows):
    columns = (Column("robot", align="<"), Column("family", align="<"), Column("ID", "us", ".1f"),
               Column("rnea", "us", ".1f"), Column("x rnea", "", ".1f"), Column("target", "", ".1f"),
               Column("verdict", align="<"), Column("of it IK", "us", ".1f"), Column("FD", "us", ".1f"),
               Column("constraintDyn", "us", ".1f"), Column("x cD", "", ".2f"), Column("target", "", ".1f"),
               Column("verdict", align="<"), Column("ID x analytic", "", ".1f"), Column("FD x analytic", "", ".1f"))
    return Table("generic engine against pinocchio (issue 21 par. 7): the same states of a 1 kHz circle, rigid body",
                 ", ".join(dict.fromkeys(r["robot"] for r in rows)), columns,
                 tuple((_name(r), r["family"], r["id_us"], r["rnea_us"], r["id_x"], r["id_x_target"],
                        _verdict(r["id_x"], r["id_x_target"]), r["ik_us"], r["fd_us"], r["constraint_dynamics_us"],
                        r["fd_x"], r["fd_x_target"], _verdict(r["fd_x"], r["fd_x_target"]), r["id_x_analytic"],
                        r["fd_x_analytic"]) for r in rows),
                 ("x: the generic call's time over pinocchio's at the same states, through the project's API "
                  "(inputs checked, pose in, actuator forces or task acceleration out). ID = IK (q, v, a, G: 'of it "
                  "IK') + rnea + the projection J^T tau = G^T tau_tree; FD = IK (q, v) + constraintDynamics with "
                  "the robot's constraint models + the task acceleration (planar closures: reduced M xddot = f, no "
                  "pinocchio baseline). Targets: ID <= 5x rnea with an analytic family, <= 15x with the numeric one; "
                  "FD <= 1.5x constraintDynamics. rnea and constraintDynamics are pinocchio's own floor on this "
                  "machine, measured in this run. x analytic: the numeric family over the robot's analytic one.",
                  _load_note()))


def bench_dynamics(robots=None, as_json=False):
    rows = [bench_dynamics_robot(robot, variant) for robot, variant in robot_list(robots)]
    generic = [g for robot, variant in robot_list(robots) for g in bench_generic_robot(robot, variant)]
    for r in rows:
        r["generic"] = [g for g in generic if (g["robot"], g["variant"]) == (r["robot"], r["variant"])]
    # r.get: a figure the robot's formulation does not give is None, printed "-"

    columns = (Column("robot", align="<"), Column("method", align="<"), Column("ID generic", "us", ".1f"),
               Column("ID form", "us", ".1f"), Column("x generic", "", ".1f"), Column("batch generic", "/s", ".3g"),
               Column("batch form", "/s", ".3g"), Column("x generic", "", ".1f"), Column("M generic", "us", ".1f"),
               Column("M form", "us", ".1f"), Column("FD generic", "us", ".1f"), Column("FD form", "us", ".1f"),
               Column("targets", align="<"))
    table = Table("dynamics benchmark: generic engine (pinocchio tree + closures, virtual power) beside the robot's "
                  "paper formulation", ", ".join(dict.fromkeys(r["robot"] for r in rows)), columns,
                  tuple((_name(r), (r["method"] or "-") + (" +friction" if r["friction"] else ""),
                         r["generic_id_us"], r.get("form_id_us"), ratio(r["generic_id_us"], r.get("form_id_us")),
                         r["generic_batch_per_s"], r.get("form_batch_per_s"),
                         ratio(r["generic_batch_per_s"], r.get("form_batch_per_s"), higher_is_better=True),
                         r["generic_mass_us"], r.get("form_mass_us"), r["generic_fd_us"], r.get("form_fd_us"),
                         _targets(r)) for r in rows),
                  ("x generic: the formulation over the generic engine measured in the same run. Target palida "
                   "(friction in all joints): inverse dynamics <= 30 us single, >= 1e5 samples/s batched.",
                   _load_note()))
    if as_json:
        _show(table, rows, True)
        return rows
    provenance = Provenance.now()
    print(table.text(provenance))
    print()
    print(_generic_table(generic).text(provenance))
    return rows


# ----------------------------------------------------------------------------- simulation

def _median_p99(seconds):
    us = np.asarray(seconds) * 1e6
    return float(np.median(us)), float(np.percentile(us, 99))


def bench_simulation_robot(robot, variant, steps=2000, dt=5e-4, warmup=20):
    """Wall time of one simulated period (friction, sign_eps DEFAULT_SIGN_EPS, one RK4 substep), the
    compiled (palida's step, or a numeric-kinematics robot's tree-coordinate step in one call) and the generic
    (Python stages, ``compiled=False``) ReducedSimulator in the same run on the same force profile (gravity
    compensation + PD holding home with the simulated robot's 'hold' gains + a 2 Hz sinusoid of 7.5 %
    of the force limit, computed outside the timing). Per path, (median, p99) in us of

    * ``step``: ReducedSimulator.step, one RK4 step;
    * ``period``: force saturation + step + ``actuated`` (the hardware contract reads only the
      actuated joints);

    and ``robot_step``: SimulatedRobot.step() as it stands (its read() solves the IK of every joint;
    it picks the compiled path by itself). ``first_step_s``: the first compiled step of the process
    (numba: compilation, or loading its cache).
    """
    from ..control.feedforward import FeedforwardModel
    from ..control.safety import ForceLimits, SafeBehaviour
    from ..dynamics import robot_dynamics
    from ..dynamics.engine import ClosedLoopDynamics
    from ..dynamics.simulation import ReducedSimulator
    from ..hardware.simulated import DEFAULT_SIGN_EPS, SimulatedRobot

    base = robot_dynamics(robot, variant)
    dyn = ClosedLoopDynamics(base.kin, gravity=base.gravity, sign_eps=DEFAULT_SIGN_EPS)
    clm = dyn.model
    home = dyn.kin.home_pose()
    hold = SafeBehaviour.for_model("hold", FeedforwardModel(dyn, "rigid"))
    target = hold.capture(dyn.kin.actuated(home), home)
    limits = ForceLimits.from_config(clm)
    amp = 0.075 * limits.limits
    phase = np.arange(clm.n_actuated)
    r = {"robot": robot, "variant": variant, "dt": dt, "steps": steps, "sign_eps": DEFAULT_SIGN_EPS}
    for name, flag in (("compiled", None), ("generic", False)):
        sim = ReducedSimulator(dyn, friction=True, compiled=flag)
        if name == "compiled" and not (sim.compiled or sim.tree_compiled):
            continue
        s = sim.state(home, np.zeros(dyn.n))
        q, qd = sim.actuated(s)
        t_step, t_period = [], []
        for k in range(warmup + steps):
            tau = hold.command(target, q, qd) + amp * np.sin(2 * np.pi * 2.0 * k * dt + phase)
            t0 = time.perf_counter()
            tau, _ = limits.apply(tau)
            t1 = time.perf_counter()
            s = sim.step(s, dt, tau)
            t2 = time.perf_counter()
            q, qd = sim.actuated(s)
            t3 = time.perf_counter()
            if k == 0 and name == "compiled":
                r["first_step_s"] = t2 - t1
            if k >= warmup:
                t_step.append(t2 - t1)
                t_period.append(t3 - t0)
        r[name] = {"step": _median_p99(t_step), "period": _median_p99(t_period)}
        r[f"{name}_tree"] = sim.tree
    robot_sim = SimulatedRobot(dyn, dt, sign_eps=DEFAULT_SIGN_EPS, cost_window=warmup + steps)
    st = robot_sim.reset(home)
    for k in range(warmup + steps):
        robot_sim.write(hold.command(target, st.position, st.velocity)
                        + amp * np.sin(2 * np.pi * 2.0 * k * dt + phase))
        st = robot_sim.step()
    r["robot_step"] = _median_p99(robot_sim.step_cost_us()[warmup:] * 1e-6)
    r["robot_step_compiled"] = robot_sim.sim.compiled or robot_sim.sim.tree_compiled
    return r


def bench_simulation(robots=None, steps=2000, as_json=False):
    """``bench_simulation_robot`` for each robot (default: palida, the one with a compiled step)."""
    rows = [bench_simulation_robot(robot, variant, steps=steps) for robot, variant in robot_list(robots or ["palida"])]
    table_rows, notes = [], []
    for r in rows:
        for path in ("compiled", "generic"):
            if path in r:
                x = ratio(r["generic"]["step"][0], r["compiled"]["step"][0]) if path == "compiled" else None
                label = f"{path} (tree coordinates)" if r.get(f"{path}_tree") else path
                table_rows.append((_name(r), label, *r[path]["step"], *r[path]["period"], x))
        inside = "compiled" if r["robot_step_compiled"] else "generic"
        table_rows.append((_name(r), f"robot ({inside} step inside)", *r["robot_step"], None, None, None))
        if "compiled" in r:
            notes.append(f"{_name(r)}: first compiled step of this process {r['first_step_s']:.2f} s (numba compile "
                         "or cache load)")
    columns = (Column("robot", align="<"), Column("path", align="<"), Column("step median", "us", ".1f"),
               Column("step p99", "us", ".1f"), Column("period median", "us", ".1f"), Column("period p99", "us", ".1f"),
               Column("x generic", "", ".0f"))
    table = Table(f"simulation benchmark: one period of the simulated robot (dt {rows[0]['dt'] * 1e3:g} ms, friction, "
                  f"sign_eps {rows[0]['sign_eps']:g}, 1 RK4 substep), {steps} periods per path in the same run",
                  ", ".join(dict.fromkeys(r["robot"] for r in rows)), columns, tuple(table_rows),
                  ("period = force saturation + ReducedSimulator.step + actuated(); robot = SimulatedRobot.step() "
                   "today (read() = IK of every joint); x generic: the generic median step over the compiled one",
                   *notes))
    _show(table, rows, as_json)
    return rows
