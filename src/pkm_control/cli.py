"""The ``pkm`` command: robot info, kinematics, workspace, benchmarks and the demo.

Units are SI and radians unless ``--deg`` is given (then every angle, in and out,
is in degrees). Task coordinates are the robot's own (``pkm info --robot R``):
x y z roll pitch yaw for the 6-DoF machines with roll/pitch/yaw ZYX Euler angles
(R = Rz(yaw) Ry(pitch) Rx(roll), the URDF rpy convention), x y z for the DELTA,
x y alpha for the planar robot.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sys
import threading
from pathlib import Path

import numpy as np

from .errors import InvalidInputError, PkmError, check_number, excerpt

EXAMPLES = """examples:
  pkm info                                   list the robots and their variants
  pkm info --robot stewart --variant 3-6     task coordinates, joints, home pose
  pkm ik --robot palida --pose 0 0 -0.9 0 0 5 --deg
  pkm fk --robot delta --joints 0.3 0.3 0.3 --json
  pkm jacobian --robot lopes --pose 0 0 2.0 0 0 0
  pkm workspace --robot stewart --vary x y --resolution 41 --plot ws.png
  pkm id --robot palida --pose 0 0 -0.85 0 0 0 --twist 0.5 0 0 0 0 0 --accel 0 0 5 0 0 0
  pkm perturb --robot palida --seed 1 --scale 0.2 --output true.yaml    a robot that is not the model
  pkm identify --bag run.mcap --robot palida --output params.yaml   base parameters for computed_force
  pkm reproduce lopes --out results/
  pkm bench kinematics
  pkm bench dynamics
  pkm bench simulation                       palida's compiled simulation step beside the generic one
  pkm bench reject                           what a malformed message costs its consumer
  pkm bringup --robot palida --controller pd --dry-run
  pkm view --robot palida                    browser 3D view of the running graph at http://127.0.0.1:8080
  pkm view --robot delta --pose 0.05 0 -0.3 --screenshot delta.png
  pkm view --replay results/palida_benchmark_cf_rb_friction_joints.csv
  pkm tour
  pkm demo
  pkm animate --csv results/palida_benchmark_cf_rb_joints.csv --speed 0.5
  pkm excite --robot palida --duration 4 --harmonics 6 --output excitation.yaml
  pkm fuzz --budget 200 --classes goals,controller --seed 1
  pkm topics -v                              the running graph's topics (pip-only; ros2cli where installed)
  pkm echo /platform_pose --once
  pkm param set /joint_controller kp 3e5
  pkm call /hardware/reset
  pkm goal "{type: point_to_point, goal: [0.05, 0, -0.85, 0, 0, 0], duration: 1.0}"
"""


# ----------------------------------------------------------------------------- parsing

_DIGITS = r"\d(?:_?\d)*"
_DECIMAL = rf"(?:(?:{_DIGITS})?\.{_DIGITS}|{_DIGITS}\.?)(?:e[+-]?{_DIGITS})?"
#: a negative number as float() reads it (the floatvalue grammar of the Python docs, nan and inf included, so
#: that they reach finite_float and are refused there by name): -4.5e-05, -.5, -1E3, -0, -inf
NEGATIVE_NUMBER = re.compile(rf"-(?:{_DECIMAL}|inf(?:inity)?|nan)\Z", re.IGNORECASE)


def finite_float(text: str) -> float:
    """argparse type of every float option: any float() spelling; nan and inf are refused."""
    try:
        return check_number("value", text)
    except InvalidInputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def count(least: int, most: int):
    """argparse type of a number of samples or grid points: a whole number in [least, most], in any float
    spelling (1e5)."""
    def whole_number(text: str) -> int:
        x = finite_float(text)
        if not (x.is_integer() and least <= x <= most):
            raise argparse.ArgumentTypeError(f"value must be a whole number from {least} to {most:,}, "
                                             f"got '{excerpt(text)}'")
        return int(x)
    return whole_number


def robot_id(text: str) -> str:
    """argparse type of --robot: a shipped robot, checked before anything is loaded."""
    from .description import robot_names

    if text not in robot_names():
        raise argparse.ArgumentTypeError(f"unknown robot '{excerpt(text)}' (robots: {', '.join(robot_names())})")
    return text


def seconds(text: str) -> float:
    """argparse type of a wall-clock duration: more than 0 s, at most an hour."""
    x = finite_float(text)
    if not 0.0 < x <= 3600.0:
        raise argparse.ArgumentTypeError(f"value must be more than 0 and at most 3600 s, got '{excerpt(text)}'")
    return x


class Parser(argparse.ArgumentParser):
    """The parser of ``pkm`` and, through add_subparsers, of every subcommand.

    * A token that float() reads as a negative number is a value, not an option: argparse's own
      ``_negative_number_matcher`` knows only -1 and -1.5, not -4.5e-05 or -.5.
    * ``type=float`` means finite_float, also for the options other modules add (bringup, demo).
    * An error is one short line on stderr and exit status 2.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = NEGATIVE_NUMBER
        self.register("type", float, finite_float)

    def error(self, message):
        # argparse echoes what it could not use (unrecognized arguments: ...): a 5000-character one is cut short
        self.exit(2, f"{self.prog}: error: {excerpt(message, 600)} (see {self.prog} --help)\n")


def _plain(doc: str) -> str:
    """A docstring as help text: without the RST double backticks."""
    return doc.replace("``", "")


# ----------------------------------------------------------------------------- helpers

def _kin(args):
    from .kinematics import robot_kinematics

    return robot_kinematics(args.robot, args.variant)


def _angular_mask(kin):
    m = np.zeros(kin.task.dim, bool)
    m[list(kin.task.angular)] = True
    return m


def _revolute_mask(clm):
    model = clm.model
    return np.array([model.joints[model.getJointId(n)].shortname().startswith("JointModelR")
                     for n in clm.joint_names])


def _task_in(kin, values, deg, what):
    x = np.asarray(values, float)
    if x.shape != (kin.task.dim,):
        raise InvalidInputError(f"{what} needs {kin.task.dim} values ({' '.join(kin.task.names)}), got {len(x)}")
    if deg:
        x = np.where(_angular_mask(kin), np.radians(x), x)
    return x


def _task_out(kin, x, deg):
    return np.where(_angular_mask(kin), np.degrees(x), x) if deg else np.asarray(x)


def _joints_out(clm, q, deg):
    return np.where(_revolute_mask(clm), np.degrees(q), q) if deg else np.asarray(q)


def _emit(args, data, text):
    if args.json:
        print(json.dumps(data, indent=2, default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o)))
    else:
        print(text)


def _fmt(v, width=11, prec=6):
    return " ".join(f"{x:{width}.{prec}g}" for x in np.atleast_1d(v))


def _residual(clm, q):
    from .description import closure_residual

    r = closure_residual(clm, clm.create_data(), q)
    return float(np.abs(r).max()) if r.size else 0.0


# ----------------------------------------------------------------------------- commands

def cmd_info(args):
    from .description import load_robot, robot_names, robot_variants

    if not args.robot:
        if args.variant:
            raise InvalidInputError(f"--variant {args.variant} needs --robot")
        rows = {name: robot_variants(name) for name in robot_names()}
        text = "robots (variants; the first is the default):\n" + "\n".join(
            f"  {n:18s} {', '.join(v) if any(v) else '-'}" for n, v in rows.items())
        return _emit(args, {"robots": rows}, text)
    kin = _kin(args)
    clm = load_robot(args.robot, args.variant)
    home = np.asarray(clm.config.get("home"), float)
    data = {
        "robot": clm.name, "variant": clm.variant, "dof": kin.task.dim,
        "task_coordinates": list(kin.task.names), "task_velocity": list(kin.task.velocity_names),
        "angles": "degrees" if args.deg else "radians",
        "actuated_joints": list(clm.actuated_joints), "platform_joints": list(clm.platform_joints),
        "passive_joints": [clm.joint_names[i] for i in clm.passive_idx],
        "joints": list(clm.joint_names), "closures": [c.name for c in clm.closures],
        "constraint_rows": clm.n_constraints, "home": _task_out(kin, home, args.deg),
    }
    text = "\n".join([
        f"robot {clm.name}" + (f" (variant {clm.variant})" if clm.variant else ""),
        f"  degrees of freedom : {kin.task.dim} ({kin.task.kind})",
        f"  task coordinates   : {' '.join(kin.task.names)}",
        f"  task velocity      : {' '.join(kin.task.velocity_names)}",
        f"  home pose          : {_fmt(data['home'])}" + ("  (deg)" if args.deg else ""),
        f"  actuated joints    : {' '.join(clm.actuated_joints)}",
        f"  platform joints    : {' '.join(clm.platform_joints)}",
        f"  passive joints     : {' '.join(data['passive_joints'])}",
        f"  all joints ({len(clm.joint_names)})    : {' '.join(clm.joint_names)}",
        f"  closures           : {len(clm.closures)} ({clm.n_constraints} constraint rows)",
    ])
    _emit(args, data, text)


def cmd_ik(args):
    kin = _kin(args)
    clm = kin.model
    pose = kin.task.pose(_task_in(kin, args.pose, args.deg, "--pose"))
    twist = None if args.twist is None else _task_in(kin, args.twist, args.deg, "--twist")
    accel = None if args.accel is None else _task_in(kin, args.accel, args.deg, "--accel")
    if accel is not None and twist is None:
        twist = np.zeros(kin.task.dim)
    m = kin.inverse(pose, twist, accel)
    res = _residual(clm, m.q)
    act = set(clm.actuated_idx.tolist())
    q = _joints_out(clm, m.q, args.deg)
    v = None if m.v is None else _joints_out(clm, m.v, args.deg)
    a = None if m.a is None else _joints_out(clm, m.a, args.deg)
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
    _emit(args, {"robot": clm.name, "variant": clm.variant, "joints": joints, "closure_residual": res},
          "\n".join(lines))


def cmd_fk(args):
    from .kinematics.forward import forward_kinematics

    kin = _kin(args)
    clm = kin.model
    qa = np.asarray(args.joints, float)
    if qa.shape != (clm.n_actuated,):
        raise InvalidInputError(f"--joints needs {clm.n_actuated} values ({' '.join(clm.actuated_joints)}), "
                                f"got {len(qa)}")
    if args.deg:
        qa = np.where(_revolute_mask(clm)[clm.actuated_idx], np.radians(qa), qa)
    guess = np.asarray(clm.config["home"], float) if args.guess is None else _task_in(kin, args.guess, args.deg,
                                                                                       "--guess")
    res = forward_kinematics(kin, qa, kin.task.pose(guess))
    x = _task_out(kin, kin.task.coordinates(res.pose), args.deg)
    text = "\n".join([f"pose ({' '.join(kin.task.names)}): {_fmt(x)}",
                      f"iterations: {res.iterations}   residual: {res.residual:.3g}"])
    _emit(args, {"robot": clm.name, "variant": clm.variant, "pose": dict(zip(kin.task.names, x)),
                 "iterations": res.iterations, "residual": res.residual}, text)


def cmd_jacobian(args):
    from .kinematics.analysis import singularity

    kin = _kin(args)
    pose = kin.task.pose(_task_in(kin, args.pose, args.deg, "--pose"))
    kin.inverse(pose)  # reachability and limits first: a clear error beats a Jacobian of nothing
    J = kin.jacobian(pose)
    rep = singularity(kin, pose)
    # kappa(J) is unbounded where J is exactly singular: "unbounded" in the text, null in JSON (never inf)
    kappa = rep.condition_number if np.isfinite(rep.condition_number) else None
    text = "\n".join(
        [f"J (qdot_a = J [{' '.join(kin.task.velocity_names)}]), SI units:"]
        + [f"  {a:18s} {_fmt(row, 10, 4)}" for a, row in zip(kin.model.actuated_joints, J)]
        + [f"condition number: {'unbounded' if kappa is None else f'{kappa:.4g}'}   "
           f"dexterity 1/kappa: {rep.dexterity:.4g}",
           f"singularity: {rep.classification}  (J_q: {_det(rep.inverse_det)}sigma_min {rep.inverse_sigma_min:.3g};"
           f" J_x: {_det(rep.forward_det)}sigma_min {rep.forward_sigma_min:.3g})"])
    _emit(args, {"robot": kin.model.name, "variant": kin.model.variant, "jacobian": J,
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
    from .progress import progress_bar

    from .kinematics.workspace import sample_workspace

    kin = _kin(args)
    names = kin.task.names
    vary = args.vary or (["x", "y", "z"] if args.volume else list(names[:2]))
    plot = _plot_path(args.plot, len(vary)) if args.plot else None
    fixed = np.asarray(kin.model.config["home"], float) if args.fixed is None else \
        _task_in(kin, args.fixed, args.deg, "--fixed")
    res = sample_workspace(kin, vary, fixed, args.resolution, scale=args.scale,
                           progress=None if args.json else (lambda it: progress_bar(it, desc="dexterity", unit="pose")))
    stats = res.dexterity_stats()
    text = "\n".join([
        f"{kin.model.name}: {len(res.coords)} samples over {' x '.join(vary)} "
        f"(workspace box x {args.scale:g}) "
        f"(others at {_fmt(_task_out(kin, fixed, args.deg), 8, 4)})",
        f"reachable fraction: {res.reachable_fraction:.3f}",
        "dexterity 1/kappa(J): " + ("  ".join(f"{k} {v:.4g}" for k, v in stats.items()) or "no reachable sample")])
    if plot:
        _plot_workspace(kin, res, plot, args.deg)
        text += f"\nplot: {plot}"
    _emit(args, {"robot": kin.model.name, "variant": kin.model.variant, "vary": vary, "samples": len(res.coords),
                 "reachable_fraction": res.reachable_fraction, "dexterity": stats,
                 "plot": plot and str(plot)}, text)


def _plot_workspace(kin, res, path, deg):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .kinematics.workspace import workspace_figure

    fig = workspace_figure(kin, res, deg)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)


def cmd_id(args):
    from .dynamics import robot_dynamics
    from .dynamics.formulations import formulation

    dyn = robot_dynamics(args.robot, args.variant)
    kin = dyn.kin
    pose = kin.task.pose(_task_in(kin, args.pose, args.deg, "--pose"))
    kin.inverse(pose)  # reachability and every joint limit first, as `pkm ik` and `pkm jacobian`
    twist = _task_in(kin, args.twist, args.deg, "--twist") if args.twist else np.zeros(kin.task.dim)
    accel = _task_in(kin, args.accel, args.deg, "--accel") if args.accel else np.zeros(kin.task.dim)
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
    _emit(args, {"robot": kin.model.name, "variant": kin.model.variant, "method": args.method,
                 "friction": friction, "actuated_joints": list(names), "tau": tau}, text)


def cmd_perturb(args):
    from .dynamics import robot_dynamics
    from .identification.perturbation import perturbed_parameters, write_perturbation

    out = Path(args.output)
    if out.suffix not in (".yaml", ".yml"):
        raise InvalidInputError(f"--output must name a .yaml file, got {excerpt(args.output)}")
    if not out.parent.is_dir():
        raise InvalidInputError(f"--output {excerpt(args.output)}: directory {excerpt(str(out.parent))} does not exist")
    p = perturbed_parameters(robot_dynamics(args.robot, args.variant), args.scale, args.seed, args.identical_legs,
                             args.keep_axes)
    write_perturbation(out, p, f"pkm perturb --robot {args.robot}{f' --variant {args.variant}' if args.variant else ''}"
                               f" --seed {args.seed} --scale {args.scale:g}"
                               f"{' --identical-legs' if args.identical_legs else ''}"
                               f"{' --keep-axes' if args.keep_axes else ''}")
    _emit(args, {"output": str(out), "robot": args.robot, "seed": p.seed, "scale": p.scale,
                 "n_parameters": p.n_parameters, "max_relative_change": p.max_relative_change,
                 "bodies": len(p.data["bodies"])}, f"{p.summary()}\nwritten to {out}")


def cmd_identify(args):
    from .dynamics import robot_dynamics
    from .identification.estimation import identify, write_identification
    from .identification.recording import load_measured_run

    dyn = robot_dynamics(args.robot, args.variant)
    run = load_measured_run(args.bag, args.robot, args.variant)
    if args.start is not None or args.end is not None:
        run = run.between(args.start, args.end)
    ident = identify(run, dyn, method=args.method, structure=args.structure, cutoff=args.cutoff,
                     decimation=args.decimation, sign_eps=args.sign_eps, min_speed=args.min_speed,
                     progress=not args.json)
    write_identification(args.output, ident)
    _emit(args, {**ident.to_dict(), "output": args.output},
          f"{ident.table()}\nwrote {args.output} (computed_force's parameters_file)")


def cmd_reproduce(args):
    from .benchmarks import reproduce

    summary = reproduce.run(args.name, args.out, progress=not args.json, quick=args.quick)
    if args.json:
        print(json.dumps(summary, indent=2, default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o)))


def cmd_bench(args):
    from .benchmarks.speed import bench_dynamics, bench_kinematics, bench_simulation

    if args.what == "kinematics":
        bench_kinematics(args.robot, samples=args.samples, as_json=args.json)
    elif args.what == "simulation":
        bench_simulation(args.robot, as_json=args.json)
    elif args.what == "dynamics":
        bench_dynamics(args.robot, as_json=args.json)
    elif args.what == "reject":
        from .benchmarks.reject import bench_reject

        bench_reject((args.robot or ["palida"])[0], as_json=args.json)
    else:
        from .benchmarks.loop import bench_loop

        robot = (args.robot or ["palida"])[0]
        bench_loop(robot, args.controller, args.seconds, as_json=args.json)


def cmd_view(args):
    from pathlib import Path

    from .viewer.browser import BrowserView, HeadlessBrowser
    from .viewer.scene import robot_scene

    run = None
    if args.replay is not None:
        from .identification.runs import load_run

        run = load_run(args.replay, args.robot, args.variant)
        args.robot, args.variant = run.robot, run.variant
    elif args.robot is None:
        raise InvalidInputError("pkm view needs --robot (or --replay with a recording that names it)")
    kin = _kin(args)
    scene = robot_scene(kin.model)
    q = None
    if args.pose is not None:
        q = kin.inverse(kin.task.pose(_task_in(kin, args.pose, args.deg, "--pose"))).q
    if args.screenshot is not None:
        out = Path(args.screenshot)
        if out.suffix.lower() != ".png" or not out.parent.is_dir():
            raise InvalidInputError(f"--screenshot must name a .png file in an existing folder, got "
                                    f"'{excerpt(args.screenshot, 200)}'")
        from .viewer.scene import home_q

        view = BrowserView(scene, host="127.0.0.1", port=0, controller=args.controller or "")
        try:
            if run is not None:        # the end of the recording, with its paths
                from .viewer.replay import Replay

                view.controller = run.controller or view.controller
                view.show_frame(Replay(run, scene).frame(run.t[-1]))
            else:
                view.show(measured=home_q(kin.model) if q is None else q, trace=False)
            with HeadlessBrowser() as browser:
                browser.open(view, *args.size).screenshot(out)
        finally:
            view.stop()
        print(f"screenshot: {out}")
        return
    view = BrowserView(scene, host=args.host, port=args.port, controller=args.controller or "")
    if run is not None:
        from .viewer.replay import Replay

        stop = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, lambda *_: stop.set())
        try:
            view.attach_replay(Replay(run, scene))
            print(f"pkm view: {view.url}  (replay of {run.source}, {run.t[-1] - run.t[0]:.3f} s; Ctrl-C stops)",
                  flush=True)
            while not stop.wait(0.1):
                pass
        finally:
            view.stop()
        return
    from .nodes import viewer

    try:
        if q is not None:
            view.show(measured=q, trace=False)
        print(f"pkm view: {view.url}  (robot {scene.model.name}; Ctrl-C stops)", flush=True)
        code = viewer.run(view, args.topic)
    finally:
        view.stop()
    if code:
        raise SystemExit(code)


def cmd_bringup(args):
    from .description import robot_config
    from .graph import bringup

    shared = bringup.parameters(args)["/**"]["ros__parameters"]
    robot_config(shared["robot"], shared.get("variant"))  # an unknown robot or variant fails here, not in five nodes
    code = bringup.run(args)
    if code:
        raise SystemExit(code)


def cmd_tour(args):
    from .benchmarks.speed import kinematics_tour

    kinematics_tour(as_json=args.json, deg=args.deg)


def cmd_fuzz(args):
    from . import fuzz

    seed, tallies = fuzz.run(args.classes, args.budget, args.seed, progress=not args.json)
    if args.json:
        print(json.dumps({"seed": seed, "budget": args.budget,
                          "classes": {k: t.as_dict() for k, t in tallies.items()}}, indent=2))
    else:
        print(f"pkm fuzz --budget {args.budget} --classes {','.join(args.classes)} --seed {seed}\n")
        print(fuzz.table(tallies))
    if any(t.failures for t in tallies.values()):
        raise SystemExit(1)


def _fuzz_classes(text: str) -> list:
    """argparse type of --classes: comma-separated campaign names (all: every one)."""
    from .fuzz import CLASSES

    names = list(CLASSES) if text == "all" else [c for c in text.split(",") if c]
    if not names or any(c not in CLASSES for c in names):
        raise argparse.ArgumentTypeError(f"classes must be 'all' or names of {', '.join(CLASSES)}, got {text!r}")
    return names


def cmd_animate(args):
    from .viewer.animation import write_animation
    from .identification.runs import load_bag, load_csv

    source = args.bag or args.csv
    run = (load_bag if args.bag else load_csv)(source, args.robot, args.variant)
    out = args.output or Path("results") / Path(source.rstrip("/")).stem
    path = write_animation(run, out, args.fps, args.speed, quiet=args.quiet)
    print(f"{run.robot}{f' ({run.variant})' if run.variant else ''}, controller {run.controller or 'not recorded'}: "
          f"{len(run.t)} samples over {run.t[-1] - run.t[0]:.3f} s (measured: {run.measured_from}"
          f"{', desired robot recorded' if run.q_desired is not None else ', no desired robot'})")
    print(f"animation: {path}")


def cmd_excite(args):
    from .dynamics import robot_dynamics
    from .identification.excitation import design_excitation, write_excitation

    folder = Path(args.output).resolve().parent
    if not folder.is_dir():      # before a minute of optimization, not after
        raise InvalidInputError(f"--output {excerpt(args.output, 200)}: folder {excerpt(str(folder), 200)} does not "
                                "exist")
    dyn = robot_dynamics(args.robot, args.variant)
    spec, rep = design_excitation(dyn, args.duration, args.harmonics, seed=args.seed, samples=args.samples,
                                  evaluations=args.evaluations, max_velocity=args.max_velocity,
                                  max_acceleration=args.max_acceleration, progress=not args.json)
    robot = dyn.model.name + (f" ({dyn.model.variant})" if dyn.model.variant else "")
    write_excitation(args.output, dyn, spec, rep, f"pkm excite, seed {args.seed}")
    usage = ", ".join(f"{k} {v:.0%}" for k, v in rep.usage.items())
    text = (f"excitation of {robot}: {args.harmonics} harmonics, period {args.duration:g} s -> {args.output}\n"
            f"condition number of the stacked base regressor ({rep.base_parameters} base parameters incl. friction, "
            f"{rep.samples} samples over the period):\n"
            f"  optimized  {rep.condition:12.6g}\n  baseline   {rep.baseline_condition:12.6g}   (the initial guess: "
            f"seeded random coefficients made feasible, same duration)\n"
            f"  ratio      {rep.baseline_condition / rep.condition:12.4g}\n"
            f"{rep.evaluations} evaluations in {rep.seconds:.1f} s; largest share of each limit used: {usage}\n"
            f"run it: pkm goal \"$(cat {args.output})\" (a running graph), or\n"
            f"        pkm bringup --robot {dyn.model.name} --goal \"$(cat {args.output})\"")
    _emit(args, {"robot": dyn.model.name, "variant": dyn.model.variant, "output": args.output, "spec": spec,
                 "condition": rep.condition, "baseline_condition": rep.baseline_condition,
                 "base_parameters": rep.base_parameters, "samples": rep.samples, "evaluations": rep.evaluations,
                 "seconds": rep.seconds, "usage": rep.usage}, text)


def cmd_demo(args):
    from .benchmarks import demo as benchmark, demo_identified as identified_benchmark

    summary = (identified_benchmark if args.identified else benchmark).run(args)
    if args.json:
        print(json.dumps(summary, indent=2))


def _graph_tool(run):
    """A command of nodes.tools (the ros2cli tasks): its own ROS session on the domain of `pkm demo` (without
    its isolated fallback); exit 1 when the graph does not answer as asked, 0 on Ctrl-C for `pkm echo` (its way
    to end) and 1 for the others."""
    def cmd(args):
        from .ros.topology import domain_id

        domain = domain_id(args.domain_id, isolated=False)
        try:
            from .graph.tools import Session, ToolFailure
        except ImportError as exc:
            raise SystemExit(f"pkm {args.command}: needs rclpy ({exc}): pip install -r requirements-ros.txt, or "
                             "source a ROS 2 installation") from None
        session = Session(domain, args.command)
        try:
            run(args, session)
        except ToolFailure as exc:
            print(f"pkm {args.command}: {excerpt(str(exc), 600)}", file=sys.stderr)
            raise SystemExit(1) from None
        except KeyboardInterrupt:
            raise SystemExit(0 if args.command == "echo" else 1) from None
        finally:
            session.close()
    return cmd


def _topics(args, session):
    from .graph.tools import format_topics, topics

    rows = topics(session, timeout=args.timeout)
    _emit(args, {"domain": session.domain, "topics": rows}, format_topics(rows, args.verbose))


def _echo(args, session):
    from .graph.tools import echo, message_text

    echo(session, args.topic, 1 if args.once else args.count, args.timeout,
         lambda msg: print(message_text(msg, args.json), flush=True))


def _param(args, session):
    from .graph.tools import format_value, param_get, param_set

    if args.action == "get":
        value, kind = param_get(session, args.node, args.name, args.timeout)
    else:
        value = param_set(session, args.node, args.name, args.value, args.timeout)
        kind = None
    _emit(args, {"node": args.node, "name": args.name, "value": value, **({"type": kind} if kind else {})},
          format_value(value) if kind else f"{args.name} = {format_value(value)} (set on {args.node})")


def _call(args, session):
    from .graph.tools import trigger

    success, message = trigger(session, args.service, args.timeout)
    _emit(args, {"service": args.service, "success": success, "message": message},
          f"success: {str(success).lower()}\nmessage: {message}")
    if not success:
        raise SystemExit(1)


def _goal(args, session):
    from .graph.tools import format_answer, send_goal

    event = send_goal(session, args.spec, args.node, args.timeout)
    if args.json:
        print(json.dumps(event, indent=2))
    elif event["state"] == "accepted":
        print(format_answer(event))
    else:
        print(f"pkm goal: {excerpt(format_answer(event), 2000)}", file=sys.stderr)
    if event["state"] != "accepted":
        raise SystemExit(1)


def _record(args, session):
    from .graph.bag_recorder import format_summary, record

    summary = record(session, args, lambda msg: print(f"pkm record: {msg}", file=sys.stderr, flush=True))
    _emit(args, summary, format_summary(summary))
    if args.until_done and summary["goal_status"] != "finished":
        print(f"pkm record: the goal did not finish while recording ({summary['goal_status']})", file=sys.stderr)
        raise SystemExit(1)


# ----------------------------------------------------------------------------- parser

#: the flags a subcommand may share, offered only where they do something (add(..., common=...))
COMMON_FLAGS = {
    "json": "machine-readable JSON on stdout",
    "deg": "angles in degrees instead of radians (in and out)",
}


def build_parser() -> argparse.ArgumentParser:
    from .benchmarks.speed import SAMPLES_MAX as BENCH_SAMPLES_MAX
    from .kinematics.workspace import SAMPLES_MAX

    p = Parser(prog="pkm", description=_plain(__doc__), formatter_class=argparse.RawDescriptionHelpFormatter,
               epilog=EXAMPLES)
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def add(name, func, help_, desc=None, robot=True, robot_required=True, common=("json", "deg")):
        sp = sub.add_parser(name, help=help_, description=_plain(desc or help_),
                            formatter_class=argparse.RawDescriptionHelpFormatter)
        if robot:
            sp.add_argument("--robot", required=robot_required, type=robot_id,
                            help="robot id: stewart, palida, lopes, delta, planar_redundant (see `pkm info`)")
            sp.add_argument("--variant", default=None,
                            help="robot variant, e.g. 3-6 for stewart, nonredundant for planar_redundant "
                                 "(default: the robot's default variant)")
        for flag in common:
            sp.add_argument(f"--{flag}", action="store_true", help=COMMON_FLAGS[flag])
        sp.set_defaults(func=func)
        return sp

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

    sp = add("perturb", cmd_perturb, "a robot that is not the model: a perturbed, physically consistent parameter set",
             "Changes every body's mass, first moment (centre of mass) and rotational inertia and every friction\n"
             "coefficient of the robot's config by a factor in [1 - scale, 1 + scale], seeded, and writes the set in\n"
             "the parameters_file schema (control/feedforward.py). Physically consistent: the inertia is perturbed\n"
             "through the second moments of the mass distribution (principal values scaled, axes turned by at most\n"
             "scale rad), so the pseudo-inertia stays positive semidefinite (mass > 0, principal moments >= 0, the\n"
             "triangle inequalities). Use it as the simulated robot's true parameters: pkm bringup\n"
             "--true-parameters FILE (setting true_parameters_file), or as computed_force's parameters_file.\n"
             "Module: pkm_control.identification.perturbation.", common=("json",))
    sp.add_argument("--seed", type=count(0, 2 ** 32 - 1), required=True, help="seed of the draws (the same seed, "
                                                                               "the same file)")
    sp.add_argument("--scale", type=float, default=0.2,
                    help="largest relative change, in [0, 1) (default 0.2: every value within +-20 %%)")
    sp.add_argument("--identical-legs", action="store_true",
                    help="one draw per body kind and friction role: the legs stay identical (Jourdain's model)")
    sp.add_argument("--keep-axes", action="store_true",
                    help="do not turn the principal axes of inertia (products of inertia zero in the config stay zero, "
                         "as Table I of the PaLiDA's Jourdain model assumes)")
    sp.add_argument("--output", required=True, metavar="YAML", help="parameter file to write (.yaml)")

    from .dynamics.parameters import STRUCTURES
    sp = add("identify", cmd_identify, "base parameters (rigid body + friction) from a recorded run: a parameters_file",
             "Identifies the base parameters of the robot from a rosbag2 (/joint_states positions and efforts of the\n"
             "actuated joints, every control period): zero-phase low-pass and differentiation of the positions,\n"
             "forward kinematics, parallel filtering and decimation of forces and regressor rows, samples at the\n"
             "force limit and outliers dropped, then ordinary or weighted least squares (Gautier-Khalil).\n"
             "Prints each estimate with its relative standard deviation, the combination of standard parameters\n"
             "it stands for, the condition number and the physical-consistency report (masses and moments of\n"
             "inertia > 0, friction >= 0; reported, never clipped), and writes a `kind: base_parameters` YAML\n"
             "that computed_force's parameters_file loads. planar_redundant is identified from\n"
             "J^T tau = Omega p (Wu eq. 16).",
             common=("json",))
    sp.add_argument("--bag", required=True, metavar="BAG", help="rosbag2 directory, .db3 or .mcap file")
    sp.add_argument("--output", required=True, metavar="YAML", help="base-parameter file to write")
    sp.add_argument("--start", type=finite_float, default=None, metavar="S",
                    help="use the samples from S s of the bag's clock on (e.g. the excitation's goal start, without "
                         "the approach move; default: from the first)")
    sp.add_argument("--end", type=finite_float, default=None, metavar="S",
                    help="use the samples up to S s of the bag's clock (default: to the last)")
    sp.add_argument("--method", choices=("ols", "wls"), default="wls",
                    help="ordinary or weighted least squares (weights: each joint equation's residual std; default)")
    sp.add_argument("--min-speed", type=finite_float, default=0.0, metavar="V",
                    help="leave a joint's equation out where its speed is below V (m/s or rad/s): no Coulomb model "
                         "holds near zero speed (default 0: every sample)")
    sp.add_argument("--structure", choices=STRUCTURES, default="per-body",
                    help="per-body: every body and joint its own parameters (fits any plant; default); shared-legs: "
                         "identical legs; jourdain: PaLiDA's Table I (10 + 14 parameters, the compiled kernel in "
                         "computed_force)")
    sp.add_argument("--cutoff", type=finite_float, default=20.0,
                    help="low-pass cutoff of the positions in Hz (default 20; 5-10 times the motion's bandwidth)")
    sp.add_argument("--sign-eps", type=finite_float, default=0.0,
                    help="Coulomb friction's sign as tanh(qdot / EPS), the simulated robot's smoothing (2e-3 there); "
                         "default 0: the exact sign of a real machine")
    sp.add_argument("--decimation", type=count(1, 1000), default=None,
                    help="parallel-filter decimation factor (default: 5 samples per period of the cutoff, at most 13)")

    from .benchmarks.reproduce import REPRODUCTIONS
    sp = add("reproduce", cmd_reproduce, "reproduce a reference paper's figures and tables (PNG, CSV)",
             "Reproductions:\n" + "\n".join(f"  {k:24s} {v[1]}" for k, v in REPRODUCTIONS.items()), robot=False,
             common=("json",))
    sp.add_argument("name", choices=list(REPRODUCTIONS), help="which reproduction")
    sp.add_argument("--out", default="results", help="output folder (default: results/)")
    sp.add_argument("--quick", action="store_true",
                    help="a short run for a smoke test where the reproduction has one (stewart-control: the first "
                         "move only); its numbers are not the README's")

    sp = add("bench", cmd_bench, "benchmarks that print timings and ratios against a baseline run alongside",
             robot=False, common=("json",))
    sp.add_argument("what", choices=["kinematics", "dynamics", "simulation", "loop", "reject"],
                    help="kinematics, dynamics, simulation (the simulated robot's step, compiled beside generic), or "
                         "loop (the real-time control path at 2 kHz against the simulated robot, beside the "
                         "five-process path), or reject (what a malformed message costs its consumer, beside a "
                         "valid one)")
    sp.add_argument("--robot", nargs="+", default=None, type=robot_id,
                    help="robots to run (default: all; simulation, loop and reject: palida)")
    sp.add_argument("--samples", type=count(1, BENCH_SAMPLES_MAX), default=100_000,
                    help=f"poses for the batched IK throughput, 1 to {BENCH_SAMPLES_MAX:.0e} (default 1e5)")
    sp.add_argument("--controller", default="cf_rb_friction", help="loop: named controller (default cf_rb_friction)")
    sp.add_argument("--seconds", type=seconds, default=60.0,
                    help="loop: wall seconds of the real-time run, at most 3600 (default 60; the baseline runs "
                         "min(20, S))")

    from .graph import bringup
    sp = add("bringup", cmd_bringup, "run the ROS 2 node graph (a process per node) without launch_ros",
             bringup.__doc__, robot_required=False, common=())
    bringup.add_arguments(sp, robot=False)

    sp = add("view", cmd_view, "browser 3D view of a robot: live from the ROS graph, or a screenshot",
             "Serves a 3D view of the robot (viser) at http://HOST:PORT: the robot from its URDF's visuals, live\n"
             "from /joint_states (effort drawn as arrows along the actuated joints), the desired robot from\n"
             "/desired_joint_states as a translucent ghost, both platform frames and paths, and a panel with the\n"
             "robot, the controller, the sim time and the tracking error. Ctrl-C stops it.\n"
             "With --screenshot, draws the robot at --pose (default: home) in headless Chromium, writes the PNG\n"
             "and exits (no ROS; needs Debian's chromium and the playwright package).\n"
             "With --replay, plays a recorded run (a rosbag2 or the demo's joints CSV) with a time slider,\n"
             "play / pause and speed; the robot then comes from the recording.",
             common=("deg",), robot_required=False)
    sp.add_argument("--replay", metavar="RUN", help="a recorded run to replay: a rosbag2 (directory, .db3, .mcap) "
                                                    "or a joints CSV of pkm demo")
    sp.add_argument("--host", default="127.0.0.1", help="address to serve on (default 127.0.0.1; 0.0.0.0: every "
                                                        "interface)")
    sp.add_argument("--port", type=count(0, 65535), default=8080, help="port (default 8080; 0: any free one)")
    sp.add_argument("--controller", help="controller name shown on the page (default: joint_controller's "
                                         "'controller' parameter, once it answers)")
    sp.add_argument("--topic", default="/joint_states",
                    help="measured joint states: every tree joint (default /joint_states; with --hardware topics "
                         "/estimated_joint_states)")
    sp.add_argument("--pose", nargs="+", type=float, metavar="X",
                    help="draw the robot at these task coordinates (default home; with --deg in degrees)")
    sp.add_argument("--screenshot", metavar="PNG", help="write a screenshot of the page to this PNG file and exit")
    sp.add_argument("--size", nargs=2, type=count(200, 4096), default=(1280, 800), metavar=("W", "H"),
                    help="screenshot size in pixels (default 1280 800)")

    add("tour", cmd_tour, "kinematics tour of every robot: IK, FK, condition number, singularity status",
        robot=False)
    sp = add("demo", cmd_demo, "the PaLiDA computed-force benchmark through the ROS 2 node graph (make demo)",
             "Abdellatif sec. V: a circle inclined 30 deg at 1 m/s, three runs (SJ PD, CF rb, CF rb+frict)\n"
             "through the node graph in lockstep against the simulated palida; prints the tracking table and\n"
             "writes results/palida_benchmark.json, plots (Figs. 5-6) and CSV.", robot=False, common=("json",))
    from .benchmarks.demo import add_arguments as demo_arguments
    from .benchmarks.demo_identified import add_arguments as identified_arguments
    demo_arguments(sp)
    identified_arguments(sp)

    sp = add("animate", cmd_animate, "animation (MP4, or GIF) of a recorded run: robot, desired ghost, errors",
             "Draws a recorded run: the measured robot (actuated legs highlighted), the desired robot as a\n"
             "translucent ghost and the actuated-joint errors e = q_desired - q_measured against time.\n"
             "--bag: a rosbag2 (directory, .db3 or .mcap) with the ground truth\n"
             "(/hardware/ground_truth/joint_trajectory) or /joint_states, and /desired_joint_states if recorded;\n"
             "the robot and controller come from joint_controller's /diagnostics when the bag has them.\n"
             "--csv: a joints CSV as `pkm demo` writes (results/palida_benchmark_<controller>_joints.csv).\n"
             "MP4 where imageio-ffmpeg is installed, else GIF; the suffix of --output chooses.",
             robot_required=False, common=())
    src = sp.add_mutually_exclusive_group(required=True)
    src.add_argument("--bag", metavar="BAG", help="rosbag2 directory, .db3 or .mcap file")
    src.add_argument("--csv", metavar="CSV", help="joints CSV of a run (pkm demo writes one per run)")
    sp.add_argument("--output", metavar="FILE",
                    help="animation file, .mp4 or .gif (default: results/<name of the bag or CSV>.mp4, .gif without "
                         "ffmpeg)")
    sp.add_argument("--fps", type=float, default=25.0, help="frames per second of the video, at most 120 (default 25)")
    sp.add_argument("--speed", type=float, default=1.0,
                    help="sim seconds per video second (default 1: real time; 0.25: four times slower)")
    sp.add_argument("--quiet", action="store_true", help="no progress bar")

    from .identification import excitation as exc
    sp = add("excite", cmd_excite, "design an excitation trajectory for identification (finite Fourier series)",
             exc.__doc__.split("\n\n")[0] + "\n\nWrites a trajectory spec of type fourier (the trajectory_generator "
             "runs it like any other\nspec) and prints the condition number beside the initial guess's. Every limit "
             "is checked on\nthe whole trajectory: see docs or pkm_control/identification/excitation.py.",
             common=("json",))
    sp.add_argument("--duration", type=finite_float, required=True, metavar="T",
                    help="period of the series in s, 0.1 to 600 (e.g. 4; the trajectory runs one period)")
    sp.add_argument("--harmonics", type=count(2, exc.MAX_HARMONICS), required=True, metavar="K",
                    help=f"harmonics per task coordinate, 2 to {exc.MAX_HARMONICS} (e.g. 6; the highest frequency "
                         "is K / T)")
    sp.add_argument("--output", required=True, metavar="SPEC.yaml", help="trajectory spec file to write")
    sp.add_argument("--seed", type=count(0, 2**32 - 1), default=0, help="seed of the initial guess (default 0)")
    sp.add_argument("--samples", type=count(2, exc.MAX_SAMPLES), default=100,
                    help="times over the period that make the stacked regressor (default 100)")
    sp.add_argument("--evaluations", type=count(1, exc.MAX_EVALUATIONS), default=800,
                    help="budget of condition-number evaluations of the optimizer (default 800, under a minute on "
                         "palida)")
    sp.add_argument("--max-velocity", nargs=2, type=finite_float, default=exc.MAX_VELOCITY, metavar=("LIN", "ANG"),
                    help=f"task speed limit per coordinate, m/s and rad/s (default {exc.MAX_VELOCITY[0]:g} "
                         f"{exc.MAX_VELOCITY[1]:g})")
    sp.add_argument("--max-acceleration", nargs=2, type=finite_float, default=exc.MAX_ACCELERATION,
                    metavar=("LIN", "ANG"), help="task acceleration limit per coordinate, m/s^2 and rad/s^2 (default "
                                                 f"{exc.MAX_ACCELERATION[0]:g} {exc.MAX_ACCELERATION[1]:g})")

    from .fuzz import CLASSES, FUZZ_BUDGET, FUZZ_BUDGET_MAX
    sp = add("fuzz", cmd_fuzz, "generated hostile inputs per class: counts of rejections, crashes, NaN, violations",
             "Generated inputs (hypothesis) against the real code, one campaign per class of input:\n"
             + "\n".join(f"  {k:12s} {c}" for k, c in CLASSES.items())
             + "\n\nPrints per class: inputs tried, accepted, rejected cleanly (the project's errors; exit 2 with one\n"
             "line for the CLI), crashes, NaN outputs, limit violations; and the first failing input of a class,\n"
             "shrunk to a minimal one. Exit status 1 when any crash, NaN output or violation was found.\n"
             "make fuzz runs every class at the default budget (a few minutes on 2 cores).", robot=False,
             common=("json",))
    sp.add_argument("--budget", type=count(1, FUZZ_BUDGET_MAX), default=FUZZ_BUDGET,
                    help=f"generated inputs per class, 1 to {FUZZ_BUDGET_MAX:,} (default {FUZZ_BUDGET}; the test "
                         "suite runs 60)")
    sp.add_argument("--classes", type=_fuzz_classes, default=list(CLASSES), metavar="A,B",
                    help=f"comma-separated classes to run, or all (default all: {','.join(CLASSES)})")
    sp.add_argument("--seed", type=int, default=None,
                    help="seed of the generation: the same seed gives the same inputs (default: a random one, "
                         "printed in the header)")

    from .benchmarks.demo import domain

    def tool(parent, name, run, help_, desc, examples):
        sp = parent.add_parser(name, help=help_, description=desc + "\n\n" + TOOLS_NOTE, epilog=examples,
                               formatter_class=argparse.RawDescriptionHelpFormatter)
        sp.add_argument("--timeout", type=seconds, default=10.0, metavar="S",
                        help="seconds (wall) to wait for the graph: a publisher, node or service to appear, an answer "
                             "(default 10)")
        sp.add_argument("--domain-id", type=domain, default=None, metavar="N",
                        help="ROS domain (default: $ROS_DOMAIN_ID if set, else 0, where pkm bringup runs without it)")
        sp.add_argument("--json", action="store_true", help=COMMON_FLAGS["json"])
        sp.set_defaults(func=_graph_tool(run))
        return sp

    sp = tool(sub, "topics", _topics, "list the running graph's topics with their types (pip-only ros2 topic list)",
              "Lists the topics of the other nodes on the domain with their types; -v adds the number of\n"
              "publishers and subscribers. Waits for a node to appear, then until the graph is unchanged for 0.5 s.",
              "examples:\n  pkm topics\n  pkm topics -v --domain-id 7")
    sp.add_argument("-v", "--verbose", action="store_true", help="also the publisher and subscriber counts")

    sp = tool(sub, "echo", _echo, "print the messages of a topic as YAML (pip-only ros2 topic echo)",
              "Prints each message of TOPIC as a YAML document ending in '---' (with --json: one JSON object per\n"
              "line). The type comes from the graph; the QoS follows the publishers (a latched topic's last message\n"
              "arrives at once). Runs until Ctrl-C, or --once / --count N messages. Exit 1 when no publisher appears\n"
              "(or, with --once / --count, no message comes) within --timeout.",
              "examples:\n  pkm echo /platform_pose --once\n  pkm echo /trajectory_generator/status\n"
              "  pkm echo /diagnostics --count 5 --json")
    sp.add_argument("topic", metavar="TOPIC", help="topic name, e.g. /joint_states")
    group = sp.add_mutually_exclusive_group()
    group.add_argument("--once", action="store_true", help="print one message and exit")
    group.add_argument("-n", "--count", type=count(1, 10**9), default=None, metavar="N",
                       help="print N messages and exit")

    sp = sub.add_parser("param", help="get or set a parameter of a running node (pip-only ros2 param get|set)",
                        description="Get or set a parameter of a running node through its parameter services.\n\n"
                        + TOOLS_NOTE, formatter_class=argparse.RawDescriptionHelpFormatter,
                        epilog="examples:\n  pkm param get /joint_controller kp\n"
                               "  pkm param set /joint_controller kp 3e5\n"
                               "  pkm param set /computed_force feedforward_model rigid")
    actions = sp.add_subparsers(dest="action", metavar="ACTION", required=True)
    sp = tool(actions, "get", _param, "print a parameter's value", "Prints the value of parameter NAME of NODE "
              "(a string as it is, anything else as JSON,\nso that `pkm param set` reads it back).",
              "examples:\n  pkm param get /joint_controller kp\n  pkm param get /inverse_kinematics tf_rate --json")
    sp.add_argument("node", metavar="NODE", help="node name, e.g. /joint_controller")
    sp.add_argument("name", metavar="NAME", help="parameter name")
    sp = tool(actions, "set", _param, "set a parameter (the node may refuse it, with its reason)",
              "Sets parameter NAME of NODE to VALUE. VALUE is read as ros2 param set reads it (YAML): true/false a\n"
              "bool, 3 an integer, 3.0 or 3e5 a double, [1.0, 2] a double array, [a, b] a string array, anything\n"
              "else a string (quote it, '3e5', to send a number as a string). Exit 1 with the node's reason when it\n"
              "refuses the value (read-only, wrong type, out of range); exit 2 for a VALUE no parameter holds.",
              "examples:\n  pkm param set /joint_controller kp 3e5\n"
              "  pkm param set /joint_controller kd '[900, 900, 900, 900, 900, 900]'\n"
              "  pkm param set /joint_controller safe_behaviour zero")
    sp.add_argument("node", metavar="NODE", help="node name, e.g. /joint_controller")
    sp.add_argument("name", metavar="NAME", help="parameter name")
    sp.add_argument("value", metavar="VALUE", help="the new value (YAML, see above)")

    sp = tool(sub, "call", _call, "call a std_srvs/Trigger service (pip-only ros2 service call)",
              "Calls SERVICE (a std_srvs/srv/Trigger service) and prints its success and message. Exit 1 when it\n"
              "answers success: false, or is not there within --timeout; exit 2 for a service of another type.",
              "examples:\n  pkm call /hardware/reset\n  pkm call /trajectory_generator/stop")
    sp.add_argument("service", metavar="SERVICE", help="service name, e.g. /trajectory_generator/start")

    sp = tool(sub, "goal", _goal, "send a trajectory goal to the running trajectory_generator; wait for its answer",
              "Sends SPEC (a trajectory spec in YAML or JSON, as pkm bringup --goal takes it) to the trajectory\n"
              "generator's goal topic and waits for its answer on its status topic: exit 0 when it accepted the\n"
              "goal (printing its duration), 1 when it rejected it (printing the reason) or did not answer within\n"
              "--timeout, 2 when SPEC is not a trajectory spec. The motion itself is followed with\n"
              "`pkm echo /trajectory_generator/status`.",
              "examples:\n  pkm goal \"{type: point_to_point, goal: [0.05, 0, -0.85, 0, 0, 0], duration: 1.0}\"\n"
              "  pkm goal \"{type: circle, radius: 0.1, normal: [0, 0, 1], speed: 0.5, laps: 2, ramp_time: 0.3}\"")
    sp.add_argument("spec", metavar="SPEC", help="trajectory spec (YAML/JSON)")
    sp.add_argument("--node", default="/trajectory_generator",
                    help="the trajectory generator's node name (default /trajectory_generator)")

    sp = tool(sub, "record", _record, "record the running graph into a rosbag2 (sqlite3 or MCAP) for ros2 bag and "
              "pkm identify",
              "Records topics of the running graph into a new rosbag2 at BAG with the rosbags library (readable by\n"
              "ros2 bag, with the message definitions and the publishers' QoS): by default /joint_states, the\n"
              "actuator commands (/<controller_name>/commands), /joint_references, /desired_joint_states,\n"
              "/feedforward, /diagnostics and the trajectory generator's status. While it records, joint_controller\n"
              "publishes /joint_states every control period (its state_publish_rate set to 0, the old value back at\n"
              "the end): the identification needs the control rate. Stops after --duration seconds of recorded\n"
              "/joint_states time (sim time in lockstep), when the goal is done (--until-done), or at Ctrl-C; the\n"
              "bag is closed cleanly each time. Prints the messages per topic and the periods without a sample.\n"
              "To record a run from its first period, use `pkm bringup --record BAG` instead.",
              "examples:\n  pkm record --output run1 --until-done\n"
              "  pkm record --output run2 --storage mcap --duration 5\n"
              "  pkm record --output states --topics /joint_states /hardware/ground_truth/joint_trajectory")
    sp.add_argument("--output", required=True, metavar="BAG", help="the bag directory to create (must not exist)")
    sp.add_argument("--topics", nargs="+", default=None, metavar="TOPIC",
                    help="the topics to record instead of the default ones")
    sp.add_argument("--storage", choices=("sqlite3", "mcap"), default="sqlite3",
                    help="rosbag2 storage: sqlite3 (.db3, the default) or mcap")
    group = sp.add_mutually_exclusive_group()
    group.add_argument("--duration", type=seconds, default=None, metavar="S",
                       help="stop after S seconds of /joint_states stamps (sim time in lockstep)")
    group.add_argument("--until-done", action="store_true",
                       help="stop when the trajectory generator reports its goal finished (or rejected) and "
                            "/joint_states has reached its end")
    return p


#: said by every graph tool's --help
TOOLS_NOTE = ("For pip-only installs (ros2cli is not on PyPI); where ROS 2 is installed, ros2cli does the same.\n"
              "Domain: --domain-id, else $ROS_DOMAIN_ID, else 0 (pkm bringup's without ROS_DOMAIN_ID).\n"
              "Exit status: 0 done, 1 the graph did not answer as asked, 2 malformed input.")


#: options holding task coordinates, rates or joint positions: their angles are in degrees with --deg
ANGLE_OPTIONS = ("pose", "twist", "accel", "fixed", "guess", "joints")


def _degrees_note(args) -> str:
    """With --deg: the angle-bearing input as typed, since the model's messages are in SI units and radians."""
    given = [f"--{name} {' '.join(f'{v:.12g}' for v in getattr(args, name))}"
             for name in ANGLE_OPTIONS if getattr(args, name, None)]
    if not (getattr(args, "deg", False) and given):
        return ""
    return f" (model values in m and rad unless marked; input with --deg, angles in degrees: {', '.join(given)})"


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        args.func(args)
    except (PkmError, OSError) as exc:  # OSError: an output path that cannot be written
        print(f"pkm: {type(exc).__name__}: {excerpt(str(exc), 600)}{_degrees_note(args)}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
