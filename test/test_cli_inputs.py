"""`pkm` under generated hostile arguments: exit 0 with only finite numbers, or exit 2 with one line.

Every subcommand that computes something quickly (info, ik, fk, jacobian, workspace, id, bringup --dry-run)
gets generated arguments: ordinary values near the robot's home pose, huge finite floats, nan / inf in any
spelling, wrong counts, non-numbers and very long strings. The run must end with exit status 0 and an
output without nan or inf, or with exit status 2 and a one-line message on stderr; an exception escaping
``main`` (a traceback) fails. The slow subcommands (bench, reproduce, demo) get the argument errors only.
``main`` runs in-process; the number of examples is the active hypothesis profile's (conftest.py).
"""

import contextlib
import io
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pkm_control.cli import main
from pkm_control.kinematics import robot_kinematics

ROBOTS = ("palida", "stewart", "lopes", "delta", "planar_redundant")
NOT_FINITE = re.compile(r"\b(nan|inf|infinity)\b", re.IGNORECASE)

#: number spellings: ordinary, huge but finite, not finite, not numbers
HOSTILE_NUMBER = st.one_of(
    st.sampled_from(["1e155", "1e300", "-1e308", "1e200", "1.7976931348623157e308", "1e6", "1000001", "nan",
                     "-nan", "inf", "-inf", "Infinity", "NaN", "1e-320", "0", "-0", "abc", "", "1e", "--", "x" * 5000]),
    st.floats(allow_nan=True, allow_infinity=True).map(repr))


def pkm(argv):
    """(exit status, stdout, stderr) of `pkm argv` run in-process; an escaping exception fails the test."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
    return code, out.getvalue(), err.getvalue()


def check(argv):
    code, out, err = pkm(argv)
    shown = " ".join(a[:60] for a in argv)
    assert code in (0, 2), f"pkm {shown}: exit {code}\n{err[-2000:]}"
    assert "Traceback" not in err, f"pkm {shown}:\n{err[-2000:]}"
    if code == 0:
        assert not NOT_FINITE.search(out), f"pkm {shown} printed a non-finite number:\n{out[:2000]}"
    else:
        lines = err.strip().splitlines()
        assert lines and lines[-1].startswith("pkm") and len(lines[-1]) < 1000, f"pkm {shown}:\n{err[:1000]}"
    return code


@st.composite
def numbers(draw, base):
    """Values near ``base`` as text; sometimes one hostile value, a wrong count, or extra items."""
    values = [repr(float(b + d)) for b, d in zip(base, draw(st.lists(st.floats(-0.05, 0.05), min_size=len(base),
                                                                          max_size=len(base))))]
    kind = draw(st.sampled_from(["plain", "plain", "hostile", "count"]))
    if kind == "hostile":
        values[draw(st.integers(0, len(values) - 1))] = draw(HOSTILE_NUMBER)
    elif kind == "count":
        values = values[:draw(st.integers(0, len(values)))] + ["0.0"] * draw(st.integers(0, 2))
    return values


def option(name, values):
    """argv of an option with values: '--name=v' when v starts with '-' and is not a number argparse reads."""
    return [f"--{name}"] + values if values else [f"--{name}"]


SETTINGS = settings(suppress_health_check=[HealthCheck.too_slow])


def motion_options(data, kin):
    """argv of --pose (about home), --twist and --accel (about zero), each drawn hostile."""
    home, zero = np.asarray(kin.model.config["home"], float), np.zeros(kin.task.dim)
    return (option("pose", data.draw(numbers(home), "pose")), option("twist", data.draw(numbers(zero), "twist")),
            option("accel", data.draw(numbers(zero), "accel")))


@pytest.mark.parametrize("robot", ROBOTS)
@SETTINGS
@given(data=st.data())
def test_kinematics_commands(robot, data):
    kin = robot_kinematics(robot)
    flags = data.draw(st.lists(st.sampled_from(["--json", "--deg"]), unique=True), "flags")
    pose, twist, accel = motion_options(data, kin)
    qa = kin.actuated(kin.task.pose(kin.model.config["home"]))
    for argv in (["ik", "--robot", robot, *pose, *twist, *accel], ["jacobian", "--robot", robot, *pose],
                 ["fk", "--robot", robot, *option("joints", data.draw(numbers(qa), "joints"))],
                 ["fk", "--robot", robot, *option("joints", [repr(x) for x in qa]), *option("guess", pose[1:])],
                 ["id", "--robot", robot, *pose, *twist, *accel,
                  *data.draw(st.sampled_from([[], ["--no-friction"], ["--wrench", *["1e300"] * 6]]), "id flags")]):
        check(argv + flags)


@pytest.mark.parametrize("robot", ROBOTS)
@SETTINGS
@given(data=st.data())
def test_id_paper_methods(robot, data):
    from pkm_control.dynamics.formulations import methods_for

    method = data.draw(st.sampled_from(methods_for(robot) + ["generic", "x" * 5000, ""]), "method")
    pose, twist, accel = motion_options(data, robot_kinematics(robot))
    check(["id", "--robot", robot, "--method", method, *pose, *twist, *accel])


@SETTINGS
@given(data=st.data())
def test_workspace(data, tmp_path_factory):
    robot = data.draw(st.sampled_from(ROBOTS), "robot")
    kin = robot_kinematics(robot)
    home = np.asarray(kin.model.config["home"], float)
    names = list(kin.task.names)
    argv = ["workspace", "--robot", robot, "--json",
            "--resolution", data.draw(st.one_of(st.sampled_from(["2", "3", "4", "3.0", "1e5", "100000", "0", "-5",
                                                                  "1", "2.5"]), HOSTILE_NUMBER), "resolution")]
    if data.draw(st.booleans()):
        argv += ["--scale", data.draw(st.one_of(st.sampled_from(["1", "0.5", "2", "0", "-1"]), HOSTILE_NUMBER))]
    if data.draw(st.booleans()):
        argv += option("fixed", data.draw(numbers(home), "fixed"))
    if data.draw(st.booleans()):
        argv += ["--vary", *data.draw(st.lists(st.sampled_from(names + ["w", "x" * 5000]), min_size=1, max_size=4))]
    if data.draw(st.booleans()):
        argv += ["--volume"]
    if data.draw(st.booleans()):
        folder = tmp_path_factory.mktemp("plots")
        argv += ["--plot", data.draw(st.sampled_from([f"{folder}/ws.png", f"{folder}/ws.svg", f"{folder}/no/ws.png",
                                                      f"{folder}/ws.xyz", f"{folder}/ws", f"{folder}/{'x' * 5000}.png",
                                                      f"{folder}/ws\0.png"]), "plot")]
    check(argv)


@SETTINGS
@given(name=st.one_of(st.text(max_size=30), st.sampled_from(["x" * 5000, "../config/delta", "delta.yaml", "/etc",
                                                             "Delta", "delta "])),
       command=st.sampled_from(["info", "ik", "jacobian", "workspace", "id", "fk", "bringup"]))
def test_unknown_robot_names_are_refused_first(name, command):
    """A name that is not a shipped robot is refused before anything is loaded, with the valid names."""
    from pkm_control.description import robot_names

    if name in robot_names():
        return
    extra = {"ik": ["--pose", "0"], "jacobian": ["--pose", "0"], "id": ["--pose", "0"], "fk": ["--joints", "0"],
             "bringup": ["--dry-run"], "info": [], "workspace": []}[command]
    code, _, err = pkm([command, f"--robot={name}", *extra])
    assert code == 2 and "Traceback" not in err
    assert len(err) < 1000 and all(r in err for r in robot_names()), err[:1000]


@SETTINGS
@given(variant=st.one_of(st.text(max_size=20), st.just("v" * 5000)), robot=st.sampled_from(ROBOTS))
def test_unknown_variants(variant, robot):
    from pkm_control.description import robot_variants

    if variant in robot_variants(robot):
        return
    code, _, err = pkm(["info", "--robot", robot, f"--variant={variant}"])
    assert code == 2 and len(err) < 1000 and "Traceback" not in err, err[:1000]


@SETTINGS
@given(value=st.one_of(HOSTILE_NUMBER, st.sampled_from(["0", "-5", "1e7", "1000001", "2.5", "1e9"])))
def test_bench_and_slow_commands_refuse_bad_counts(value):
    """bench --samples (1 to 1e6) and --seconds (0 to 3600 s): a value out of range is exit 2, before any run."""
    for argv in (["bench", "kinematics", "--samples", value], ["bench", "loop", "--seconds", value]):
        try:
            ok = float(value)
        except ValueError:
            ok = None
        within = ok is not None and np.isfinite(ok) and (
            (argv[2] == "--samples" and ok.is_integer() and 1 <= ok <= 1e6)
            or (argv[2] == "--seconds" and 0 < ok <= 3600))
        if within:
            continue            # a real benchmark run: not for the suite
        code, _, err = pkm(argv)
        assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err[:1000]


@pytest.mark.parametrize("argv", [
    ["ik", "--robot", "delta", "--pose", "0", "0", "1e155"],
    ["ik", "--robot", "palida", "--pose", "0", "0", "-0.85", "0", "0", "0", "--twist", "1e300", "0", "0", "0", "0",
     "0"],
    ["ik", "--robot", "palida", "--pose", "0", "0", "-0.85", "0", "0", "0", "--twist", "0", "0", "0", "0", "0", "0",
     "--accel", "1e300", "0", "0", "0", "0", "0"],
    ["id", "--robot", "palida", "--pose", "0", "0", "-0.85", "0", "0", "0", "--accel", "1e308", "0", "0", "0", "0",
     "0"],
    ["id", "--robot", "stewart", "--pose", "10", "0", "1.2", "0", "0", "0"],
    ["id", "--robot", "stewart", "--pose", "0", "0", "1.2", "0", "0", "1.5708"],
    ["id", "--robot", "stewart", "--pose", "0", "0", "1.2", "0", "0", "1.5708", "--method", "newton_euler"],
    ["workspace", "--robot", "delta", "--fixed", "0", "0", "nan"],
    ["workspace", "--robot", "delta", "--scale", "inf"],
    ["workspace", "--robot", "delta", "--resolution", "100000"],
    ["workspace", "--robot", "delta", "--plot", "/no/such/dir/ws.png"],
    ["workspace", "--robot", "delta", "--plot", "ws.unknown"],
    ["jacobian", "--robot", "delta", "--pose", "0", "0", "1e300"],
    ["info", "--robot", "x" * 5000],
    ["bench", "kinematics", "--samples", "0"],
    ["bench", "kinematics", "--samples", "-5"],
])
def test_examples_from_the_issue(argv, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = pkm(argv)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and len(err) < 1000, err[:1000]
    assert not any(tmp_path.iterdir())          # refused before anything was computed or written
