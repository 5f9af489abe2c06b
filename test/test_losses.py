"""Issue 22 §4, no silent data loss: the samples a recording missed, counted per stream from its stamps
(graph.losses), and `pkm bringup`'s exit status and one stderr line when samples are lost or the tracking cannot be
measured. ROS-free: the streams are stamp arrays built here, the expected counts are the periods left out of them."""

import json

import numpy as np
import pytest

from pkm_control.graph import bringup
from pkm_control.graph.losses import loss_json, loss_line, slot_ns, stream_loss

RATE = 2000.0                 # Hz: palida's control rate
DT = 500_000                  # ns: its period


def test_slots_follow_the_publishers_rule():
    """joint_controller publishes a stream at the first period of each slot t // int(1e9 / rate) (0: every period):
    the slot is that, and never shorter than a control period (a rate above the control rate is every period)."""
    assert slot_ns(0.0, RATE) == DT
    assert slot_ns(250.0, RATE) == 4_000_000
    assert slot_ns(4000.0, RATE) == DT
    assert slot_ns(300.0, RATE) == int(1e9 / 300.0)
    # every slot of 300 Hz holds one 2 kHz period at least: the first period of each slot, as _due picks them
    t = np.arange(0, 2_000) * DT
    slots = t // slot_ns(300.0, RATE)
    first = t[np.r_[True, np.diff(slots) > 0]]
    assert stream_loss("run", "/x", first, slot_ns(300.0, RATE)).missed == 0


def test_a_stream_with_gaps_is_counted_with_where_they_are():
    """Periods 0..599 with 200..229 and 400..401 left out, 0 offered three times (the lockstep start): 32 samples
    missed in two gaps; to an end at period 700 the 101 periods after the last one are missing too."""
    k = np.r_[0, 0, 0:200, 230:400, 402:600]
    loss = stream_loss("bag b", "/joint_states", k * DT, DT)
    assert (loss.samples, loss.missed) == (568, 32)
    np.testing.assert_allclose(loss.gaps, [[0.1, 0.015], [0.2, 0.001]], rtol=0, atol=1e-12)
    assert loss.longest() == pytest.approx((0.1, 0.015))
    tail = stream_loss("bag b", "/joint_states", k * DT, DT, end_ns=700 * DT)
    assert tail.missed == 32 + 101 and tail.gaps[-1] == pytest.approx((0.3, 0.0505))
    whole = stream_loss("bag b", "/joint_states", np.arange(600)[::-1] * DT, DT, end_ns=599 * DT)   # any order
    assert (whole.missed, whole.gaps) == (0, ())
    assert stream_loss("run", "/x", [], DT).missed == 0
    # the window of a run (its goal from period 210 to 500): the gap before it is not counted, the slots from its
    # start to the first sample in it are (210..229: 20), as is 400..401
    run = stream_loss("run", "/x", k * DT, DT, end_ns=500 * DT, start_ns=210 * DT)
    assert (run.samples, run.missed) == (170 + 198, 22)
    np.testing.assert_allclose(run.gaps, [[0.105, 0.01], [0.2, 0.001]], rtol=0, atol=1e-12)
    assert stream_loss("run", "/x", k * DT, DT, end_ns=500 * DT, start_ns=100 * DT).missed == 32


def test_the_line_and_the_json_name_the_samples_and_the_topics():
    losses = [stream_loss("bag b", "/joint_states", np.r_[0:100, 7_000:8_000] * DT, DT),
              stream_loss("run recorder", "/hardware/ground_truth/joint_trajectory", np.arange(8_000) * DT, DT),
              stream_loss("run recorder", "/estimated_joint_states", np.r_[0:10, 12:20] * 4_000_000, 4_000_000)]
    lost = loss_json(losses)
    assert [(x["topic"], x["samples"]) for x in lost] == [("/joint_states", 6_900), ("/estimated_joint_states", 2)]
    assert lost[0]["gaps"] == [pytest.approx([0.05, 3.45])]
    assert loss_line(lost) == ("lost 6902 samples: /joint_states 6900 (bag b; the longest gap 3.4500 s from sim time "
                               "0.0500 s), /estimated_joint_states 2 (run recorder; the longest gap 0.0080 s from sim "
                               "time 0.0400 s)")
    assert loss_line(loss_json(losses[1:2])) is None


def summary(**kw):
    return dict({"robot": "palida", "controller": "cf_rb", "hardware": "sim", "goal": {}, "goal_status": "finished",
                 "reason": "", "wall_duration_s": 1.0, "sim_duration_s": 1.0, "lost_samples": []}, **kw)


@pytest.mark.parametrize("events,code,line", [
    ({}, 0, None),
    ({"lost_samples": loss_json([stream_loss("bag b", "/joint_states", np.r_[0:10, 20:30] * DT, DT)])},
     bringup.LOST_SAMPLES, "pkm bringup: lost 10 samples: /joint_states 10 (bag b; the longest gap 0.0050 s from "
                           "sim time 0.0050 s)"),
    ({"tracking": "no sample of the run was recorded within its motion"}, bringup.NOT_MEASURED,
     "pkm bringup: the run's tracking was not measured: no sample of the run was recorded within its motion"),
    ({"goal_status": "rejected", "lost_samples": loss_json([stream_loss("b", "/x", [0, 2 * DT], DT)])}, 1,
     "pkm bringup: lost 1 sample: /x 1 (b; the longest gap 0.0005 s from sim time 0.0005 s)"),
])
def test_bringup_exits_non_zero_with_one_line_when_a_run_lost_samples_or_was_not_measured(monkeypatch, capsys,
                                                                                         events, code, line):
    """`pkm bringup --exit-when-done`: a finished run whose recorders missed samples exits LOST_SAMPLES (5), one whose
    tracking could not be measured NOT_MEASURED (6), each with one line on stderr; a status of its own (1: rejected)
    stays, the line is printed all the same. The JSON carries the same entries."""
    monkeypatch.setattr(bringup, "run_recorded", lambda options: (summary(**events), None))
    options = bringup.BringupOptions(robot="palida", goal="{type: circle}", exit_when_done=True, json=True)
    assert bringup.run(options) == code
    out = capsys.readouterr()
    assert out.err.splitlines() == ([] if line is None else [line])
    assert json.loads(out.out)["lost_samples"] == summary(**events)["lost_samples"]


def test_the_lockstep_loop_waits_for_its_recorders_acknowledgements():
    """wait_for_recorder: joint_controller runs at most RECORDER_WINDOW periods whose recorded observations a reader
    has not acknowledged; from half the window on it asks (without waiting) and starts a new window once all are
    acknowledged. Stand-ins: publishers whose acknowledgement state the test sets; the node's own method decides."""
    from types import SimpleNamespace

    pytest.importorskip("rclpy")
    from pkm_control.nodes.joint_controller import RECORDER_WINDOW, JointControllerNode

    class Publisher:
        acked, asked = False, 0

        def wait_for_all_acked(self, timeout):
            assert timeout.nanoseconds == 0       # never blocks the loop
            self.asked += 1
            return self.acked

    pubs = [Publisher(), Publisher()]
    node = SimpleNamespace(s={"wait_for_recorder": True}, _unacked=0, recorded=lambda: pubs)
    behind = JointControllerNode.recorder_behind.__get__(node)
    node._unacked = RECORDER_WINDOW // 2 - 1
    assert not behind() and pubs[0].asked == 0             # below half the window: not even asked
    node._unacked = RECORDER_WINDOW - 1
    assert not behind()                                    # unacknowledged, but within the window
    node._unacked = RECORDER_WINDOW
    assert behind()                                        # the window is full: the loop waits
    pubs[0].acked = True
    assert behind()                                        # one reader still has not acknowledged
    pubs[1].acked = True
    assert not behind() and node._unacked == 0             # all acknowledged: a new window
    node.s["wait_for_recorder"], node._unacked = False, 10 * RECORDER_WINDOW
    pubs[0].acked = False
    assert not behind()                                    # no recorder to wait for


def test_a_loop_that_waits_for_recorders_that_take_messages_is_not_stalled():
    """`pkm bringup --exit-when-done`: a loop that waits for the acknowledgements of recorders that are still taking
    messages goes at their pace (a loaded machine); it is stalled only when they took nothing for STALL_ERROR s, or
    when it waits for anything else."""
    waits = {"joint_controller": {"lockstep_stall": "error", "lockstep_idle_s": "45.1",
                                  "waiting_for": f"{bringup.RECORDER_WAIT} of /joint_states"}}
    assert bringup.stalled(waits, recording=True) is None
    assert bringup.stalled(waits).startswith("joint_controller: no lockstep progress for 45.1 s")
    streams = {"joint_controller": {"lockstep_stall": "error", "waiting_for": "/joint_references covering 1 s"}}
    assert "/joint_references" in bringup.stalled(streams, recording=True)


@pytest.mark.parametrize("interrupted_at", [None, "wait_for_recorder", "state_publish_rate"])
def test_pkm_record_puts_back_what_it_set_even_when_interrupted_while_setting_it(monkeypatch, interrupted_at):
    """`pkm record` (bag_recorder.EveryPeriod) on a lockstep graph: state_publish_rate 0 and wait_for_recorder on
    while it records, the old values back at the end; a Ctrl-C during a parameter call (Stopped raised in it, the
    call's effect unknown) still puts back what it was setting. Stand-in parameter services: a dict."""
    from pkm_control.graph import bag_recorder, tools
    from pkm_control.graph.signals import Stopped

    launched = {"control_rate": 2000.0, "state_publish_rate": 250.0, "lockstep": True, "wait_for_recorder": False,
                "ground_truth_rate": 0.0}
    params, said, interrupted = dict(launched), [], []

    def param_set(session, node, name, text, timeout):
        params[name] = json.loads(text)
        if name == interrupted_at and not interrupted:
            interrupted.append(name)
            raise Stopped("SIGINT")       # the signal came while the call was under way

    monkeypatch.setattr(tools, "param_get", lambda session, node, name, timeout: (params[name], "double"))
    monkeypatch.setattr(tools, "param_set", param_set)
    every = bag_recorder.EveryPeriod(None, 1.0, said.append)
    if interrupted_at is None:
        with every:
            assert params["state_publish_rate"] == 0.0 and params["wait_for_recorder"] is True
            assert every.control_rate == 2000.0 and every.state_rate == 0.0
        assert any("keeps pace" in line for line in said) and any("every period" in line for line in said)
    else:
        with pytest.raises(Stopped):
            with every:
                pytest.fail("recording although interrupted")
        assert interrupted == [interrupted_at]
    assert params == launched
