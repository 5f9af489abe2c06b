"""`pkm stress startup`: start the graph of one hardware mode N times in a row, in lockstep with a short goal, and
report how long each start took and which failed (issue 26: a start-up that stalls while every node says "ok").

Each run is `pkm bringup --exit-when-done --json` in a process of its own (on ROS domain ``--domain-id`` + the run's
number modulo 10, so that a graph never meets the discovery traffic of the one before), killed with this process
(process.die_with_parent). A run counts as failed when its goal did not finish (the reason is bringup's: a
stalled lockstep names what it waited for) or its start-up (from bringup's start to the first motion) took longer
than ``--max-startup``; the output of a failed run (its nodes' included) is kept in a file the line names.
Printed: each run's start-up and wall time, then the median and max of both and the failures; exit status 0 when
every run passed, 1 otherwise. Not part of `make test`: it takes minutes (run it on a
loaded machine to see the race the issue found).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

from ..hardware.plugin import hardware_plugin
from ..errors import InvalidInputError
from ..process import die_with_parent
from ..ros.topology import DOMAIN_MAX, domain_id

#: a short palida goal: 0.1 s of motion after the approach
DEFAULT_GOAL = "{type: point_to_point, goal: [0.01, 0.0, -0.85, 0.0, 0.0, 0.0], duration: 0.1}"


@dataclass(frozen=True)
class StressOptions:
    """What `pkm stress startup` runs (cli.benchmarks.stress_options reads it from the command line); checked as it
    is made."""

    hardware: str = "sim"
    stand_in: bool = False                 # pkm bringup's stand-in (ros2_control, canopen)
    runs: int = 10                         # starts in a row
    robot: str = "palida"
    controller: str = "cf_rb_friction"
    goal: str = DEFAULT_GOAL               # the trajectory spec of each run
    max_startup: float = 60.0              # s (wall): a longer start-up fails the run
    timeout: float = 300.0                 # s (wall): each run's pkm bringup --timeout
    domain_id: int | None = None           # first ROS domain of the runs (None: an isolated one, ros.topology)
    overrides: tuple[str, ...] = ()        # pkm bringup's --set items
    json: bool = False                     # the runs and figures as one JSON object

    def __post_init__(self):
        hardware_plugin(self.hardware)                   # a registered kind (else the registered ones are listed)
        if self.runs < 1:
            raise InvalidInputError(f"--runs must be at least 1, got {self.runs}")
        for name in ("max_startup", "timeout"):
            value = getattr(self, name)
            if not value > 0.0:
                raise InvalidInputError(f"--{name.replace('_', '-')} must be more than 0 s, got {value!r}")


def bringup_argv(options: StressOptions) -> list[str]:
    argv = [sys.executable, "-m", "pkm_control.cli", "bringup", "--robot", options.robot, "--controller",
            options.controller, "--hardware", options.hardware, "--goal", options.goal, "--exit-when-done", "--json",
            "--timeout", str(options.timeout)]
    if options.stand_in:
        argv.append("--stand-in")
    for item in options.overrides:
        argv += ["--set", item]
    return argv


def one_start(options: StressOptions, domain: int) -> dict:
    """Run one bringup; its goal status, reason, start-up and wall seconds (and, failed, the file of its output)."""
    t0 = time.monotonic()
    p = subprocess.run(bringup_argv(options), capture_output=True, text=True, preexec_fn=die_with_parent(),
                       env=dict(os.environ, ROS_DOMAIN_ID=str(domain), PYTHONUNBUFFERED="1"))
    wall = time.monotonic() - t0
    try:
        summary = json.loads(p.stdout)
        startup = summary.get("startup_s")
        status, reason = summary["goal_status"], summary.get("reason", "")
    except json.JSONDecodeError:
        startup, status = None, "no summary"
        reason = f"exit {p.returncode}: {(p.stderr.strip().splitlines() or ['no output'])[-1]}"
    if status == "finished" and not startup <= options.max_startup:
        status, reason = "slow start", f"start-up {startup:.2f} s > --max-startup {options.max_startup:g} s"
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


def run(options: StressOptions) -> int:
    first = domain_id(options.domain_id, isolated=True)
    if not 0 <= first <= DOMAIN_MAX - 9:
        print(f"pkm stress startup: --domain-id = {first}: 0 to {DOMAIN_MAX - 9} (ten domains from it)",
              file=sys.stderr)
        return 2
    mode = options.hardware + (" --stand-in" if options.stand_in else "")
    runs = []
    for i in range(options.runs):
        r = one_start(options, first + i % 10)
        runs.append(r)
        if not options.json:
            startup = "-" if r["startup_s"] is None else f"{r['startup_s']:.2f}"
            print(f"run {i + 1}/{options.runs} ({mode}): {r['status']}, start-up {startup} s, wall {r['wall_s']:.2f} s"
                  + (f" ({r['reason']})" if r["reason"] else ""), flush=True)
    fig = figures(runs)
    if options.json:
        print(json.dumps({"hardware": mode, "robot": options.robot, "controller": options.controller,
                          "goal": options.goal, "max_startup_s": options.max_startup, "per_run": runs, **fig},
                         indent=2))
    else:
        for key, name in (("startup_s", "start-up"), ("wall_s", "wall")):
            if fig[key] is not None:
                print(f"{name}: median {fig[key]['median']:.2f} s, max {fig[key]['max']:.2f} s")
        print(f"{len(fig['failures'])} of {len(runs)} runs failed (bound on the start-up: {options.max_startup:g} s)")
    return 0 if not fig["failures"] else 1
