"""Recording the live graph into a rosbag2 (`pkm bringup --record`, `pkm record`): every control period's sample.

The graph runs in lockstep in its own processes on the test's domain (PKM_TEST_ROS_DOMAIN_ID); every wait is on an
event (a line of output, a process's end, a goal's answer) whose time limit only keeps a broken run from hanging.
The expected samples are the control period's grid over the goal's own span (from the run's JSON summary), and
the measured positions of the bag are checked against the simulated robot's ground truth recorded beside them.
"""

import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("rclpy")

from pkm_control.identification.recording import load_measured_run  # noqa: E402
from pkm_control.identification.runs import load_run, message_counts, open_bag  # noqa: E402

pytestmark = [pytest.mark.ros, pytest.mark.slow]
DOMAIN = os.environ.get("PKM_TEST_ROS_DOMAIN_ID", "148")
RATE = 2000.0           # Hz: palida's control rate (config/controllers.yaml)
GOAL = "{type: point_to_point, goal: [0.01, 0.0, -0.85, 0, 0, 0.01], duration: 0.1}"
WAIT = 600              # s (wall): only a broken run reaches it


def pkm(*argv, **kw):
    env = dict(os.environ, ROS_DOMAIN_ID=DOMAIN, PYTHONUNBUFFERED="1")
    return subprocess.Popen([sys.executable, "-m", "pkm_control.cli", *argv], stdout=subprocess.PIPE, text=True,
                            env=env, **kw)


def finish(p, timeout=WAIT):
    """p's output; p is killed on a timeout (no graph left running on the domain)."""
    try:
        return p.communicate(timeout=timeout)[0]
    except subprocess.TimeoutExpired:
        p.kill()
        raise


def grid(t):
    """Sample times as integer control periods."""
    k = np.round(t * RATE)
    np.testing.assert_allclose(t * RATE, k, atol=1e-6)
    return k.astype(int)


def test_bringup_record_has_every_control_period(tmp_path):
    bag = tmp_path / "run"
    p = pkm("bringup", "--robot", "palida", "--goal", GOAL, "--exit-when-done", "--json", "--record", str(bag),
            "--record-storage", "mcap", "--set", "lockstep_timeout=60", stderr=subprocess.DEVNULL)
    out = finish(p)
    assert p.returncode == 0, out[-3000:]
    summary = json.loads(out)
    assert summary["goal_status"] == "finished" and summary["bag"]["/joint_states"]["missing_periods"] == 0
    run = load_measured_run(bag)           # the robot from the bag's /robot_description (or diagnostics)
    assert run.robot == "palida"
    k = grid(run.t)
    # from the run's first period (the lockstep start waits for the bag) to the goal's end, none missing
    assert k[0] == 0 and k[-1] >= round(summary["end"] * RATE)
    np.testing.assert_array_equal(np.diff(k), 1)
    # the measured positions are the simulated robot's exact ones (no encoder quantization by default; the state
    # estimate's forward kinematics rounds them by ~1e-13 m). The ground truth's time 0 is only the state offered
    # before the run (it may precede the gate's match); from the first step on it has every period
    truth = load_run(bag)
    assert truth.measured_from == "/hardware/ground_truth/joint_trajectory"
    truth_k = grid(truth.t)
    # the ground truth comes in chunks of 10 samples: the last, partial one may not be published when the run ends
    common = np.flatnonzero(k <= truth_k[-1])[1:]
    assert len(k) - 1 - len(common) < 10
    assert np.isin(k[common], truth_k).all()
    at = np.searchsorted(truth_k, k[common])
    np.testing.assert_allclose(run.position[common], truth.q[at][:, truth.kinematics.model.actuated_idx], rtol=0,
                               atol=1e-9)
    assert np.abs(run.effort).max() > 1.0          # the drives' forces, not zeros


def test_pkm_record_attached_to_a_running_graph(tmp_path):
    """`pkm record --until-done` on a running graph: joint_controller publishes every period and keeps pace with the
    recorder while it records, and its state_publish_rate and wait_for_recorder are back afterwards; the bag stops at
    the goal's end."""
    graph = pkm("bringup", "--robot", "palida", "--set", "lockstep_timeout=60", stderr=subprocess.STDOUT)
    try:
        bag = tmp_path / "attached"
        rec = pkm("record", "--output", str(bag), "--until-done", "--json", "--timeout", "300",
                  stderr=subprocess.PIPE)
        said = []
        for line in iter(rec.stderr.readline, ""):   # recording from here on
            said.append(line)
            if "every period" in line or "not every control period" in line:
                break
        assert "publishes /joint_states every period (2000 Hz)" in line, line
        # the goal once the bag has /joint_states: a recorder whose subscription matched after the goal's end (slow
        # discovery on a loaded machine) would wait for a goal end it never sees
        for line in iter(rec.stderr.readline, ""):
            said.append(line)
            if "recording /joint_states from sim time" in line:
                break
        assert "recording /joint_states from sim time" in line, line
        # the lockstep loop keeps pace with the recorder (a recorder that falls behind on a loaded machine loses
        # nothing: Fast DDS holds 5000 samples per reader); CI once lost 236 samples here without it
        assert any("keeps pace with the recorder" in x for x in said), said
        goal = pkm("goal", GOAL, "--timeout", "300")
        assert "goal accepted" in finish(goal)
        out = finish(rec)
        assert rec.returncode == 0, out
        summary = json.loads(out)
        assert summary["goal_status"] == "finished"
        assert summary["/joint_states"]["missing_periods"] == 0 and summary["/joint_states"]["samples"] > 200
        k = grid(load_measured_run(bag).t)
        np.testing.assert_array_equal(np.diff(k), 1)
        back = pkm("param", "get", "/joint_controller", "state_publish_rate", "--timeout", "300")
        assert float(finish(back)) == 250.0
        back = pkm("param", "get", "/joint_controller", "wait_for_recorder", "--timeout", "300")
        assert finish(back).strip() == "false"
        # Ctrl-C: the bag is closed (metadata written, readable), the rate is back
        rec = pkm("record", "--output", str(tmp_path / "interrupted"), "--topics", "/joint_states", "--timeout",
                  "300", "--json", stderr=subprocess.PIPE)
        for line in iter(rec.stderr.readline, ""):
            if "every period" in line:
                break
        rec.send_signal(signal.SIGINT)
        out = finish(rec)
        assert rec.returncode == 0, out
        with open_bag(tmp_path / "interrupted") as (reader, _):   # every message written is in the bag
            assert message_counts(reader) == json.loads(out)["messages"]
        for name, launched in (("state_publish_rate", "250.0"), ("wait_for_recorder", "false")):
            back = pkm("param", "get", "/joint_controller", name, "--timeout", "300")
            assert finish(back).strip() == launched, name
    finally:
        graph.send_signal(signal.SIGINT)
        finish(graph)

