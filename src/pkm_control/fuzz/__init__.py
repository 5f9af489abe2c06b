"""Generated hostile inputs against the real code, counted per class of input (issue 9): ``pkm fuzz``, ``make fuzz``.

One campaign per class of input that reaches the robot from outside (campaigns.py):

  goals        goal specs and goal text for the trajectory generator (parse_goal, GoalScheduler load/start/advance)
  controller   measurements, references, feedforward and times for Controller.update and ControlLoop.cycle
  messages     ROS messages through the nodes' parse_* functions (needs the message packages, not rclpy)
  simulated    commands up to and beyond REFUSE_FACTOR x the force limits for SimulatedRobot.write/step
  cli          argument vectors for every ``pkm`` subcommand (run in this process)
  api          the public kinematics and dynamics functions
  peers        a second node of each kind, a foreign /clock, chunks stamped in the past, a replay of the graph's own
               traffic, /joint_states stamps in the future or 0 (needs ROS 2): a lockstep graph in this process,
               judged by issue 22's criterion (graph/peers.py); 2 to 8 s an input (with the runs without an attack)
  contact      config/environment.yaml's parameters (absurd stiffness, NaN, negative damping, a box holding the robot,
               junk types) and the F/T sensor's, then direct force control presses into what was accepted (issue 24)

Each outcome is one of: accepted (a valid output); rejected cleanly (one of the project's errors,
pkm_control.errors.PkmError: InvalidInputError, an unreachable pose, ...; for the CLI exit status 2 with a
one-line message); crash (any other exception, a simulated robot that fails to step; for the CLI a traceback or
another exit status); NaN output (a non-finite number in an output, a nan/inf printed by the CLI); limit
violation (a command beyond the force limits, a limited joint of the simulated robot beyond its range plus the
penetration its end stop's energy bound allows, a motion outside the duration limits, a refused valid command or an
applied invalid one, ...).
A ``Tally`` counts them.

This module is light (no hypothesis import) so that ``pkm --help`` stays fast; the campaigns import on use.
"""

from __future__ import annotations

import random

from .outcomes import ACCEPTED, CRASH, FAILURES, NAN, REJECTED, VIOLATION, Tally

__all__ = ["ACCEPTED", "CLASSES", "CLASS_BUDGET_MAX", "COLUMNS", "CRASH", "FAILURES", "FUZZ_BUDGET", "FUZZ_BUDGET_MAX",
           "NAN", "REJECTED",
           "VIOLATION", "Tally", "run", "table"]

#: inputs per class of ``make fuzz`` (the suite runs each campaign at its hypothesis profile's budget: 60)
FUZZ_BUDGET = 2000
#: the largest budget ``pkm fuzz`` takes: a bound on its run time (about an hour a class on 2 cores)
FUZZ_BUDGET_MAX = 100_000
#: classes whose inputs cost seconds each, and the most inputs a run gives them (peers: a graph run per input, ~2 s)
CLASS_BUDGET_MAX = {"peers": 100}

CLASSES = {
    "goals": "goal specs and goal text for the trajectory generator (parse_goal, GoalScheduler)",
    "controller": "measurements, references, feedforward, times: Controller.update, ControlLoop.cycle",
    "messages": "ROS messages through ros/messages.py parse_* (needs the message packages)",
    "simulated": "commands up to and beyond 2 x the force limits: SimulatedRobot.write/step",
    "cli": "argument vectors for every pkm subcommand",
    "api": "public kinematics and dynamics functions",
    "peers": "second nodes, foreign /clock, past chunks, replays, future stamps against a running graph (ROS 2)",
    "contact": "environment and sensor parameters of the simulated robot's contact, pressed by direct force control",
}

COLUMNS = (("tried", "inputs tried"), (ACCEPTED, "accepted"), (REJECTED, "rejected cleanly"), (CRASH, "crashes"),
           (NAN, "NaN outputs"), (VIOLATION, "limit violations"))


def run(classes, budget: int, seed: int | None = None, progress: bool = True, shrink: bool = True,
        command_line=None):
    """Every campaign of ``classes`` at ``budget`` inputs: (seed used, {name: Tally}). Without a seed one is drawn
    (and reported, so that the run can be repeated). ``command_line`` is (build_parser, main) of pkm, which the class
    cli runs (the command line is the layer above this one: it hands itself in)."""
    from ..progress import progress_bar
    from .campaigns import CAMPAIGNS, cli_campaign, run_campaign

    if "cli" in classes and command_line is None:
        raise ValueError("the class cli needs command_line=(build_parser, main) of pkm")
    campaigns = {**CAMPAIGNS, **({"cli": cli_campaign(*command_line)} if command_line else {})}
    seed = random.SystemRandom().randrange(2**32) if seed is None else int(seed)
    tallies = {}
    with progress_bar(total=budget * len(classes), desc="fuzz", unit="input", disable=not progress) as bar:
        for name in classes:
            bar.set_postfix_str(name)
            tallies[name] = run_campaign(campaigns[name], min(budget, CLASS_BUDGET_MAX.get(name, budget)), seed,
                                         step=lambda: bar.update(1), shrink=shrink)
            bar.update(budget - tallies[name].tried)     # a campaign may run out of distinct inputs early
    return seed, tallies


def table(tallies) -> str:
    """The counts as a text table, then the first failing input of each failing class."""
    head = f"{'class':12s}" + "".join(f"{label:>18s}" for _, label in COLUMNS)
    rows = [head, "-" * len(head)]
    for t in tallies.values():
        d = t.as_dict()
        rows.append(f"{t.name:12s}" + "".join(f"{d[key]:>18d}" for key, _ in COLUMNS))
    for t in tallies.values():
        if t.first_failure:
            kind, text, detail = t.first_failure
            rows += ["", f"{t.name}: first {kind} (minimal input):", f"  {text}", f"  -> {detail}"]
    return "\n".join(rows)
