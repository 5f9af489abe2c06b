"""``pkm`` subcommands that measure and reproduce: reproduce (a paper's figures), bench (timings), demo (the
PaLiDA benchmark through the node graph) and fuzz (generated hostile inputs)."""

from __future__ import annotations

import argparse
import json
from functools import partial

from .common import add_command, count, robot_id, seconds


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


def cmd_demo(args):
    from ..benchmarks import deburring, demo as benchmark, demo_identified as identified_benchmark
    from ..errors import InvalidInputError

    if args.identified and args.deburring:
        raise InvalidInputError("--identified and --deburring are two demos: give one")
    summary = (identified_benchmark if args.identified else deburring if args.deburring else benchmark).run(args)
    if args.json:
        print(json.dumps(summary, indent=2))


def cmd_stress(args):
    from ..benchmarks.stress import run

    code = run(args)
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
    sp.add_argument("--controller", default="cf_rb_friction", help="loop: named controller (default cf_rb_friction)")
    sp.add_argument("--seconds", type=seconds, default=60.0,
                    help="loop: wall seconds of the real-time run, at most 3600 (default 60; the baseline runs "
                         "min(20, S))")

    from ..benchmarks import stress
    sp = add("stress", cmd_stress, "start the node graph many times in a row and report the start-up times and "
             "failures (not part of make test)", stress.__doc__, robot=False, common=())
    stress.add_subcommands(sp)

    sp = add("demo", cmd_demo, "the PaLiDA computed-force benchmark through the ROS 2 node graph (make demo)",
             "Abdellatif sec. V: a circle inclined 30 deg at 1 m/s, three runs (SJ PD, CF rb, CF rb+frict)\n"
             "through the node graph in lockstep against the simulated palida; prints the tracking table and\n"
             "writes results/palida_benchmark.json, plots (Figs. 5-6) and CSV.\n"
             "--identified: the same with identified parameters; --deburring: PaLiDA keeps a constant normal force\n"
             "along an edge at speed (direct force control).", robot=False, common=("json",))
    from ..benchmarks.deburring import add_arguments as deburring_arguments
    from ..benchmarks.demo import add_arguments as demo_arguments
    from ..benchmarks.demo_identified import add_arguments as identified_arguments
    demo_arguments(sp)
    identified_arguments(sp)
    deburring_arguments(sp)

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
