"""``pkm`` subcommands that measure and reproduce: reproduce (a paper's figures), bench (timings), demo (the
PaLiDA benchmark through the node graph) and fuzz (generated hostile inputs)."""

from __future__ import annotations

import argparse
import json
from functools import partial

from .common import add_command, count, domain, robot_id, seconds


def cmd_reproduce(args):
    from ..benchmarks import reproduce

    summary = reproduce.run(args.name, args.out, progress=not args.json, quick=args.quick)
    if args.json:
        print(json.dumps(summary, indent=2, default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o)))


def cmd_bench(args):
    from ..benchmarks.speed import bench_dynamics, bench_kinematics, bench_simulation

    if args.what == "kinematics":
        bench_kinematics(args.robot, samples=args.samples, as_json=args.json)
    elif args.what == "simulation":
        bench_simulation(args.robot, as_json=args.json)
    elif args.what == "dynamics":
        bench_dynamics(args.robot, as_json=args.json)
    elif args.what == "reject":
        from ..benchmarks.reject import bench_reject

        bench_reject((args.robot or ["palida"])[0], as_json=args.json)
    else:
        from ..benchmarks.loop import bench_loop

        robot = (args.robot or ["palida"])[0]
        bench_loop(robot, args.controller, args.seconds, as_json=args.json)


def cmd_fuzz(args, command_line):
    from .. import fuzz

    seed, tallies = fuzz.run(args.classes, args.budget, args.seed, progress=not args.json, command_line=command_line)
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
    from ..fuzz import CLASSES

    names = list(CLASSES) if text == "all" else [c for c in text.split(",") if c]
    if not names or any(c not in CLASSES for c in names):
        raise argparse.ArgumentTypeError(f"classes must be 'all' or names of {', '.join(CLASSES)}, got {text!r}")
    return names


def add_demo_arguments(p: argparse.ArgumentParser) -> None:
    """The options of `pkm demo` (demo_options reads them), of `pkm demo --identified` (identified_options) and of
    `pkm demo --deburring` (deburring_options)."""
    from ..benchmarks.deburring import DeburringOptions as deburring
    from ..benchmarks.demo import DemoOptions as demo
    from ..benchmarks.demo_identified import METHODS, STRUCTURES, IdentifiedOptions as identified

    p.add_argument("--out", default=demo.out, help="output folder (default %(default)s/)")
    p.add_argument("--radius", type=float, default=demo.radius, help="circle radius in m (default %(default)g)")
    p.add_argument("--laps", type=float, default=demo.laps, help="laps at 1 m/s (default %(default)g)")
    p.add_argument("--ramp-time", type=float, default=demo.ramp_time,
                   help="speed ramp up/down in s (default %(default)g)")
    p.add_argument("--runs", nargs="+", default=list(demo.runs),
                   help="controllers to run (default: pd cf_rb cf_rb_friction)")
    p.add_argument("--timeout", type=float, default=demo.timeout, help="wall-clock limit per run in s")
    p.add_argument("--domain-id", type=domain, default=None,
                   help="ROS_DOMAIN_ID (default: $ROS_DOMAIN_ID if set, else an isolated one from the pid)")
    p.add_argument("--no-animations", action="store_true",
                   help="no animation per run (palida_benchmark_<controller>.mp4, .gif without ffmpeg)")
    p.add_argument("--quiet", action="store_true", help="no progress bar, no node output")

    g = p.add_argument_group("with --identified")
    g.add_argument("--identified", action="store_true",
                   help="the benchmark against a perturbed 'true' PaLiDA with measurement noise: excite, record, "
                        "identify, then SJ and CF rb+frict with nominal, identified and true parameters "
                        "(results/palida_identification.json)")
    g.add_argument("--perturb-seed", type=int, default=identified.perturb_seed,
                   help="seed of the true robot (default %(default)s)")
    g.add_argument("--perturb-scale", type=float, default=identified.perturb_scale,
                   help="largest relative change of a parameter of the true robot (default %(default)g)")
    g.add_argument("--encoder-resolution", type=float, default=identified.encoder_resolution,
                   help="m per count (default %(default)g)")
    g.add_argument("--effort-noise-std", type=float, default=identified.effort_noise_std,
                   help="force measurement noise, N (default %(default)g)")
    g.add_argument("--excitation-duration", type=float, default=identified.excitation_duration,
                   help="excitation period, s (default %(default)g)")
    g.add_argument("--harmonics", type=int, default=identified.harmonics,
                   help="harmonics of the excitation (default %(default)s)")
    g.add_argument("--evaluations", type=int, default=identified.evaluations,
                   help="condition-number evaluations of the excitation design (default %(default)s)")
    g.add_argument("--method", choices=METHODS, default=identified.method, help="least squares (default %(default)s)")
    g.add_argument("--min-speed", type=float, default=identified.min_speed,
                   help="a joint's equation is left out of the identification where it moves slower than this, m/s "
                        "(default %(default)g: the simulated robot's Coulomb friction is tanh(qdot / 2e-3), not the "
                        "model's sign, below about 3 x 2e-3)")
    g.add_argument("--structure", choices=STRUCTURES, default=identified.structure,
                   help="base parameters to identify: jourdain (Abdellatif's Table I, 24, the compiled kernel in "
                        "computed_force; the true robot's struts then stay identical and symmetric, the paper's "
                        "assumptions) or per-body (every body and joint its own, 112; struts perturbed one by one)")

    g = p.add_argument_group("with --deburring")
    g.add_argument("--deburring", action="store_true",
                   help="PaLiDA presses a constant normal force on the edge of config/environment.yaml's part while "
                        "moving along it (direct force control, the graph in this process in lockstep; "
                        "results/deburring.json, deburring.png)")
    g.add_argument("--force", type=float, default=deburring.force,
                   help="normal force, N (default %(default)g)")
    g.add_argument("--edge-speed", type=float, default=deburring.edge_speed,
                   help="speed along the edge, m/s (default %(default)g)")
    g.add_argument("--edge-length", type=float, default=deburring.edge_length,
                   help="m of the edge to run (default: the part's length less 2 cm at each end)")


def demo_options(args):
    """The DemoOptions of `pkm demo`'s command line (checked there: InvalidInputError naming the option)."""
    from ..benchmarks.demo import DemoOptions

    return DemoOptions(out=args.out, radius=args.radius, laps=args.laps, ramp_time=args.ramp_time,
                       runs=tuple(args.runs), timeout=args.timeout, domain_id=args.domain_id,
                       animations=not args.no_animations, quiet=args.quiet, json=args.json)


def identified_options(args):
    """The IdentifiedOptions of `pkm demo --identified`'s command line (checked there)."""
    from ..benchmarks.demo_identified import IdentifiedOptions

    return IdentifiedOptions(perturb_seed=args.perturb_seed, perturb_scale=args.perturb_scale,
                             encoder_resolution=args.encoder_resolution, effort_noise_std=args.effort_noise_std,
                             excitation_duration=args.excitation_duration, harmonics=args.harmonics,
                             evaluations=args.evaluations, method=args.method, min_speed=args.min_speed,
                             structure=args.structure)


def deburring_options(args):
    """The DeburringOptions of `pkm demo --deburring`'s command line (checked there)."""
    from ..benchmarks.deburring import DeburringOptions

    return DeburringOptions(force=args.force, edge_speed=args.edge_speed, edge_length=args.edge_length)


def cmd_demo(args):
    from ..benchmarks import deburring, demo as benchmark, demo_identified as identified_benchmark
    from ..errors import InvalidInputError

    if args.identified and args.deburring:
        raise InvalidInputError("--identified and --deburring are two demos: give one")
    demo = demo_options(args)
    if args.identified:
        summary = identified_benchmark.run(demo, identified_options(args))
    elif args.deburring:
        summary = deburring.run(demo, deburring_options(args))
    else:
        summary = benchmark.run(demo)
    if args.json:
        print(json.dumps(summary, indent=2))


def add_stress_arguments(p: argparse.ArgumentParser) -> None:
    """The subcommands of `pkm stress` (startup) under ``p`` (stress_options reads their options)."""
    from ..benchmarks import stress
    from ..benchmarks.stress import DEFAULT_GOAL, StressOptions as defaults
    from ..hardware.plugin import hardware_names

    sub = p.add_subparsers(dest="what", metavar="WHAT", required=True)
    s = sub.add_parser("startup", help="start the graph N times in a row in lockstep with a short goal",
                       description=stress.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    s.add_argument("--hardware", choices=hardware_names(), default=defaults.hardware,
                   help="the hardware kind (default %(default)s)")
    s.add_argument("--stand-in", action="store_true",
                   help="with --hardware ros2_control or canopen: pkm bringup's stand-in (needed without a robot)")
    s.add_argument("--runs", type=int, default=defaults.runs, metavar="N", help="starts in a row (default %(default)s)")
    s.add_argument("--robot", default=defaults.robot, help="robot id (default %(default)s)")
    s.add_argument("--controller", default=defaults.controller, help="named controller (default %(default)s)")
    s.add_argument("--goal", default=defaults.goal, metavar="SPEC",
                   help=f"the trajectory spec of each run (default the short palida move {DEFAULT_GOAL})")
    s.add_argument("--max-startup", type=float, default=defaults.max_startup, metavar="S",
                   help="a start-up (bringup's start to the first motion) longer than S seconds (wall) fails the "
                        "run (default %(default)g)")
    s.add_argument("--timeout", type=float, default=defaults.timeout, metavar="S",
                   help="each run's pkm bringup --timeout (default %(default)g s; a stalled lockstep fails it "
                        "after 45 s)")
    s.add_argument("--domain-id", type=int, default=None, metavar="D",
                   help="first ROS domain of the runs (default: an isolated one no other run holds, "
                        "ros.topology.isolated_domain)")
    s.add_argument("--set", action="append", default=[], metavar="[NODE.]KEY=VALUE",
                   help="passed to pkm bringup (repeatable)")
    s.add_argument("--json", action="store_true", help="the runs and figures as one JSON object")


def stress_options(args):
    """The StressOptions of `pkm stress startup`'s command line (checked there: InvalidInputError naming the option)."""
    from ..benchmarks.stress import StressOptions

    return StressOptions(hardware=args.hardware, stand_in=args.stand_in, runs=args.runs, robot=args.robot,
                         controller=args.controller, goal=args.goal, max_startup=args.max_startup,
                         timeout=args.timeout, domain_id=args.domain_id, overrides=tuple(args.set), json=args.json)


def cmd_stress(args):
    from ..benchmarks.stress import run

    code = run(stress_options(args))
    if code:
        raise SystemExit(code)


def register(sub, command_line) -> None:
    """reproduce, bench, stress, demo and fuzz under ``sub`` (the subparsers of pkm); ``command_line`` is (build_parser,
    main) of pkm itself, which `pkm fuzz` hands to the campaign of the class cli."""
    add = partial(add_command, sub)
    from ..benchmarks.speed import SAMPLES_MAX as BENCH_SAMPLES_MAX

    from ..benchmarks.reproduce import REPRODUCTIONS
    sp = add("reproduce", cmd_reproduce, "reproduce a reference paper's figures and tables (PNG, CSV)",
             "Reproductions:\n" + "\n".join(f"  {k:24s} {v[1]}" for k, v in REPRODUCTIONS.items()), robot=False,
             common=("json",))
    sp.add_argument("name", choices=list(REPRODUCTIONS), help="which reproduction")
    sp.add_argument("--out", default="results", help="output folder (default: results/)")
    sp.add_argument("--quick", action="store_true",
                    help="a short run for a smoke test where the reproduction has one (stewart-control: the first "
                         "move only); its numbers are not the documented ones")

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
    sp.add_argument("--controller", default="cf_rb_friction", help="loop: named controller (default %(default)s)")
    sp.add_argument("--seconds", type=seconds, default=60.0,
                    help="loop: wall seconds of the real-time run, at most 3600 (default 60; the baseline runs "
                         "min(20, S))")

    from ..benchmarks import stress
    sp = add("stress", cmd_stress, "start the node graph many times in a row and report the start-up times and "
             "failures (not part of make test)", stress.__doc__, robot=False, common=())
    add_stress_arguments(sp)

    sp = add("demo", cmd_demo, "the PaLiDA computed-force benchmark through the ROS 2 node graph (make demo)",
             "Abdellatif sec. V: a circle inclined 30 deg at 1 m/s, three runs (SJ PD, CF rb, CF rb+frict)\n"
             "through the node graph in lockstep against the simulated palida; prints the tracking table and\n"
             "writes results/palida_benchmark.json, plots (Figs. 5-6) and CSV.\n"
             "--identified: the same with identified parameters; --deburring: PaLiDA keeps a constant normal force\n"
             "along an edge at speed (direct force control).", robot=False, common=("json",))
    add_demo_arguments(sp)

    from ..fuzz import CLASSES, FUZZ_BUDGET, FUZZ_BUDGET_MAX
    sp = add("fuzz", partial(cmd_fuzz, command_line=command_line),
             "generated hostile inputs per class: counts of rejections, crashes, NaN, violations",
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
