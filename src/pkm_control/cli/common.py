"""What every group of ``pkm`` subcommands shares: the parser class, the argparse types (finite_float, count,
robot_id, domain, seconds), ``add_command`` with the common flags, task and joint values in and out (``--deg``) and the
JSON or text output (``emit``)."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import numpy as np

from ..errors import InvalidInputError, check_number, excerpt

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
    """argparse type of --robot: a shipped robot or the path of a robot's YAML (its description beside it),
    checked before anything is loaded."""
    from ..description import robot_names
    from ..description.robots import robot_files
    from ..errors import InvalidModelError

    try:
        robot_files(text)
    except InvalidModelError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text if text in robot_names() else str(Path(text).expanduser().resolve())


def domain(text: str) -> int:
    """argparse type of --domain-id: a ROS domain id, 0 to DOMAIN_MAX."""
    from ..ros.topology import DOMAIN_MAX

    if not (text.strip().isdigit() and int(text) <= DOMAIN_MAX):
        raise argparse.ArgumentTypeError(f"a ROS domain id is a whole number from 0 to {DOMAIN_MAX}, got {text!r}")
    return int(text)


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


def plain(doc: str) -> str:
    """A docstring as help text: without the RST double backticks."""
    return doc.replace("``", "")


# ----------------------------------------------------------------------------- helpers

def kinematics_of(args):
    """The kinematics of --robot and --variant."""
    from ..kinematics import robot_kinematics

    return robot_kinematics(args.robot, args.variant)


def _angular_mask(kin):
    m = np.zeros(kin.task.dim, bool)
    m[list(kin.task.angular)] = True
    return m


def revolute_mask(clm):
    """Which joints of the model are revolute (their values are angles with --deg)."""
    model = clm.model
    return np.array([model.joints[model.getJointId(n)].shortname().startswith("JointModelR")
                     for n in clm.joint_names])


def task_in(kin, values, deg, what):
    """Task coordinates as typed for option ``what`` -> SI and radians (their count checked)."""
    x = np.asarray(values, float)
    if x.shape != (kin.task.dim,):
        raise InvalidInputError(f"{what} needs {kin.task.dim} values ({' '.join(kin.task.names)}), got {len(x)}")
    if deg:
        x = np.where(_angular_mask(kin), np.radians(x), x)
    return x


def task_out(kin, x, deg):
    """Task coordinates as printed: their angles in degrees with --deg."""
    return np.where(_angular_mask(kin), np.degrees(x), x) if deg else np.asarray(x)


def joints_out(clm, q, deg):
    """Joint values as printed: the revolute ones in degrees with --deg."""
    return np.where(revolute_mask(clm), np.degrees(q), q) if deg else np.asarray(q)


def emit(args, data, text):
    """The output of a command: ``data`` as JSON with --json, else ``text``."""
    if args.json:
        print(json.dumps(data, indent=2, default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o)))
    else:
        print(text)


def fmt(v, width=11, prec=6):
    """Numbers in aligned columns."""
    return " ".join(f"{x:{width}.{prec}g}" for x in np.atleast_1d(v))


#: the flags a subcommand may share, offered only where they do something (add_command(..., common=...))
COMMON_FLAGS = {
    "json": "machine-readable JSON on stdout",
    "deg": "angles in degrees instead of radians (in and out)",
}


def add_command(sub, name, func, help_, desc=None, robot=True, robot_required=True, common=("json", "deg")):
    """Subcommand ``name`` of ``sub`` (the subparsers of pkm) running ``func(args)``: with --robot and --variant
    unless ``robot`` is false, and the flags of ``common``."""
    sp = sub.add_parser(name, help=help_, description=plain(desc or help_),
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    if robot:
        sp.add_argument("--robot", required=robot_required, type=robot_id,
                        help="robot id (stewart, palida, lopes, delta, planar_redundant, planar_3rrr, five_bar, "
                             "orthoglide, tsai_3upu; see `pkm info`) or the path of a robot's YAML (xacro beside it)")
        sp.add_argument("--variant", default=None,
                        help="robot variant, e.g. 3-6 for stewart, nonredundant for planar_redundant "
                             "(default: the robot's default variant)")
    for flag in common:
        sp.add_argument(f"--{flag}", action="store_true", help=COMMON_FLAGS[flag])
    sp.set_defaults(func=func)
    return sp
