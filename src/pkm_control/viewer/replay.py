"""A recorded run (``runs.load_run``: a rosbag2 or the demo's joints CSV) on a time line, without ROS and
without a browser: the sample shown at a time, the platform paths up to it, and the replay clock (time,
playing or paused, speed) as explicit state that the view advances."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidInputError, check_number
from ..identification.runs import RecordedRun
from .scene import RobotScene

#: the drawn paths keep at most this many points (every k-th sample of a long run)
MAX_PATH_POINTS = 5000
SPEEDS = (0.1, 0.25, 0.5, 1.0, 2.0, 4.0)


@dataclass
class ReplayClock:
    """The replay's time t in [start, end] (s of the recording), playing or paused, at ``speed`` x real time."""

    start: float
    end: float
    t: float
    playing: bool = False
    speed: float = 1.0

    def advance(self, wall_dt: float) -> float:
        """Move on by speed x wall_dt while playing; stop (paused) at the end."""
        if self.playing:
            self.t = min(self.t + self.speed * wall_dt, self.end)
            self.playing = self.t < self.end
        return self.t

    def seek(self, t: float) -> float:
        self.t = min(max(check_number("replay time", t), self.start), self.end)
        return self.t

    def toggle(self) -> bool:
        """Play or pause; playing from the end starts again at the start."""
        if not self.playing and self.t >= self.end:
            self.t = self.start
        self.playing = not self.playing
        return self.playing

    def set_speed(self, speed: float) -> None:
        if speed not in SPEEDS:
            raise InvalidInputError(f"replay speed must be one of {SPEEDS}, got {speed!r}")
        self.speed = speed


class Replay:
    """A RecordedRun of the scene's robot on its time line."""

    def __init__(self, run: RecordedRun, scene: RobotScene):
        if tuple(run.joint_names) != tuple(scene.joint_names):
            raise InvalidInputError(f"the recording '{run.source}' is of {run.robot} ({len(run.joint_names)} joints), "
                                    f"not of {scene.model.name}")
        self.run, self.scene = run, scene
        self.t = np.asarray(run.t, float)
        step = max(1, -(-len(self.t) // MAX_PATH_POINTS))
        self._path_idx = np.arange(0, len(self.t), step)
        self._paths = {name: np.array([scene.placements(q[i]).platform_position for i in self._path_idx])
                       for name, q in (("measured", run.q), ("desired", run.q_desired)) if q is not None}

    def clock(self) -> ReplayClock:
        return ReplayClock(float(self.t[0]), float(self.t[-1]), float(self.t[0]))

    def index(self, t: float) -> int:
        """The last sample at or before t (the first one before the start)."""
        return max(int(np.searchsorted(self.t, t, side="right")) - 1, 0)

    def frame(self, t: float) -> dict:
        """What the view shows at t: measured and desired q (None when not recorded), the sample's time, and the
        platform paths up to it ({name: (M, 3) points})."""
        k = self.index(t)
        upto = int(np.searchsorted(self._path_idx, k, side="right"))
        paths = {name: p[:upto] for name, p in self._paths.items()}
        desired = None if self.run.q_desired is None else self.run.q_desired[k]
        return {"measured": self.run.q[k], "desired": desired, "t": float(self.t[k]), "paths": paths}
