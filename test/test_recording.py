"""Recorded runs for the identification (identification.recording): rosbag2 round trips and bad bags.

The bags are written here with rosbags (no ROS); the arrays written are the expected ones, so a loaded run must
give them back exactly. The live graph's recording (every control period in the bag) is test_record.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_runs import tree_motion, write_bag

from pkm_control.errors import InvalidInputError
from pkm_control.identification.data import MeasuredRun
from pkm_control.identification.recording import (MIN_SAMPLES, bag_writer, load_measured_run, typestore,
                                                  write_measured_run)
from pkm_control.kinematics import robot_kinematics

ROBOTS = [("stewart", "6-6"), ("palida", None), ("lopes", None), ("delta", None), ("planar_redundant", "redundant")]


def measured(robot, variant=None, n=40, velocity=True, seed=0):
    kin = robot_kinematics(robot, variant)
    rng = np.random.default_rng(seed)
    t, q = tree_motion(kin, n)
    act = kin.model.actuated_idx
    m = kin.model.n_actuated
    return kin, MeasuredRun(robot, tuple(kin.model.actuated_joints), t, q[:, act], rng.normal(0, 50, (n, m)),
                            rng.normal(0, 0.1, (n, m)) if velocity else None, "test")


@pytest.mark.parametrize("storage", ["sqlite3", "mcap"])
@pytest.mark.parametrize("robot,variant", ROBOTS)
def test_round_trip(tmp_path, robot, variant, storage):
    kin, run = measured(robot, variant, velocity=robot != "delta")
    write_measured_run(tmp_path / "bag", run, storage=storage)
    back = load_measured_run(tmp_path / "bag", robot=robot, variant=variant)
    assert back.robot == robot and back.names == tuple(kin.model.actuated_joints)
    np.testing.assert_allclose(back.t, run.t, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(back.position, run.position)
    np.testing.assert_array_equal(back.effort, run.effort)
    if run.velocity is None:
        assert back.velocity is None
    else:
        np.testing.assert_array_equal(back.velocity, run.velocity)
    assert str(tmp_path / "bag") in back.source


def test_every_joint_in_another_order_and_the_robot_inferred(tmp_path):
    """A bag like the graph's: every tree joint, reversed, with efforts on the actuated ones only (others zero)."""
    kin = robot_kinematics("delta")
    t, q = tree_motion(kin, 40)
    names = list(kin.model.joint_names)[::-1]
    effort = np.zeros_like(q)
    effort[:, kin.model.actuated_idx] = np.arange(40 * kin.model.n_actuated).reshape(40, -1)
    ts = typestore()
    T = ts.types
    w = bag_writer(tmp_path / "b", "mcap")
    c = w.add_connection("/joint_states", "sensor_msgs/msg/JointState", typestore=ts)
    for k in range(40):
        ns = int(round(t[k] * 1e9))
        msg = T["sensor_msgs/msg/JointState"](
            header=T["std_msgs/msg/Header"](stamp=T["builtin_interfaces/msg/Time"](sec=ns // 10**9,
                                                                                  nanosec=ns % 10**9), frame_id=""),
            name=names, position=q[k, ::-1].copy(), velocity=np.zeros(0), effort=effort[k, ::-1].copy())
        w.write(c, ns, ts.serialize_cdr(msg, c.msgtype))
    w.close()
    run = load_measured_run(tmp_path / "b")           # the delta's joint names are its own
    assert run.robot == "delta" and run.velocity is None
    np.testing.assert_array_equal(run.position, q[:, kin.model.actuated_idx])
    np.testing.assert_array_equal(run.effort, effort[:, kin.model.actuated_idx])


def test_forces_from_the_command_topic(tmp_path):
    """No efforts on /joint_states: each sample takes the last command recorded before it (zero-order hold)."""
    kin = robot_kinematics("delta")
    n, m = 40, kin.model.n_actuated
    t, q = tree_motion(kin, n)
    act = kin.model.actuated_idx
    ts = typestore()
    T = ts.types
    w = bag_writer(tmp_path / "b")
    cs = w.add_connection("/joint_states", "sensor_msgs/msg/JointState", typestore=ts)
    cc = w.add_connection("/effort_controller/commands", "std_msgs/msg/Float64MultiArray", typestore=ts)
    forces = np.arange(n * m, dtype=float).reshape(n, m)
    base = 10**9
    for k in range(n):
        ns = int(round(t[k] * 1e9))
        msg = T["sensor_msgs/msg/JointState"](
            header=T["std_msgs/msg/Header"](stamp=T["builtin_interfaces/msg/Time"](sec=ns // 10**9,
                                                                                  nanosec=ns % 10**9), frame_id=""),
            name=list(kin.model.actuated_joints), position=q[k, act].copy(), velocity=np.zeros(0),
            effort=np.zeros(0))
        # recorded 1 ms apart (wall): state k, then the command computed from it (applied until state k + 1)
        w.write(cs, base + 10**6 * k, ts.serialize_cdr(msg, cs.msgtype))
        cmd = T["std_msgs/msg/Float64MultiArray"](layout=T["std_msgs/msg/MultiArrayLayout"](dim=[], data_offset=0),
                                                  data=forces[k])
        w.write(cc, base + 10**6 * k + 300_000, ts.serialize_cdr(cmd, cc.msgtype))
    w.close()
    run = load_measured_run(tmp_path / "b")
    # sample 0 comes before any command: dropped; sample k >= 1 measured with command k - 1 applied
    np.testing.assert_allclose(run.t, t[1:], atol=1e-12)
    np.testing.assert_array_equal(run.position, q[1:, act])
    np.testing.assert_array_equal(run.effort, forces[:-1])


def test_bad_bags(tmp_path):
    kin = robot_kinematics("delta")
    t, q = tree_motion(kin, 40)
    # no /joint_states: what is missing, and what is there
    write_bag(tmp_path / "truth_only", kin, truth=(t, q), extra_topics=("/chatter",))
    with pytest.raises(InvalidInputError, match=r"no message on /joint_states .*its topics: "
                                                r"/chatter \(1 messages\), /hardware/ground_truth/joint_trajectory "
                                                r"\(4 messages\)"):
        load_measured_run(tmp_path / "truth_only")
    # positions without efforts and no command topic
    write_bag(tmp_path / "no_effort", kin, states=(t, q))
    with pytest.raises(InvalidInputError, match=r"/joint_states has no efforts.*/<controller_name>/commands.*it has "
                                                r"none; its topics: /joint_states \(40 messages\)"):
        load_measured_run(tmp_path / "no_effort")
    # NaN at a known message
    _, run = measured("delta")
    position = run.position.copy()
    position[17, 1] = np.nan
    write_measured_run(tmp_path / "nan", MeasuredRun("delta", run.names, run.t, position, run.effort))
    with pytest.raises(InvalidInputError, match=r"/joint_states message 17 \(t = .*\): position not finite"):
        load_measured_run(tmp_path / "nan")
    effort = run.effort.copy()
    effort[3, 0] = np.inf
    write_measured_run(tmp_path / "inf", MeasuredRun("delta", run.names, run.t, run.position, effort))
    with pytest.raises(InvalidInputError, match=r"message 3 .*effort not finite"):
        load_measured_run(tmp_path / "inf")
    # too short
    short = MIN_SAMPLES - 1
    write_measured_run(tmp_path / "short", MeasuredRun("delta", run.names, run.t[:short], run.position[:short],
                                                       run.effort[:short]))
    with pytest.raises(InvalidInputError, match=f"{short} samples .*too short a run.*at least {MIN_SAMPLES}"):
        load_measured_run(tmp_path / "short")
    # an actuated joint missing
    write_measured_run(tmp_path / "two", MeasuredRun(None, run.names[:2], run.t, run.position[:, :2],
                                                     run.effort[:, :2]))
    with pytest.raises(InvalidInputError, match=rf"actuated joints \['{run.names[2]}'\] of 'delta' are not in"):
        load_measured_run(tmp_path / "two", robot="delta")
    # truncated: the storage file cut in the middle
    for storage, ext in (("sqlite3", "db3"), ("mcap", "mcap")):
        write_measured_run(tmp_path / storage, run, storage=storage)
        f = next((tmp_path / storage).glob(f"*.{ext}"))
        f.write_bytes(f.read_bytes()[:f.stat().st_size // 2])
        with pytest.raises(InvalidInputError, match=f"bag '.*{storage}': cannot be read as a rosbag2"):
            load_measured_run(tmp_path / storage)
    with pytest.raises(InvalidInputError, match="no such file"):
        load_measured_run(tmp_path / "missing")
    with pytest.raises(InvalidInputError, match="exists already"):
        write_measured_run(tmp_path / "mcap", run)
    with pytest.raises(InvalidInputError, match="storage must be one of"):
        write_measured_run(tmp_path / "x", run, storage="bag")


def test_a_window_with_a_gap_is_refused(tmp_path):
    """Issue 22 §4: samples lost in the recording (here 20 of 200, from sample 100 on) make the identification
    refuse the window that holds them, naming the topic, where the gap starts and how long it is; a window
    before the gap is used. The expected figures come from the samples written: period 2 ms (tree_motion),
    the gap from t[100] and 20 periods long."""
    _, run = measured("delta", n=200)
    keep = np.r_[0:100, 120:200]
    write_measured_run(tmp_path / "gap", MeasuredRun("delta", run.names, run.t[keep], run.position[keep],
                                                     run.effort[keep], run.velocity[keep]))
    t = run.t
    with pytest.raises(InvalidInputError, match=rf"/joint_states: a gap of 0\.04 s \(about 20 samples at the period "
                                                rf"0\.002 s\) from t = {t[100]:.6g} s inside the window"):
        load_measured_run(tmp_path / "gap")                                   # the whole bag
    with pytest.raises(InvalidInputError, match=rf"a gap of 0\.04 s .* from t = {t[100]:.6g} s"):
        load_measured_run(tmp_path / "gap", start=t[10], end=t[150])
    before = load_measured_run(tmp_path / "gap", start=t[10], end=t[99] + 1e-4)   # before the gap: all there
    np.testing.assert_allclose(before.t, t[10:100], rtol=0, atol=1e-9)
    after = load_measured_run(tmp_path / "gap", start=t[120])
    assert len(after.t) == 80
    # a window reaching past the last sample: the tail is missing too (the run's end not recorded)
    with pytest.raises(InvalidInputError, match=rf"a gap of 0\.1 s .* from t = {t[199] + 0.002:.6g} s"):
        load_measured_run(tmp_path / "gap", start=t[120], end=t[199] + 0.1)


def test_a_bag_whose_recorder_was_killed_is_read_from_what_it_committed(tmp_path):
    """Issue 22 §4: a sqlite3 bag whose recorder died before closing it (no metadata.yaml; the messages after its
    last commit rolled back, as a SIGKILL leaves them) is reindexed when opened: the committed messages are read
    back exactly, with their topic, type and QoS."""
    from pkm_control.identification.runs import message_counts, open_bag, reindex

    _, run = measured("delta", n=60)
    write_measured_run(tmp_path / "whole", run)                  # the 60 samples, closed: the reference
    ts = typestore()
    w = bag_writer(tmp_path / "killed", "sqlite3")
    c = w.add_connection("/joint_states", "sensor_msgs/msg/JointState", typestore=ts)
    with open_bag(tmp_path / "whole") as (reader, _):
        raw = [(t, data) for _, t, data in reader.messages()]
    for t, data in raw[:40]:
        w.write(c, t, data)
    w.storage.conn.commit()                                      # BagRecorder.commit
    for t, data in raw[40:]:
        w.write(c, t, data)
    w.storage.conn.close()                                       # killed: the last 20 never committed
    assert not (tmp_path / "killed" / "metadata.yaml").exists()
    back = load_measured_run(tmp_path / "killed", robot="delta")
    np.testing.assert_array_equal(back.position, run.position[:40])
    np.testing.assert_array_equal(back.effort, run.effort[:40])
    with open_bag(tmp_path / "killed") as (reader, _):
        assert message_counts(reader) == {"/joint_states": 40}
        assert reader.connections[0].msgtype == "sensor_msgs/msg/JointState"
    assert not reindex(tmp_path / "killed") and not reindex(tmp_path / "whole")   # once, and only where needed
