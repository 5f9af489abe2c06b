"""The `pkm` command line: every subcommand, JSON output, units, and errors."""

import argparse
import os
import signal
import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pkm_control.cli import NEGATIVE_NUMBER, build_parser, main
from pkm_control.errors import InvalidInputError
from pkm_control.kinematics import robot_kinematics


def run(capsys, *argv):
    """(exit status, stdout, stderr) of `pkm argv`, argparse's exits included."""
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


def subcommands():
    (sub,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return list(sub.choices)


# which of the shared flags each subcommand offers: only where they do something (bringup: --json with
# --exit-when-done, its own option)
COMMON_FLAGS = {"info": {"--json", "--deg"}, "ik": {"--json", "--deg"}, "fk": {"--json", "--deg"},
                "jacobian": {"--json", "--deg"}, "workspace": {"--json", "--deg"}, "id": {"--json", "--deg"},
                "reproduce": {"--json"}, "bench": {"--json"}, "bringup": {"--json"}, "tour": {"--json", "--deg"},
                "demo": {"--json"}, "fuzz": {"--json"}, "animate": set(), "view": {"--deg"}, "topics": {"--json"},
                "echo": {"--json"}, "param": set(), "call": {"--json"}, "goal": {"--json"},   # param: on get / set
                "perturb": {"--json"}, "excite": {"--json"}, "identify": {"--json"}, "record": {"--json"},
                "stress": set()}   # stress: on its startup subcommand


def test_help_at_every_level_is_plain_and_offers_only_working_flags(capsys):
    assert set(subcommands()) == set(COMMON_FLAGS)
    for argv in [[]] + [[name] for name in subcommands()]:
        code, out, _ = run(capsys, *argv, "--help")
        assert code == 0 and "usage: pkm" in out
        assert "``" not in out, f"RST markup in pkm {' '.join(argv)} --help"
        if argv:
            offered = {flag for flag in ("--json", "--deg") if f"[{flag}]" in out}
            assert offered == COMMON_FLAGS[argv[0]], argv[0]


@pytest.mark.parametrize("text", ["-4.5e-05", "1E3", ".5", "-0", "-.5", "+1", "-1.", "-2E+3", "-1_000.5", "7"])
def test_every_float_syntax_is_a_value(text):
    args = build_parser().parse_args(["ik", "--robot", "stewart", "--pose", text, text, "--twist", text])
    assert args.pose == [float(text)] * 2 and args.twist == [float(text)]


def test_negative_exponent_pose_from_the_bug_report(capsys):
    x = ["-0.003", "0.003", "1.2", "-0.002", "-4.5e-05", "-0.0005"]
    code, out, err = run(capsys, "ik", "--robot", "stewart", "--pose", *x, "--json")
    assert code == 0, err
    joints = {j["name"]: j["position"] for j in json.loads(out)["joints"]}
    platform = [joints[f"platform_{k}"] for k in ("x", "y", "z", "roll", "pitch", "yaw")]
    np.testing.assert_allclose(platform, [float(v) for v in x], rtol=0, atol=1e-15)  # angles via R


@pytest.mark.parametrize("text", ["nan", "NaN", "-nan", "inf", "-inf", "+inf", "infinity", "-Infinity", "INF"])
@pytest.mark.parametrize("argv", [["ik", "--robot", "stewart", "--pose", "0", "0", "1"],
                                  ["fk", "--robot", "delta", "--joints", "0.3", "0.3"],
                                  ["workspace", "--robot", "delta", "--scale"],
                                  ["id", "--robot", "delta", "--pose", "0", "0", "-0.3", "--wrench", "0", "0", "0", "0",
                                   "0"],
                                  ["bench", "kinematics", "--samples"],
                                  ["bringup", "--duration"],
                                  ["demo", "--radius"],
                                  ["animate", "--csv", "run.csv", "--fps"],
                                  ["view", "--robot", "palida", "--pose"]], ids=lambda argv: argv[0])
def test_nan_and_inf_are_refused_naming_the_option(capsys, argv, text):
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(argv + [text])  # parsing only: nothing starts even if the check were lost
    err = capsys.readouterr().err
    option = [a for a in argv if a.startswith("--")][-1]
    assert exc.value.code == 2 and err.count("\n") == 1 and f"argument {option}:" in err and repr(text) in err


FORMATS = [repr, "%e".__mod__, "%E".__mod__, "%g".__mod__]


@settings(deadline=None)  # number of examples: the active hypothesis profile
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=6), st.sampled_from(FORMATS))
def test_random_floats_round_trip_through_the_parser(values, fmt):
    texts = [fmt(v) for v in values]
    for argv in (["ik", "--robot", "stewart", "--pose"], ["fk", "--robot", "delta", "--joints"],
                 ["workspace", "--robot", "delta", "--fixed"]):
        args = build_parser().parse_args(argv + texts + ["--json"])
        parsed = getattr(args, argv[-1][2:])
        assert parsed == [float(t) for t in texts] and args.json
        if fmt is repr:
            assert parsed == values


# run() empties capsys after each call, so sharing the fixture between examples is safe
@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.floats(-0.02, 0.02), min_size=3, max_size=3), st.sampled_from(FORMATS))
def test_random_floats_round_trip_through_ik_json(capsys, offset, fmt):
    texts = [fmt(h + o) for h, o in zip((0.0, 0.0, -0.3), offset)]
    code, out, err = run(capsys, "ik", "--robot", "delta", "--pose", *texts, "--json")
    assert code == 0, err
    joints = {j["name"]: j["position"] for j in json.loads(out)["joints"]}
    assert [joints[f"platform_{k}"] for k in "xyz"] == [float(t) for t in texts]


@settings(max_examples=2000, deadline=None)  # a regex match per example: 2000 cost ~1 s in any profile
@given(st.text(alphabet="0123456789\u0663\uff11._eE+-infatyINFATY", max_size=12))
def test_negative_number_matcher_agrees_with_float(tail):
    text = "-" + tail
    try:
        float(text)
        number = True
    except ValueError:
        number = False
    assert bool(NEGATIVE_NUMBER.match(text)) == number, text


def test_info_lists_robots_and_describes_one(capsys):
    code, out, _ = run(capsys, "info", "--json")
    robots = json.loads(out)["robots"]
    assert code == 0 and {"stewart", "palida", "lopes", "delta", "planar_redundant"} <= set(robots)
    assert "3-6" in robots["stewart"] and "nonredundant" in robots["planar_redundant"]
    code, out, _ = run(capsys, "info", "--robot", "stewart", "--json")
    info = json.loads(out)
    assert info["task_coordinates"] == ["x", "y", "z", "roll", "pitch", "yaw"] and len(info["actuated_joints"]) == 6
    code, out, _ = run(capsys, "info", "--robot", "delta")
    assert code == 0 and "x y z" in out


def test_ik_fk_jacobian_round_trip_through_json(capsys):
    kin = robot_kinematics("stewart", None)
    home = np.asarray(kin.model.config["home"], float)
    x = home + np.array([0.01, -0.02, 0.01, 0.05, -0.03, 0.1])
    code, out, _ = run(capsys, "ik", "--robot", "stewart", "--pose", *map(str, x), "--json")
    ik = json.loads(out)
    assert code == 0 and ik["closure_residual"] <= 1e-12
    qa = [j["position"] for j in ik["joints"] if j["actuated"]]
    assert len(qa) == 6
    code, out, _ = run(capsys, "fk", "--robot", "stewart", "--joints", *map(str, qa), "--json")
    fk = json.loads(out)
    np.testing.assert_allclose([fk["pose"][k] for k in kin.task.names], x, atol=1e-9)
    code, out, _ = run(capsys, "jacobian", "--robot", "stewart", "--pose", *map(str, x), "--json")
    jac = json.loads(out)
    np.testing.assert_allclose(jac["jacobian"], kin.jacobian(kin.task.pose(x)), rtol=1e-12)
    assert jac["singularity"]["classification"] == "regular"


def test_degrees_in_and_out(capsys):
    kin = robot_kinematics("stewart", None)
    home = np.asarray(kin.model.config["home"], float)
    x = home + np.array([0, 0, 0, 0.1, 0.0, 0.2])
    _, rad, _ = run(capsys, "ik", "--robot", "stewart", "--pose", *map(str, x), "--json")
    xd = np.concatenate([x[:3], np.degrees(x[3:])])
    _, deg, _ = run(capsys, "ik", "--robot", "stewart", "--pose", *map(str, xd), "--json", "--deg")
    for jr, jd in zip(json.loads(rad)["joints"], json.loads(deg)["joints"]):
        revolute = not jr["actuated"] and jr["name"] not in ("platform_x", "platform_y", "platform_z")
        expected = np.degrees(jr["position"]) if revolute else jr["position"]
        assert jd["position"] == pytest.approx(expected, rel=1e-12, abs=1e-12)


def test_errors_are_reported_not_raised(capsys):
    code, _, err = run(capsys, "ik", "--robot", "stewart", "--pose", "0", "0", "100", "0", "0", "0")
    assert code == 2 and ("UnreachablePoseError" in err or "JointLimitError" in err)
    code, _, err = run(capsys, "ik", "--robot", "nosuchrobot", "--pose", "0", "0", "1")
    assert code == 2 and "nosuchrobot" in err
    code, _, err = run(capsys, "ik", "--robot", "stewart", "--pose", "0", "0", "1")
    assert code == 2 and "--pose needs 6 values (x y z roll pitch yaw), got 3" in err


MALFORMED = [
    [], ["nosuchcommand"],
    ["info", "--robot", "nosuchrobot"], ["info", "--variant", "3-6"],
    ["info", "--robot", "stewart", "--variant", "9-9"],
    ["ik", "--robot", "stewart", "--pose", "0", "0", "1"], ["ik", "--robot", "stewart", "--pose", "0", "0", "x"],
    ["ik", "--robot", "stewart", "--pose", "0", "0", "1.2", "0", "0", "0", "--twist", "1"],
    ["ik", "--robot", "stewart", "--pose", "0", "0", "1.2", "0", "0", "0", "--twist", *"000000", "--accel", "1"],
    ["ik", "--pose", "0", "0", "1"],
    ["fk", "--robot", "delta", "--joints", "0.3"], ["fk", "--robot", "delta", "--joints", *["0.3"] * 3, "--guess", "0"],
    ["jacobian", "--robot", "delta", "--pose", "0", "0"],
    ["workspace", "--robot", "delta", "--vary", "q"], ["workspace", "--robot", "delta", "--fixed", "0"],
    ["workspace", "--robot", "delta", "--resolution", "0"], ["workspace", "--robot", "delta", "--resolution", "4.5"],
    ["workspace", "--robot", "delta", "--resolution", "3", "--plot", "/nonexistent/dir/ws.png", "--json"],
    ["id", "--robot", "delta", "--pose", "0", "0", "-0.3", "--method", "nosuchmethod"],
    ["id", "--robot", "delta", "--pose", "0", "0", "-0.3", "--method", "virtual_work", "--wrench", *"000000"],
    ["id", "--robot", "delta", "--pose", "0", "0", "-0.3", "--wrench", "0", "0"],
    ["id", "--robot", "delta", "--pose", "0", "0", "-0.3", "--accel", "1"],
    ["reproduce", "nosuch"], ["reproduce", "lopes", "--out", "/proc/no/such/dir"], ["reproduce", "lopes", "--quick"],
    ["bench", "nosuch"], ["bench", "kinematics", "--samples", "-5"], ["bench", "kinematics", "--robot", "nosuchrobot"],
    ["bringup", "--robot", "nosuchrobot", "--dry-run"], ["bringup", "--variant", "9-9", "--dry-run"],
    ["bringup", "--deg"], ["tour", "--robot", "delta"], ["demo", "--laps", "x"], ["demo", "--deg"],
]


@pytest.mark.parametrize("argv", MALFORMED, ids=" ".join)
def test_malformed_input_exits_2_with_one_line(capsys, argv):
    code, _, err = run(capsys, *argv)
    assert code == 2 and err.count("\n") == 1 and err.startswith("pkm"), err


def test_errors_under_deg_show_the_degrees_typed(capsys):
    code, _, err = run(capsys, "ik", "--robot", "stewart", "--pose", "0", "0", "1.2", "80", "0", "0", "--deg")
    assert code == 2 and err.count("\n") == 1
    assert "angles in degrees: --pose 0 0 1.2 80 0 0" in err and "m and rad" in err
    code, _, err = run(capsys, "ik", "--robot", "stewart", "--pose", "0", "0", "1.2", "80", "0", "0")
    assert code == 2 and "degrees" not in err


def test_workspace_with_plot(capsys, tmp_path):
    png = tmp_path / "ws.png"
    code, out, _ = run(capsys, "workspace", "--robot", "delta", "--resolution", "7", "--plot", str(png), "--json")
    res = json.loads(out)
    assert code == 0 and res["samples"] == 49 and 0 < res["reachable_fraction"] <= 1
    assert png.stat().st_size > 1000 and res["plot"] == str(png)


def test_workspace_plot_bare_name_goes_to_results(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, "workspace", "--robot", "delta", "--resolution", "5", "--plot", "ws.pdf", "--json")
    assert code == 0 and json.loads(out)["plot"] == "results/ws.pdf"
    assert (tmp_path / "results" / "ws.pdf").stat().st_size > 1000 and not (tmp_path / "ws.pdf").exists()


def test_workspace_plot_path_errors_are_one_line(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, "workspace", "--robot", "delta", "--resolution", "5", "--plot", "nodir/ws.png")
    assert code == 2 and err.count("\n") == 1 and "nodir/ does not exist" in err
    code, _, err = run(capsys, "workspace", "--robot", "delta", "--resolution", "5", "--plot", "ws.xyz")
    assert code == 2 and err.count("\n") == 1 and "'.xyz'" in err and " png " in err and " pdf " in err
    assert not any(tmp_path.iterdir())                    # nothing written, no results/ created


def test_tour_every_robot_ok(capsys):
    code, out, _ = run(capsys, "tour", "--json")
    doc = json.loads(out)                                  # benchmarks.report: the machine block, then the rows
    rows = doc["rows"]
    assert set(doc["machine"]) == {"host", "cpu", "cores", "python", "date"} and doc["command"]
    assert code == 0 and {r["robot"] for r in rows} >= {"stewart", "palida", "lopes", "delta", "planar_redundant"}
    homes = [r for r in rows if r["pose"] == "home"]
    assert all(r["status"] == "ok" and r["singularity"] == "regular" and r["fk_error"] <= 1e-10 for r in homes)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_stop_signal_is_not_lost_when_its_exception_is_caught_on_the_way(signum):
    """`pkm bringup` and `pkm record`: the signal raises Stopped where the main thread is; when code on the way
    catches it (a library's broad except), the loop's next StopRequest.check() raises it again. The handlers
    before are back after."""
    from pkm_control.graph.signals import Stopped, signals_raise_stopped

    before = signal.getsignal(signum)
    with signals_raise_stopped() as stop:
        stop.check()                                  # nothing yet
        caught = None
        try:
            os.kill(os.getpid(), signum)              # the handler runs before the next bytecode here
        except BaseException as exc:                  # a library that catches everything
            caught = exc
        assert isinstance(caught, Stopped)
        with pytest.raises(Stopped) as again:
            stop.check()
        assert again.value.args == (signal.Signals(signum).name,)
    assert signal.getsignal(signum) is before


def test_a_signal_in_a_held_section_or_during_the_stop_never_cuts_it():
    """Issue 22 §5 / issue 23 §1: a signal while bringup starts a node (StopRequest.held) lets the section end,
    then raises Stopped; a signal once the stop has begun (after the first, or with ``stopping`` set for another
    reason) raises nothing and goes to ``escalate`` (bringup: SIGKILL to the nodes still running)."""
    from pkm_control.graph.signals import Stopped, signals_raise_stopped

    with signals_raise_stopped() as stop:
        ended = False
        with pytest.raises(Stopped):
            with stop.held():
                os.kill(os.getpid(), signal.SIGTERM)
                ended = True                                 # the node started is in the list
        assert ended and stop.signal == "SIGTERM"
        escalated = []
        stop.escalate = escalated.append
        os.kill(os.getpid(), signal.SIGINT)                  # during the stop: no exception
        os.kill(os.getpid(), signal.SIGHUP)
        assert escalated == ["SIGINT", "SIGHUP"] and stop.again == 2
    with signals_raise_stopped() as stop:                    # a stop for another reason (a node exited)
        escalated = []
        stop.stopping, stop.escalate = True, escalated.append
        os.kill(os.getpid(), signal.SIGTERM)
        assert escalated == ["SIGTERM"] and stop.signal is None


def test_stress_options_are_built_and_checked_at_the_command_line():
    """`pkm stress startup`'s namespace becomes StressOptions once, in cli; absurd values are refused there."""
    from pkm_control.benchmarks.stress import StressOptions
    from pkm_control.cli.benchmarks import stress_options

    def options(*argv):
        return stress_options(build_parser().parse_args(["stress", "startup", *argv]))

    assert options() == StressOptions()       # the command line's defaults are the options' own
    assert options("--set", "a=1", "--set", "b=2").overrides == ("a=1", "b=2")
    for argv, refusal in ((["--runs", "0"], "--runs must be at least 1"),
                          (["--max-startup", "0"], "--max-startup must be more than 0 s"),
                          (["--timeout", "-1"], "--timeout must be more than 0 s")):
        with pytest.raises(InvalidInputError, match=refusal):
            options(*argv)


def test_demo_options_are_built_and_checked_at_the_command_line():
    """`pkm demo`'s namespace becomes DemoOptions (and DeburringOptions with --deburring) once, in cli; absurd values
    are refused there, before any graph starts."""
    from pkm_control.benchmarks.deburring import DeburringOptions
    from pkm_control.benchmarks.demo import DemoOptions
    from pkm_control.cli.benchmarks import deburring_options, demo_options

    def parsed(*argv):
        return build_parser().parse_args(["demo", *argv])

    assert demo_options(parsed()) == DemoOptions() and deburring_options(parsed()) == DeburringOptions()
    assert demo_options(parsed("--no-animations", "--runs", "pd")) == DemoOptions(animations=False, runs=("pd",))
    with pytest.raises(InvalidInputError, match="--timeout must be more than 0 s"):
        demo_options(parsed("--timeout", "0"))
    with pytest.raises(InvalidInputError, match="--force must be in"):
        deburring_options(parsed("--deburring", "--force", "500"))
