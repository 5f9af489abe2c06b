"""Samples a recording missed (issue 22 §4: nothing lost without a word; ROS-free).

A stream with a known rate has one sample in every slot of its period, in sim time: joint_controller (and the
hardware node) publishes such a stream at the first control period of each slot, ``t_ns // int(1e9 / rate)``
(nodes/joint_controller._due; rate 0: every period), so the slots of the stamps a recorder received are consecutive
integers. The streams counted: /joint_states while it is recorded every control period (`pkm bringup --record`,
`pkm record`), the simulated robot's ground truth at ground_truth_rate, joint_controller's estimated joint states at
state_publish_rate. A slot without a sample between a stream's first sample and its last (or the run's end, when
the stream must reach it) is a sample lost: by the publisher, the middleware or the recorder. In real time a period
the loop skipped (a deadline miss) has no sample either, and counts as one the recording lacks.

``StreamLoss`` is one recorder's count for one topic; ``loss_line`` turns the counts of a run into the one line
`pkm bringup` and `pkm record` print on stderr when they exit non-zero (bringup.LOST_SAMPLES), and ``loss_json`` into
the summary's ``lost_samples``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def slot_ns(rate: float, control_rate: float) -> int:
    """The slot (ns of sim time) of a stream published at ``rate`` Hz (0 or above the control rate: every period)
    by a loop at ``control_rate`` Hz: at least one control period, so that every slot holds a period's instant."""
    period = int(round(1e9 / control_rate))
    return max(int(1e9 / rate), period) if rate > 0 else period


@dataclass(frozen=True)
class StreamLoss:
    """One stream of one recorder: ``samples`` distinct slots received, ``missed`` slots without one, ``gaps``:
    [first missing instant (s), length (s)] of each run of them."""

    recorder: str
    topic: str
    samples: int
    missed: int
    gaps: tuple

    def longest(self):
        return max(self.gaps, key=lambda g: g[1]) if self.gaps else None


def stream_loss(recorder: str, topic: str, t_ns, slot: int, end_ns: int | None = None,
                start_ns: int | None = None) -> StreamLoss:
    """The count of ``topic`` from its stamps t_ns (ns, any order, re-offers of an instant included), its slot
    (ns, ``slot_ns``), and ``end_ns`` (the run's end, which the stream must reach: the slots after its last sample
    up to the one of end_ns are missing too; None: no tail). ``start_ns``: only the window from there counts (the
    samples before it are not the recording's purpose, e.g. the run recorder's before the motion; the slots from it
    to the first sample are missing too); None: from the first sample."""
    slot = int(slot)
    k = np.unique(np.asarray(t_ns, np.int64) // slot)
    if start_ns is not None:
        k = k[k >= int(start_ns) // slot]
    if len(k) == 0:
        return StreamLoss(recorder, topic, 0, 0, ())
    first = int(k[0]) if start_ns is None else int(start_ns) // slot
    last = int(k[-1]) if end_ns is None else max(int(k[-1]), int(end_ns) // slot)
    ends = np.concatenate([[first - 1], k, [last + 1]])     # the window's edges: its head's and tail's missing slots
    jump = np.flatnonzero(np.diff(ends) > 1)
    gaps = tuple((int(ends[i] + 1) * slot / 1e9, int(ends[i + 1] - ends[i] - 1) * slot / 1e9) for i in jump)
    return StreamLoss(recorder, topic, len(k), int(last - first + 1 - len(k)), gaps)


def loss_json(losses) -> list:
    """The summary's ``lost_samples``: one entry per stream that missed samples (none: [])."""
    return [{"recorder": x.recorder, "topic": x.topic, "samples": x.missed, "received": x.samples,
             "gaps": [list(g) for g in x.gaps]} for x in losses if x.missed > 0]


def loss_line(lost: list) -> str | None:
    """One line from ``loss_json``'s entries: how many samples, which topics of which recording, and the longest gap
    of each (None when nothing was lost)."""
    if not lost:
        return None
    parts = []
    for x in lost:
        g = max(x["gaps"], key=lambda g: g[1]) if x["gaps"] else None
        parts.append(f"{x['topic']} {x['samples']} ({x['recorder']}" +
                     (f"; the longest gap {g[1]:.4f} s from sim time {g[0]:.4f} s)" if g else ")"))
    total = sum(x["samples"] for x in lost)
    return f"lost {total} sample{'s' if total != 1 else ''}: " + ", ".join(parts)
