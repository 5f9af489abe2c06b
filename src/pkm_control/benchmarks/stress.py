"""`pkm stress startup`: start the graph of one hardware mode N times in a row, in lockstep with a short goal, and
report how long each start took and which failed (issue 26: a start-up that stalls while every node says "ok").

Each run is `pkm bringup --exit-when-done --json` in a process of its own (on ROS domain ``--domain-id`` + the run's
number modulo 10, so that a graph never meets the discovery traffic of the one before), killed with this process
(graph.signals.die_with_parent). A run counts as failed when its goal did not finish (the reason is bringup's: a
stalled lockstep names what it waited for) or its start-up (from bringup's start to the first motion) took longer
than ``--max-startup``; the output of a failed run (its nodes' included) is kept in a file the line names.
Printed: each run's start-up and wall time, then the median and max of both and the failures; exit status 0 when
every run passed, 1 otherwise. Not part of `make test`: it takes minutes (run it on a
loaded machine to see the race the issue found).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from ..hardware.plugin import hardware_names
from ..graph.signals import die_with_parent
from ..ros.topology import DOMAIN_MAX, domain_id

#: a short palida goal: 0.1 s of motion after the approach
DEFAULT_GOAL = "{type: point_to_point, goal: [0.01, 0.0, -0.85, 0.0, 0.0, 0.0], duration: 0.1}"


def add_subcommands(p: argparse.ArgumentParser) -> None:
    """The subcommands of `pkm stress` (startup) under ``p``."""
    sub = p.add_subparsers(dest="what", metavar="WHAT", required=True)
    s = sub.add_parser("startup", help="start the graph N times in a row in lockstep with a short goal",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    s.add_argument("--hardware", choices=hardware_names(), default="sim", help="the hardware mode (default sim)")
    s.add_argument("--stand-in", action="store_true",
                   help="with --hardware ros2_control or canopen: pkm bringup's stand-in (needed without a robot)")
    s.add_argument("--runs", type=int, default=10, metavar="N", help="starts in a row (default 10)")
    s.add_argument("--robot", default="palida", help="robot id (default palida)")
    s.add_argument("--controller", default="cf_rb_friction", help="named controller (default cf_rb_friction)")
    s.add_argument("--goal", default=DEFAULT_GOAL, metavar="SPEC",
                   help=f"the trajectory spec of each run (default the short palida move {DEFAULT_GOAL})")
    s.add_argument("--max-startup", type=float, default=60.0, metavar="S",
                   help="a start-up (bringup's start to the first motion) longer than S seconds (wall) fails the "
                        "run (default 60)")
    s.add_argument("--timeout", type=float, default=300.0, metavar="S",
                   help="each run's pkm bringup --timeout (default 300 s; a stalled lockstep fails it after 45 s)")
    s.add_argument("--domain-id", type=int, default=None, metavar="D",
                   help="first ROS domain of the runs (default: derived from the process id)")
    s.add_argument("--set", action="append", default=[], metavar="[NODE.]KEY=VALUE",
                   help="passed to pkm bringup (repeatable)")
    s.add_argument("--json", action="store_true", help="the runs and figures as one JSON object")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="pkm stress", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_subcommands(p)
    return p


def bringup_argv(args) -> list[str]:
    argv = [sys.executable, "-m", "pkm_control.graph.bringup", "--robot", args.robot, "--controller",
            args.controller, "--hardware", args.hardware, "--goal", args.goal, "--exit-when-done", "--json",
            "--timeout", str(args.timeout)]
    if args.stand_in:
        argv.append("--stand-in")
    for item in args.set:
        argv += ["--set", item]
    return argv


def one_start(args, domain: int) -> dict:
    """Run one bringup; its goal status, reason, start-up and wall seconds (and, failed, the file of its output)."""
    t0 = time.monotonic()
    p = subprocess.run(bringup_argv(args), capture_output=True, text=True, preexec_fn=die_with_parent(),
                       env=dict(os.environ, ROS_DOMAIN_ID=str(domain), PYTHONUNBUFFERED="1"))
    wall = time.monotonic() - t0
    try:
        summary = json.loads(p.stdout)
        startup = summary.get("startup_s")
        status, reason = summary["goal_status"], summary.get("reason", "")
    except json.JSONDecodeError:
        startup, status = None, "no summary"
        reason = f"exit {p.returncode}: {(p.stderr.strip().splitlines() or ['no output'])[-1]}"
    if status == "finished" and not startup <= args.max_startup:
        status, reason = "slow start", f"start-up {startup:.2f} s > --max-startup {args.max_startup:g} s"
    run = {"status": status, "reason": reason, "startup_s": startup, "wall_s": wall}
    if status != "finished":
        with tempfile.NamedTemporaryFile("w", prefix="pkm_stress_", suffix=".log", delete=False) as f:
            f.write(p.stderr + p.stdout)
        run["reason"] += f"; output in {f.name}"
    return run


def figures(runs: list[dict]) -> dict:
    """Median and max of the start-up and wall seconds (over the runs that have them), and the failures."""
    out = {"runs": len(runs), "failures": [dict(run=i, **r) for i, r in enumerate(runs) if r["status"] != "finished"]}
    for key in ("startup_s", "wall_s"):
        values = [r[key] for r in runs if r[key] is not None]
        out[key] = {"median": statistics.median(values), "max": max(values)} if values else None
    return out


def run(args) -> int:
    if args.runs < 1:
        print(f"pkm stress startup: --runs = {args.runs}: at least 1", file=sys.stderr)
        return 2
    first = domain_id(args.domain_id, isolated=True)
    if not 0 <= first <= DOMAIN_MAX - 9:
        print(f"pkm stress startup: --domain-id = {first}: 0 to {DOMAIN_MAX - 9} (ten domains from it)",
              file=sys.stderr)
        return 2
    mode = args.hardware + (" --stand-in" if args.stand_in else "")
    runs = []
    for i in range(args.runs):
        r = one_start(args, first + i % 10)
        runs.append(r)
        if not args.json:
            startup = "-" if r["startup_s"] is None else f"{r['startup_s']:.2f}"
            print(f"run {i + 1}/{args.runs} ({mode}): {r['status']}, start-up {startup} s, wall {r['wall_s']:.2f} s"
                  + (f" ({r['reason']})" if r["reason"] else ""), flush=True)
    fig = figures(runs)
    if args.json:
        print(json.dumps({"hardware": mode, "robot": args.robot, "controller": args.controller, "goal": args.goal,
                          "max_startup_s": args.max_startup, "per_run": runs, **fig}, indent=2))
    else:
        for key, name in (("startup_s", "start-up"), ("wall_s", "wall")):
            if fig[key] is not None:
                print(f"{name}: median {fig[key]['median']:.2f} s, max {fig[key]['max']:.2f} s")
        print(f"{len(fig['failures'])} of {len(runs)} runs failed (bound on the start-up: {args.max_startup:g} s)")
    return 0 if not fig["failures"] else 1


def main(argv=None) -> int:
    return run(build_parser().parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
