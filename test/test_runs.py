"""Recorded runs (pkm_control.identification.runs): rosbag2 and joints-CSV round trips, and bad input.

The bags are written here with rosbags (no ROS): the expected arrays are the ones written, every
tree joint from the analytic IK of known platform poses, so a loaded run must give them back.
"""

from __future__ import annotations

import numpy as np
import pytest

from pkm_control.description.robots import robot_urdf
from pkm_control.errors import InvalidInputError
from pkm_control.kinematics import robot_kinematics
from pkm_control.identification.runs import MAX_SAMPLES, load_run, write_joints_csv

ROBOTS = [("stewart", "6-6"), ("stewart", "3-6"), ("palida", None), ("lopes", None), ("delta", None),
          ("planar_redundant", "redundant"), ("planar_redundant", "nonredundant")]


def tree_motion(kin, n, scale=1.0):
    """(t (n,), q (n, nq)): every tree joint along a small motion about home, from the analytic IK."""
    home = np.asarray(kin.model.config["home"], float)
    t = 0.5 + 0.002 * np.arange(n)
    d = np.zeros(kin.task.dim)
    d[:min(3, len(d))] = [0.01, -0.008, 0.006][:min(3, len(d))]
    coords = home + scale * np.outer(np.sin(2 * np.pi * (t - t[0]) / (0.002 * n)), d)
    poses = [kin.task.pose(c) for c in coords]
    q, ok = kin.inverse_batch(np.array([p.position for p in poses]), np.array([p.rotation for p in poses]))
    assert ok.all()
    return t, q


def write_bag(path, kin, truth=None, states=None, desired=None, storage="sqlite3", extra_topics=(), diagnostics=None,
              description=None):
    """A rosbag2 with the ground truth (JointTrajectory chunks of 10, joint order reversed), /joint_states and
    /desired_joint_states (one JointState per sample); each argument (t, q) or None. diagnostics: key-values
    of a joint_controller status on /diagnostics; description: a URDF on /robot_description."""
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore

    ts = get_typestore(Stores.ROS2_KILTED)
    T = ts.types
    names = list(kin.model.joint_names)

    def stamp(t):
        ns = int(round(t * 1e9))
        return T["builtin_interfaces/msg/Time"](sec=ns // 10**9, nanosec=ns % 10**9)

    def header(t):
        return T["std_msgs/msg/Header"](stamp=stamp(t), frame_id="")

    plugin = StoragePlugin.MCAP if storage == "mcap" else StoragePlugin.SQLITE3
    with Writer(path, version=9, storage_plugin=plugin) as w:
        if truth is not None:
            c = w.add_connection("/hardware/ground_truth/joint_trajectory", "trajectory_msgs/msg/JointTrajectory",
                                 typestore=ts)
            t, q = truth
            for k in range(0, len(t), 10):
                pts = [T["trajectory_msgs/msg/JointTrajectoryPoint"](
                    positions=q[j, ::-1].copy(), velocities=np.zeros(0), accelerations=np.zeros(0),
                    effort=np.zeros(0), time_from_start=T["builtin_interfaces/msg/Duration"](
                        sec=0, nanosec=int(round((t[j] - t[k]) * 1e9)))) for j in range(k, min(k + 10, len(t)))]
                msg = T["trajectory_msgs/msg/JointTrajectory"](header=header(t[k]), joint_names=names[::-1], points=pts)
                w.write(c, int(t[k] * 1e9), ts.serialize_cdr(msg, c.msgtype))
        for topic, data in (("/joint_states", states), ("/desired_joint_states", desired)):
            if data is None:
                continue
            c = w.add_connection(topic, "sensor_msgs/msg/JointState", typestore=ts)
            for tk, qk in zip(*data):
                msg = T["sensor_msgs/msg/JointState"](header=header(tk), name=names, position=np.asarray(qk, float),
                                                      velocity=np.zeros(0), effort=np.zeros(0))
                w.write(c, int(tk * 1e9), ts.serialize_cdr(msg, c.msgtype))
        if diagnostics is not None:
            c = w.add_connection("/diagnostics", "diagnostic_msgs/msg/DiagnosticArray", typestore=ts)
            kv = [T["diagnostic_msgs/msg/KeyValue"](key=k, value=v) for k, v in diagnostics.items()]
            st = [T["diagnostic_msgs/msg/DiagnosticStatus"](level=0, name=name, message="ok", hardware_id="", values=kv)
                  for name in ("/computed_force", "/joint_controller")]
            msg = T["diagnostic_msgs/msg/DiagnosticArray"](header=header(0.1), status=st)
            w.write(c, 10**8, ts.serialize_cdr(msg, c.msgtype))
        strings = [(topic, "x") for topic in extra_topics]
        for topic, data in strings + ([("/robot_description", description)] if description is not None else []):
            c = w.add_connection(topic, "std_msgs/msg/String", typestore=ts)
            w.write(c, 1, ts.serialize_cdr(T["std_msgs/msg/String"](data=data), c.msgtype))


def test_bag_round_trip_ground_truth_and_desired(tmp_path):
    kin = robot_kinematics("palida")
    t, q = tree_motion(kin, 25)
    _, qd = tree_motion(kin, 25, scale=1.2)
    bag = tmp_path / "run"
    # desired at every other sample: the loader interpolates linearly onto the measured times
    write_bag(bag, kin, truth=(t, q), desired=(t[::2], qd[::2]),
              diagnostics={"robot": "palida", "variant": "", "controller": "cf_rb"})
    run = load_run(bag)                          # robot and controller from joint_controller's diagnostics
    assert (run.robot, run.measured_from) == ("palida", "/hardware/ground_truth/joint_trajectory")
    assert run.joint_names == kin.model.joint_names
    np.testing.assert_allclose(run.t, t, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(run.q, q)
    np.testing.assert_array_equal(run.q_desired[::2], qd[::2])
    np.testing.assert_allclose(run.q_desired[1:-1:2], 0.5 * (qd[0:-2:2] + qd[2::2]), atol=1e-12)
    act = kin.model.actuated_idx
    np.testing.assert_allclose(run.errors[::2], qd[::2, act] - q[::2, act], atol=1e-15)
    assert run.controller == "cf_rb"
    # without the diagnostics the joint names fit palida and stewart: the robot must be named
    write_bag(tmp_path / "anonymous", kin, truth=(t, q))
    with pytest.raises(InvalidInputError, match=r"fit palida .*stewart .*name the robot"):
        load_run(tmp_path / "anonymous")
    run = load_run(tmp_path / "anonymous", robot="palida")
    assert run.controller is None
    np.testing.assert_array_equal(run.q, q)


@pytest.mark.parametrize("robot,variant", [("palida", ""), ("stewart", "3-6"), ("stewart", "6-6")])
def test_bag_names_its_robot_by_its_robot_description(tmp_path, robot, variant):
    """No diagnostics (a run shorter than their period): the recorded URDF names the robot and, for a robot with
    variants, the variant whose URDF it is exactly; an edited URDF of such a robot names nothing."""
    kin = robot_kinematics(robot, variant)
    t, q = tree_motion(kin, 20)
    urdf = robot_urdf(robot, variant)
    write_bag(tmp_path / "run", kin, truth=(t, q), description=urdf)
    run = load_run(tmp_path / "run")
    assert (run.robot, run.kinematics.model.variant) == (robot, variant)
    edited = urdf.replace("<robot ", "<!-- edited --><robot ", 1)
    write_bag(tmp_path / "edited", kin, truth=(t, q), description=edited)
    if variant:
        with pytest.raises(InvalidInputError, match="name the robot"):
            load_run(tmp_path / "edited")
    else:
        assert load_run(tmp_path / "edited").robot == robot
    write_bag(tmp_path / "foreign", kin, truth=(t, q), description="<robot name='my_hexapod'/>")
    with pytest.raises(InvalidInputError, match="name the robot"):
        load_run(tmp_path / "foreign")


@pytest.mark.parametrize("storage", ["sqlite3", "mcap"])
def test_bag_with_joint_states_only(tmp_path, storage):
    kin = robot_kinematics("delta")
    t, q = tree_motion(kin, 12)
    write_bag(tmp_path / "b", kin, states=(t, q), storage=storage)
    run = load_run(tmp_path / "b")          # the delta's joint names are its own
    assert run.robot == "delta" and run.measured_from == "/joint_states"
    assert run.q_desired is None and run.errors is None
    np.testing.assert_array_equal(run.q, q)
    # the storage file itself names the bag too
    f = next((tmp_path / "b").glob("*.mcap" if storage == "mcap" else "*.db3"))
    np.testing.assert_array_equal(load_run(f).q, q)


def test_bag_errors(tmp_path):
    kin = robot_kinematics("delta")
    t, q = tree_motion(kin, 6)
    write_bag(tmp_path / "none", kin, extra_topics=("/clock_text",))
    with pytest.raises(InvalidInputError, match=r"/hardware/ground_truth/joint_trajectory.*/joint_states.*"
                                                r"its topics: \['/clock_text'\]"):
        load_run(tmp_path / "none")
    bad = q.copy()
    bad[3, 2] = np.nan
    write_bag(tmp_path / "nan", kin, states=(t, bad))
    with pytest.raises(InvalidInputError, match=r"/joint_states message 3 \(t = .*\): position not finite"):
        load_run(tmp_path / "nan")
    with pytest.raises(InvalidInputError, match="no such file"):
        load_run(tmp_path / "missing")
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "metadata.yaml").write_text("not: a bag\n")
    with pytest.raises(InvalidInputError, match="cannot be read as a rosbag2"):
        load_run(tmp_path / "junk")
    with pytest.raises(InvalidInputError, match="not joints of robot 'palida'"):
        write_bag(tmp_path / "ok", kin, states=(t, q))
        load_run(tmp_path / "ok", robot="palida")


def test_bag_message_with_mismatched_sizes(tmp_path):
    kin = robot_kinematics("delta")
    t, q = tree_motion(kin, 4)
    write_bag(tmp_path / "b", kin, states=(t, [qk[:-1] for qk in q]))
    with pytest.raises(InvalidInputError, match=f"message 0: {kin.model.nq - 1} positions for {kin.model.nq} joint"):
        load_run(tmp_path / "b")


@pytest.mark.parametrize("robot,variant", ROBOTS)
def test_csv_round_trip_every_robot(tmp_path, robot, variant):
    """Actuated + platform joints written -> every tree joint back (IK); actuated only -> the same tree (FK)."""
    kin = robot_kinematics(robot, variant)
    t, q = tree_motion(kin, 8)
    _, qd = tree_motion(kin, 8, scale=0.5)
    m = kin.model
    cols = list(m.actuated_joints) + list(m.platform_joints)
    idx = [m.joint_index[n] for n in cols]
    f = tmp_path / "run.csv"
    write_joints_csv(f, kin, "cf_rb", t, cols, q[:, idx], qd[:, idx])
    run = load_run(f)
    assert (run.robot, run.variant, run.controller) == (robot, m.variant, "cf_rb")
    np.testing.assert_allclose(run.q, q, atol=1e-10)
    np.testing.assert_allclose(run.q_desired, qd, atol=1e-10)
    np.testing.assert_allclose(run.errors, qd[:, m.actuated_idx] - q[:, m.actuated_idx], atol=1e-10)
    act = list(m.actuated_joints)
    write_joints_csv(f, kin, None, t, act, q[:, m.actuated_idx])
    run = load_run(f)
    assert run.controller is None and run.q_desired is None
    np.testing.assert_allclose(run.q, q, atol=1e-8)


def test_csv_errors(tmp_path):
    kin = robot_kinematics("palida")
    t, q = tree_motion(kin, 5)
    m = kin.model
    f = tmp_path / "r.csv"
    act = list(m.actuated_joints)
    write_joints_csv(f, kin, "pd", t, act, q[:, m.actuated_idx])
    lines = f.read_text().splitlines()

    def bad(text, match):
        f.write_text("\n".join(text) + "\n")
        with pytest.raises(InvalidInputError, match=match):
            load_run(f)

    bad(lines[:4] + ["0.51," + ",".join(["nan"] * 6)] + lines[5:], r"sample 2 \(t = 0.51 s\) is not finite")
    bad(lines[:3] + [lines[3] + ",1.0"], "sample 1 has 8 values, the header 7")
    bad(lines[:1] + [lines[1].replace("prismatic [m]", "prismatic [mm]", 1)] + lines[2:], r"column 1 .* is not")
    bad(lines[:1] + [lines[1].replace("leg1_prismatic [m]", "leg1_alpha [m]", 1)] + lines[2:],
        "joint leg1_alpha is in m, expected rad")
    bad(lines[:1] + [lines[1].replace(",q_leg6_prismatic [m]", "")] + [x.rsplit(",", 1)[0] for x in lines[2:]],
        r"missing actuated joints: \['leg6_prismatic'\]")
    bad(lines[:2] + [lines[3], lines[2]] + lines[4:], "times not strictly increasing at sample 1")
    bad(lines[:2] + ["0.5,1,2,x,4,5,6"], "sample 0: could not convert")
    bad(lines[:2], "no samples")
    bad(lines[1:], r"fit lopes .*, palida .*, stewart .*name the robot")   # no robot line: the names fit four
    with pytest.raises(InvalidInputError, match="no such file"):
        load_run(tmp_path / "nope.csv")
    with pytest.raises(InvalidInputError, match="expected a rosbag2"):
        (tmp_path / "x.txt").write_text("1")
        load_run(tmp_path / "x.txt")
    assert MAX_SAMPLES >= 10 * 3500          # a benchmark run at 2 kHz fits many times over


def test_core_does_not_import_rclpy():
    import subprocess
    import sys

    code = ("import sys, pkm_control.identification.runs as r, pathlib; r.load_run; "
            "import pkm_control.ros.messages; print('rclpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
