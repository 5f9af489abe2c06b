"""The ``pkm`` command: robot info, kinematics, workspace, benchmarks and the demo.

Units are SI and radians unless ``--deg`` is given (then every angle, in and out,
is in degrees). Task coordinates are the robot's own (``pkm info --robot R``):
x y z roll pitch yaw for the 6-DoF machines with roll/pitch/yaw ZYX Euler angles
(R = Rz(yaw) Ry(pitch) Rx(roll), the URDF rpy convention), x y z for the DELTA,
x y alpha for the planar robot.
"""

from __future__ import annotations

import argparse
import faulthandler
import sys
import warnings

from ..description import RobotSpecWarning
from ..errors import PkmError, excerpt
from ..ros.dds import use_dds_profile
from . import benchmarks, data, graph, model
from .common import NEGATIVE_NUMBER, Parser, plain

__all__ = ["NEGATIVE_NUMBER", "build_parser", "main"]

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


def build_parser() -> argparse.ArgumentParser:
    """The parser of pkm: the subcommands of each group (model, data, benchmarks, graph), in that order."""
    p = Parser(prog="pkm", description=plain(__doc__), formatter_class=argparse.RawDescriptionHelpFormatter,
               epilog=EXAMPLES)
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)
    model.register(sub)
    data.register(sub)
    benchmarks.register(sub, (build_parser, main))
    graph.register(sub)
    return p


#: options holding task coordinates, rates or joint positions: their angles are in degrees with --deg
ANGLE_OPTIONS = ("pose", "twist", "accel", "fixed", "guess", "joints")


def _degrees_note(args) -> str:
    """With --deg: the angle-bearing input as typed, since the model's messages are in SI units and radians."""
    given = [f"--{name} {' '.join(f'{v:.12g}' for v in getattr(args, name))}"
             for name in ANGLE_OPTIONS if getattr(args, name, None)]
    if not (getattr(args, "deg", False) and given):
        return ""
    return f" (model values in m and rad unless marked; input with --deg, angles in degrees: {', '.join(given)})"


def _show_warning(message, category, filename, lineno, file=None, line=None, show=warnings.showwarning):
    """A robot YAML's warning as one line (pkm: RobotSpecWarning: <file>: unknown keys ...), others as Python's."""
    if issubclass(category, RobotSpecWarning):
        print(f"pkm: {category.__name__}: {message}", file=sys.stderr)
    else:
        show(message, category, filename, lineno, file, line)


def main(argv=None) -> int:
    # a crash in native code (rclpy, the middleware, a compiled kernel) prints every thread's Python stack on stderr
    # before the process dies of its signal: the place is then known (a bringup once ended with SIGSEGV at its stop)
    faulthandler.enable(file=sys.__stderr__)
    args = build_parser().parse_args(argv)
    use_dds_profile()      # the Fast DDS profile of the project's processes (ros.dds), unless the user chose one
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        try:
            args.func(args)
        except (PkmError, OSError) as exc:  # OSError: an output path that cannot be written
            print(f"pkm: {type(exc).__name__}: {excerpt(str(exc), 600)}{_degrees_note(args)}", file=sys.stderr)
            return 2
    return 0

