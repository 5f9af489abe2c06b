"""``pkm`` subcommands of the robot models: info, ik, fk, jacobian, workspace, id (inverse dynamics) and tour."""

from __future__ import annotations

import os
from functools import partial

import numpy as np

from ..errors import InvalidInputError, excerpt
from .common import add_command, count, emit, fmt, joints_out, kinematics_of, revolute_mask, task_in, task_out


def _residual(clm, q):
    from ..description import closure_residual

    r = closure_residual(clm, clm.create_data(), q)
    return float(np.abs(r).max()) if r.size else 0.0


def cmd_info(args):
    from ..description import load_robot, robot_names, robot_variants

    if not args.robot:
        if args.variant:
            raise InvalidInputError(f"--variant {args.variant} needs --robot")
        rows = {name: robot_variants(name) for name in robot_names()}
        text = "robots (variants; the first is the default):\n" + "\n".join(
            f"  {n:18s} {', '.join(v) if any(v) else '-'}" for n, v in rows.items())
        return emit(args, {"robots": rows}, text)
    kin = kinematics_of(args)
    clm = load_robot(args.robot, args.variant)
    home = clm.spec.require("home", "pkm info")
    data = {
        "robot": clm.name, "variant": clm.variant, "dof": kin.task.dim,
        "task_coordinates": list(kin.task.names), "task_velocity": list(kin.task.velocity_names),
        "angles": "degrees" if args.deg else "radians",
        "actuated_joints": list(clm.actuated_joints), "platform_joints": list(clm.platform_joints),
        "passive_joints": [clm.joint_names[i] for i in clm.passive_idx],
        "joints": list(clm.joint_names), "closures": [c.name for c in clm.closures],
        "constraint_rows": clm.n_constraints, "home": task_out(kin, home, args.deg),
    }
    text = "\n".join([
        f"robot {clm.name}" + (f" (variant {clm.variant})" if clm.variant else ""),
        f"  degrees of freedom : {kin.task.dim} ({kin.task.kind})",
        f"  task coordinates   : {' '.join(kin.task.names)}",
        f"  task velocity      : {' '.join(kin.task.velocity_names)}",
        f"  home pose          : {fmt(data['home'])}" + ("  (deg)" if args.deg else ""),
        f"  actuated joints    : {' '.join(clm.actuated_joints)}",
        f"  platform joints    : {' '.join(clm.platform_joints)}",
        f"  passive joints     : {' '.join(data['passive_joints'])}",
        f"  all joints ({len(clm.joint_names)})    : {' '.join(clm.joint_names)}",
        f"  closures           : {len(clm.closures)} ({clm.n_constraints} constraint rows)",
    ])
    emit(args, data, text)


def cmd_ik(args):
    kin = kinematics_of(args)
    clm = kin.model
    pose = kin.task.pose(task_in(kin, args.pose, args.deg, "--pose"))
    twist = None if args.twist is None else task_in(kin, args.twist, args.deg, "--twist")
    accel = None if args.accel is None else task_in(kin, args.accel, args.deg, "--accel")
    if accel is not None and twist is None:
        twist = np.zeros(kin.task.dim)
    m = kin.inverse(pose, twist, accel)
    res = _residual(clm, m.q)
    act = set(clm.actuated_idx.tolist())
    q = joints_out(clm, m.q, args.deg)
    v = None if m.v is None else joints_out(clm, m.v, args.deg)
    a = None if m.a is None else joints_out(clm, m.a, args.deg)
    joints = [{"name": n, "actuated": i in act, "position": q[i],
               **({} if v is None else {"velocity": v[i]}), **({} if a is None else {"acceleration": a[i]})}
              for i, n in enumerate(clm.joint_names)]
    head = f"{'joint':22s} {'act':3s} {'position':>12s}" + ("" if v is None else f" {'velocity':>12s}") + \
        ("" if a is None else f" {'acceleration':>12s}")
    lines = [head] + [f"{j['name']:22s} {'*' if j['actuated'] else ' ':3s} {j['position']:12.6g}"
                      + ("" if v is None else f" {j['velocity']:12.6g}")
                      + ("" if a is None else f" {j['acceleration']:12.6g}") for j in joints]
    unit = "deg for revolute joints" if args.deg else "m / rad"
    lines.append(f"closure residual: {res:.3g} m   (* = actuated; {unit})")
    emit(args, {"robot": clm.name, "variant": clm.variant, "joints": joints, "closure_residual": res},
          "\n".join(lines))


def cmd_fk(args):
    from ..kinematics.forward import forward_kinematics

    kin = kinematics_of(args)
    clm = kin.model
    qa = np.asarray(args.joints, float)
    if qa.shape != (clm.n_actuated,):
        raise InvalidInputError(f"--joints needs {clm.n_actuated} values ({' '.join(clm.actuated_joints)}), "
                                f"got {len(qa)}")
    if args.deg:
        qa = np.where(revolute_mask(clm)[clm.actuated_idx], np.radians(qa), qa)
    guess = clm.spec.require("home", "forward kinematics without --guess") if args.guess is None else \
        task_in(kin, args.guess, args.deg, "--guess")
    res = forward_kinematics(kin, qa, kin.task.pose(guess))
    x = task_out(kin, kin.task.coordinates(res.pose), args.deg)
    text = "\n".join([f"pose ({' '.join(kin.task.names)}): {fmt(x)}",
                      f"iterations: {res.iterations}   residual: {res.residual:.3g}"])
    emit(args, {"robot": clm.name, "variant": clm.variant, "pose": dict(zip(kin.task.names, x)),
                 "iterations": res.iterations, "residual": res.residual}, text)


def cmd_jacobian(args):
    from ..kinematics.analysis import singularity

    kin = kinematics_of(args)
    pose = kin.task.pose(task_in(kin, args.pose, args.deg, "--pose"))
    kin.inverse(pose)  # reachability and limits first: a clear error beats a Jacobian of nothing
    J = kin.jacobian(pose)
    rep = singularity(kin, pose)
    # kappa(J) is unbounded where J is exactly singular: "unbounded" in the text, null in JSON (never inf)
    kappa = rep.condition_number if np.isfinite(rep.condition_number) else None
    text = "\n".join(
        [f"J (qdot_a = J [{' '.join(kin.task.velocity_names)}]), SI units:"]
        + [f"  {a:18s} {fmt(row, 10, 4)}" for a, row in zip(kin.model.actuated_joints, J)]
        + [f"condition number: {'unbounded' if kappa is None else f'{kappa:.4g}'}   "
           f"dexterity 1/kappa: {rep.dexterity:.4g}",
           f"singularity: {rep.classification}  (J_q: {_det(rep.inverse_det)}sigma_min {rep.inverse_sigma_min:.3g};"
           f" J_x: {_det(rep.forward_det)}sigma_min {rep.forward_sigma_min:.3g})"])
    emit(args, {"robot": kin.model.name, "variant": kin.model.variant, "jacobian": J,
                 "task_velocity": list(kin.task.velocity_names), "actuated_joints": list(kin.model.actuated_joints),
                 "condition_number": kappa, "dexterity": rep.dexterity,
                 "singularity": dict(rep.__dict__, condition_number=kappa)}, text)


def _det(det):
    """'det 0.123, ' for a square matrix's determinant, nothing for a non-square one (None)."""
    return "" if det is None else f"det {det:.3g}, "


def _plot_path(text: str, varied: int):
    """The --plot file, checked before anything is computed: a type matplotlib writes, a directory that exists
    (a bare file name goes into results/, created), 1 to 3 varied coordinates."""
    from pathlib import Path

    from matplotlib.backend_bases import FigureCanvasBase

    if not 1 <= varied <= 3:
        raise InvalidInputError(f"--plot draws 1 to 3 varied coordinates, got {varied}")
    types = FigureCanvasBase.get_supported_filetypes()
    shown = excerpt(text)
    if "\0" in text:
        raise InvalidInputError(f"--plot {shown}: a file name cannot hold a NUL character")
    plot = Path(text)
    if plot.suffix[1:].lower() not in types:
        raise InvalidInputError(f"--plot {shown}: the extension must name a file type matplotlib writes "
                                f"({' '.join(sorted(types))}), got '{excerpt(plot.suffix)}'")
    if plot.name == text:
        plot = Path("results") / plot
        plot.parent.mkdir(exist_ok=True)
    elif not plot.parent.is_dir():
        raise InvalidInputError(f"--plot {shown}: directory {excerpt(str(plot.parent) + '/')} does not exist")
    longest = os.pathconf(plot.parent, "PC_NAME_MAX")
    if len(os.fsencode(plot.name)) > longest:
        raise InvalidInputError(f"--plot {shown}: the file name is longer than {longest} bytes")
    return plot


def cmd_workspace(args):
    from ..progress import progress_bar

    from ..kinematics.workspace import sample_workspace

    kin = kinematics_of(args)
    names = kin.task.names
    vary = args.vary or (["x", "y", "z"] if args.volume else list(names[:2]))
    plot = _plot_path(args.plot, len(vary)) if args.plot else None
    fixed = kin.model.spec.require("home", "a workspace slice without --fixed") if args.fixed is None else \
        task_in(kin, args.fixed, args.deg, "--fixed")
    res = sample_workspace(kin, vary, fixed, args.resolution, scale=args.scale,
                           progress=None if args.json else (lambda it: progress_bar(it, desc="dexterity", unit="pose")))
    stats = res.dexterity_stats()
    text = "\n".join([
        f"{kin.model.name}: {len(res.coords)} samples over {' x '.join(vary)} "
        f"(workspace box x {args.scale:g}) "
        f"(others at {fmt(task_out(kin, fixed, args.deg), 8, 4)})",
        f"reachable fraction: {res.reachable_fraction:.3f}",
        "dexterity 1/kappa(J): " + ("  ".join(f"{k} {v:.4g}" for k, v in stats.items()) or "no reachable sample")])
    if plot:
        _plot_workspace(kin, res, plot, args.deg)
        text += f"\nplot: {plot}"
    emit(args, {"robot": kin.model.name, "variant": kin.model.variant, "vary": vary, "samples": len(res.coords),
                 "reachable_fraction": res.reachable_fraction, "dexterity": stats,
                 "plot": plot and str(plot)}, text)


def _plot_workspace(kin, res, path, deg):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..kinematics.workspace import workspace_figure

    fig = workspace_figure(kin, res, deg)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)


def cmd_id(args):
    from ..dynamics import robot_dynamics
    from ..dynamics.formulations import formulation

    dyn = robot_dynamics(args.robot, args.variant)
    kin = dyn.kin
    pose = kin.task.pose(task_in(kin, args.pose, args.deg, "--pose"))
    kin.inverse(pose)  # reachability and every joint limit first, as `pkm ik` and `pkm jacobian`
    twist = task_in(kin, args.twist, args.deg, "--twist") if args.twist else np.zeros(kin.task.dim)
    accel = task_in(kin, args.accel, args.deg, "--accel") if args.accel else np.zeros(kin.task.dim)
    if args.method == "generic":
        friction = not args.no_friction
        tau = dyn.inverse_dynamics(pose, twist, accel, wrench=args.wrench, friction=friction).tau
    else:
        if args.wrench is not None:
            raise InvalidInputError(f"--wrench is supported by the generic method only, not by --method {args.method}")
        form = formulation(args.method, dyn)
        # a paper formulation includes friction only where the paper models it (Abdellatif)
        friction = bool(getattr(form, "models_friction", False)) and not args.no_friction
        tau = form.inverse_dynamics(pose, twist, accel, friction=friction)
    names = kin.model.actuated_joints
    text = "\n".join([f"actuator forces ({args.method}, friction {'on' if friction else 'off'}; N or Nm):"]
                     + [f"  {n:18s} {t:12.6g}" for n, t in zip(names, tau)])
    emit(args, {"robot": kin.model.name, "variant": kin.model.variant, "method": args.method,
                 "friction": friction, "actuated_joints": list(names), "tau": tau}, text)


def cmd_tour(args):
    from ..benchmarks.speed import kinematics_tour

    kinematics_tour(as_json=args.json, deg=args.deg)


def register(sub) -> None:
    """info, ik, fk, jacobian, workspace, id and tour under ``sub`` (the subparsers of pkm)."""
    add = partial(add_command, sub)
    from ..kinematics.workspace import SAMPLES_MAX

    add("info", cmd_info, "degrees of freedom, task coordinates, joints and home pose of a robot",
        "Without --robot: list the robots and their variants.", robot_required=False)

    sp = add("ik", cmd_ik, "inverse kinematics: platform pose -> every joint (actuated ones marked)",
             "Inverse kinematics of all joints, actuated and passive, with the closure residual.\n"
             "With --twist (and --accel) also the joint velocities (and accelerations).")
    sp.add_argument("--pose", nargs="+", type=float, required=True, metavar="X",
                    help="task coordinates (x y z roll pitch yaw | x y z | x y alpha), m and rad")
    sp.add_argument("--twist", nargs="+", type=float, metavar="V",
                    help="task velocity: (vx vy vz wx wy wz) in the base frame | (vx vy vz) | (vx vy alpha_dot)")
    sp.add_argument("--accel", nargs="+", type=float, metavar="A", help="task acceleration, same layout as --twist")

    sp = add("fk", cmd_fk, "forward kinematics: actuated joint positions -> platform pose (damped Newton)",
             "Forward kinematics by damped Newton from a guess (default: the home pose);\n"
             "converges to the assembly branch nearest the guess and reports iterations and residual.")
    sp.add_argument("--joints", nargs="+", type=float, required=True, metavar="Q",
                    help="actuated joint positions, in the order of `pkm info` (m, or rad / deg for revolute)")
    sp.add_argument("--guess", nargs="+", type=float, metavar="X", help="initial pose, task coordinates")

    sp = add("jacobian", cmd_jacobian, "Jacobian J (qdot_a = J xdot), condition number and singularity class")
    sp.add_argument("--pose", nargs="+", type=float, required=True, metavar="X", help="task coordinates")

    sp = add("workspace", cmd_workspace, "sample a workspace slice or volume: reachable fraction and dexterity",
             "Samples a grid over the config's workspace box (all joint limits enforced) and reports the\n"
             "reachable fraction and statistics of the dexterity 1/kappa(J), with a progress bar.")
    sp.add_argument("--vary", nargs="+", metavar="COORD",
                    help="task coordinates to grid (default: the first two, or x y z with --volume)")
    sp.add_argument("--volume", action="store_true", help="grid x y z (a volume) instead of a slice")
    sp.add_argument("--fixed", nargs="+", type=float, metavar="X",
                    help="values of the other coordinates (default: home pose)")
    sp.add_argument("--resolution", type=count(2, SAMPLES_MAX), default=41,
                    help=f"grid points per varied coordinate (default 41); resolution^(number varied) is at "
                         f"most {SAMPLES_MAX:,}")
    sp.add_argument("--scale", type=float, default=1.5,
                    help="grid span: the config's workspace box scaled about its centre (default 1.5, "
                         "so the edge of the reachable set shows)")
    sp.add_argument("--plot", metavar="PNG", help="save a dexterity map to this PNG file")

    sp = add("id", cmd_id, "inverse dynamics at one state: actuator forces",
             "Actuator forces for a platform state (pose, twist, acceleration in the robot's task\n"
             "coordinates), by the generic engine or a paper's own formulation.")
    sp.add_argument("--pose", nargs="+", type=float, required=True, metavar="X", help="task coordinates")
    sp.add_argument("--twist", nargs="+", type=float, metavar="V", help="task velocity (default zero)")
    sp.add_argument("--accel", nargs="+", type=float, metavar="A", help="task acceleration (default zero)")
    sp.add_argument("--wrench", nargs=6, type=float, metavar="W",
                    help="external wrench on the platform: fx fy fz mx my mz (N, Nm; base frame)")
    sp.add_argument("--method", default="generic",
                    help="generic (pinocchio tree + closures), or the robot's paper formulation: newton_euler "
                         "(stewart), jourdain (palida), generalized_momentum (lopes), virtual_work (delta), "
                         "pivotal_virtual_work (planar_redundant)")
    sp.add_argument("--no-friction", action="store_true",
                    help="rigid-body dynamics only (paper formulations include friction only where the paper "
                         "models it)")

    add("tour", cmd_tour, "kinematics tour of every robot: IK, FK, condition number, singularity status",
        robot=False)
