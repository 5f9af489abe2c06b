"""``pkm`` subcommands of identification and recorded runs: perturb (a plant that is not the model), excite
(an excitation trajectory), identify (base parameters from a bag) and animate (a video of a run)."""

from __future__ import annotations

from functools import partial
from pathlib import Path

from ..errors import InvalidInputError, excerpt
from .common import add_command, count, emit, finite_float


def cmd_perturb(args):
    from ..dynamics import robot_dynamics
    from ..identification.perturbation import perturbed_parameters, write_perturbation

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
    emit(args, {"output": str(out), "robot": args.robot, "seed": p.seed, "scale": p.scale,
                 "n_parameters": p.n_parameters, "max_relative_change": p.max_relative_change,
                 "bodies": len(p.data["bodies"])}, f"{p.summary()}\nwritten to {out}")


def cmd_identify(args):
    from ..dynamics import robot_dynamics
    from ..identification.estimation import identify, write_identification
    from ..identification.recording import load_measured_run

    dyn = robot_dynamics(args.robot, args.variant)
    run = load_measured_run(args.bag, args.robot, args.variant, args.start, args.end)   # a gap in it: refused
    ident = identify(run, dyn, method=args.method, structure=args.structure, cutoff=args.cutoff,
                     decimation=args.decimation, sign_eps=args.sign_eps, min_speed=args.min_speed,
                     progress=not args.json)
    write_identification(args.output, ident)
    emit(args, {**ident.to_dict(), "output": args.output},
          f"{ident.table()}\nwrote {args.output} (computed_force's parameters_file)")


def cmd_animate(args):
    from ..viewer.animation import write_animation
    from ..identification.runs import load_bag, load_csv

    source = args.bag or args.csv
    run = (load_bag if args.bag else load_csv)(source, args.robot, args.variant)
    out = args.output or Path("results") / Path(source.rstrip("/")).stem
    path = write_animation(run, out, args.fps, args.speed, quiet=args.quiet)
    print(f"{run.robot}{f' ({run.variant})' if run.variant else ''}, controller {run.controller or 'not recorded'}: "
          f"{len(run.t)} samples over {run.t[-1] - run.t[0]:.3f} s (measured: {run.measured_from}"
          f"{', desired robot recorded' if run.q_desired is not None else ', no desired robot'})")
    print(f"animation: {path}")


def cmd_excite(args):
    from ..dynamics import robot_dynamics
    from ..identification.excitation import design_excitation, write_excitation

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
    emit(args, {"robot": dyn.model.name, "variant": dyn.model.variant, "output": args.output, "spec": spec,
                 "condition": rep.condition, "baseline_condition": rep.baseline_condition,
                 "base_parameters": rep.base_parameters, "samples": rep.samples, "evaluations": rep.evaluations,
                 "seconds": rep.seconds, "usage": rep.usage}, text)


def register(sub) -> None:
    """perturb, identify, animate and excite under ``sub`` (the subparsers of pkm)."""
    add = partial(add_command, sub)
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

    from ..dynamics.parameters import STRUCTURES
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
                    help="use the samples up to S s of the bag's clock (default: to the last); a gap among the "
                         "samples used (lost in the recording) is refused, named")
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

    from ..identification import excitation as exc
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
