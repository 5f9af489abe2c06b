"""Animations of a recorded run (ROS-free): the measured robot, the desired ghost and the error trace.

``RunAnimation(run)`` draws a ``runs.RecordedRun`` with matplotlib: the robot's skeleton in 3D (in the
x-y plane for the planar robot, y up) from pinocchio's forward kinematics of the spanning tree at the
recorded tree joints, the measured robot solid and the desired one as a translucent ghost, and beside
them the actuated-joint errors e = q_desired - q_measured against time with a cursor at the frame's
instant (no panel when the run has no desired robot). The title names robot, controller and the time of
the recording (sim time in a bag, time since the trajectory start in the demo's CSV).
``save`` writes MP4 (H.264) through the ffmpeg binary of the ``imageio-ffmpeg`` package when it is
installed, GIF through Pillow otherwise or on request.

Speed: the axes, ticks, labels and error curves are drawn once; each frame restores that background and
draws only what moves (the two robots, the cursor, the title), as matplotlib's blitting does, and hands
the pixels to the encoder: a full figure draw per frame cost ~0.2 s here, twice per frame through
matplotlib's animation writers.

What is drawn, from the tree (``skeleton_segments``): for every tree joint that is not a platform joint,
the fixed link from its parent joint's frame to its own frame at zero displacement, and for a prismatic
joint the stroke from there to its displaced frame; for every closure, the segment from the leg-side
frame's joint to that frame (the leg's last body up to the cut joint). The platform is the polygon of its
closure anchors, the base the polygon of the joints hanging on the base. Actuated legs are highlighted:
the stroke of an actuated prismatic joint and every segment that starts at an actuated joint.

Frames: one every ``speed / fps`` seconds of sim time from the first sample, each showing the last
recorded sample at or before its instant (no interpolation).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pinocchio as pin

from ..errors import InvalidInputError, check_number
from ..progress import progress_bar

#: an animation with more frames is refused (about 10 min of video at 30 fps): use a larger speed
MAX_FRAMES = 20_000
MEASURED, ACTUATED, GHOST = "0.2", "tab:red", "tab:green"


def mp4_available() -> bool:
    """Whether imageio-ffmpeg and its ffmpeg binary are there (MP4); otherwise animations are GIF."""
    try:
        import imageio_ffmpeg

        imageio_ffmpeg.get_ffmpeg_exe()
    except (ImportError, RuntimeError):      # not installed, or no binary for this platform
        return False
    return True


def default_suffix() -> str:
    """.mp4 where an ffmpeg is available, else .gif."""
    return ".mp4" if mp4_available() else ".gif"


def output_path(path) -> Path:
    """The animation file for ``path``: its own suffix (.mp4 or .gif), or ``default_suffix()`` without one."""
    path = Path(path)
    if path.suffix == "":
        path = path.with_suffix(default_suffix())
    if path.suffix not in (".mp4", ".gif"):
        raise InvalidInputError(f"{path}: an animation is written as .mp4 or .gif")
    if path.suffix == ".mp4" and not mp4_available():
        raise InvalidInputError(f"{path}: MP4 needs the ffmpeg of imageio-ffmpeg (pip install imageio-ffmpeg); "
                                "write a .gif instead")
    return path


class _Skeleton:
    """The drawing of a robot at configurations q (module docstring); immutable after construction."""

    def __init__(self, kin):
        clm = kin.model
        model = clm.model
        self.model, self.data = model, model.createData()
        platform = {model.getJointId(n) for n in clm.platform_joints}
        actuated = {model.getJointId(n) for n in clm.actuated_joints}
        self.links, self.strokes, self.tips = [], [], []
        for j in range(1, model.njoints):
            if j in platform:
                continue
            parent = model.parents[j]
            hl = parent in actuated
            if parent != 0:
                self.links.append((j, hl))
            if not clm.is_revolute(model.names[j]):
                self.strokes.append((j, hl or j in actuated))
        self.anchors = []
        plat_body = model.getJointId(clm.platform_joints[-1])
        for c in clm.closures:
            if c.type != "point":
                continue
            for f in c.frame_ids:
                joint = model.frames[f].parentJoint
                if joint == plat_body:
                    self.anchors.append(f)
                else:
                    self.tips.append((f, joint in actuated))
        # anchors in angular order about their centre in the platform frame, each place once
        local = {}
        for f in self.anchors:
            local.setdefault(tuple(np.round(model.frames[f].placement.translation, 9)), f)
        pts = np.array(list(local))
        if len(pts):
            c = pts.mean(axis=0)
            order = np.argsort(np.arctan2(pts[:, 1] - c[1], pts[:, 0] - c[0]))
            self.anchors = [list(local.values())[k] for k in order]
        base = np.array([model.jointPlacements[j].translation for j in range(1, model.njoints)
                         if model.parents[j] == 0 and j not in platform])
        if len(base) > 2:
            c = base.mean(axis=0)
            base = base[np.argsort(np.arctan2(base[:, 1] - c[1], base[:, 0] - c[0]))]
        self.base = base

    def draw(self, q):
        """(plain segments (k, 2, 3), actuated segments (m, 2, 3), platform polygon (p, 3)) at q."""
        model, data = self.model, self.data
        pin.forwardKinematics(model, data, q)
        pin.updateFramePlacements(model, data)
        plain, act = [], []
        for j, hl in self.links:
            a = data.oMi[model.parents[j]]
            (act if hl else plain).append((a.translation, (a * model.jointPlacements[j]).translation))
        for j, hl in self.strokes:
            zero = data.oMi[model.parents[j]] * model.jointPlacements[j]
            (act if hl else plain).append((zero.translation, data.oMi[j].translation))
        for f, hl in self.tips:
            (act if hl else plain).append((data.oMi[model.frames[f].parentJoint].translation, data.oMf[f].translation))
        poly = np.array([data.oMf[f].translation for f in self.anchors]).reshape(-1, 3)
        return np.array(plain).reshape(-1, 2, 3), np.array(act).reshape(-1, 2, 3), poly


def _polyline(segments):
    """(3k, 3) points: each segment's two ends then a NaN row, so one line artist draws them all."""
    out = np.full((3 * len(segments), 3), np.nan)
    out[0::3], out[1::3] = segments[:, 0], segments[:, 1]
    return out


class RunAnimation:
    """The animation of one recorded run (module docstring): ``fig``, ``robot_axes``, ``error_axes`` (None
    without a desired robot), ``frame_times`` (sim time of each frame), ``draw_frame(k)`` and ``save``."""

    def __init__(self, run, fps: float = 25.0, speed: float = 1.0, dpi: int = 80):
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fps = check_number("animation fps", fps)
        speed = check_number("animation speed", speed)
        if not 0 < fps <= 120:
            raise InvalidInputError(f"animation fps = {fps:g}, expected 0 < fps <= 120")
        if not 1e-3 <= speed <= 1e3:
            raise InvalidInputError(f"animation speed = {speed:g}, expected 0.001 to 1000 (sim seconds per second)")
        t = run.t
        n = int(math.floor((t[-1] - t[0]) * fps / speed + 1e-9)) + 1
        if n > MAX_FRAMES:
            raise InvalidInputError(f"animation of {t[-1] - t[0]:.1f} s at {fps:g} fps and speed {speed:g}: {n} "
                                    f"frames, more than {MAX_FRAMES}; raise the speed or lower the fps")
        self.run, self.fps, self.speed = run, fps, speed
        self.frame_times = t[0] + np.arange(n) * speed / fps
        self.samples = np.searchsorted(t, self.frame_times + 1e-12, side="right") - 1
        kin = run.kinematics
        self.planar = kin.task.kind in ("planar", "xy")
        sk = _Skeleton(kin)
        self._measured = [sk.draw(run.q[k]) for k in self.samples]
        self._desired = None if run.q_desired is None else [sk.draw(run.q_desired[k]) for k in self.samples]

        errors = run.errors
        self.fig = fig = plt.figure(figsize=(9.0 if errors is not None else 5.0, 4.5), dpi=dpi)
        grid = fig.add_gridspec(1, 2, width_ratios=(1.1, 1.0)) if errors is not None else fig.add_gridspec(1, 1)
        self.robot_axes = ax = fig.add_subplot(grid[0, 0], projection=None if self.planar else "3d")
        # the ghost first, wide and translucent, so the measured robot is drawn over it
        self._artists = [] if self._desired is None else \
            [self._robot_artists(ax, self._desired[0], 0.3, GHOST, GHOST, (4.0, 6.0), "desired")]
        self._artists.append(self._robot_artists(ax, self._measured[0], 1.0, MEASURED, ACTUATED, (1.5, 3.0),
                                                 "measured"))
        self._limits(ax, sk.base)
        self._title = fig.suptitle("", fontsize=10)
        self.error_axes = None
        if errors is not None:
            self.error_axes = ea = fig.add_subplot(grid[0, 1])
            units = {"rad" if kin.model.is_revolute(n) else "m" for n in run.actuated_joints}
            for i, e in enumerate(errors.T):
                ea.plot(t, 1e3 * e, lw=0.8, label=f"e{i + 1}")
            ea.axhline(0.0, color="0.6", lw=0.5)
            ea.set_xlabel("t [s]" if run.measured_from == "csv" else "sim time [s]")
            ea.set_ylabel("e = q_desired - q_measured [" + ", ".join(f"m{u}" for u in sorted(units)) + "]")
            ea.set_title("actuated-joint errors", fontsize=9)
            ea.legend(fontsize=7, ncol=2, loc="upper right")
            self._cursor = ea.axvline(t[0], color="k", lw=1.0)
        fig.subplots_adjust(left=0.02 if not self.planar else 0.1, right=0.97, bottom=0.13, top=0.88, wspace=0.3)
        self.draw_frame(0)

    def _robot_artists(self, ax, drawing, alpha, color, highlight, widths, label):
        """(links, actuated legs, platform) artists of one robot; widths: line widths of links and legs."""
        poly = drawing[2]
        kw = {"alpha": alpha, "solid_capstyle": "round"}
        if self.planar:
            return (ax.plot([], [], color=color, lw=widths[0], label=label, **kw)[0],
                    ax.plot([], [], color=highlight, lw=widths[1], **kw)[0],
                    ax.fill([0], [0], color=color, alpha=0.5 * alpha)[0])
        from mpl_toolkits.mplot3d.art3d import Poly3DCollection

        return (ax.plot([], [], [], color=color, lw=widths[0], label=label, **kw)[0],
                ax.plot([], [], [], color=highlight, lw=widths[1], **kw)[0],
                ax.add_collection3d(Poly3DCollection([poly], facecolor=color, edgecolor=color, alpha=0.5 * alpha)))

    def _limits(self, ax, base):
        pts = [np.concatenate([p.reshape(-1, 3), a.reshape(-1, 3), poly, base.reshape(-1, 3)])
               for p, a, poly in self._measured + (self._desired or [])]
        pts = np.concatenate(pts)
        lo, hi = pts.min(axis=0), pts.max(axis=0)
        span = max(float((hi - lo).max()), 1e-3)
        lo, hi = lo - 0.05 * span, hi + 0.05 * span
        if self.planar:
            ax.set_xlim(lo[0], hi[0])
            ax.set_ylim(lo[1], hi[1])
            ax.set_aspect("equal")
            ax.plot(base[:, 0], base[:, 1], "ks", ms=4)
            ax.set_xlabel("x [m]")
            ax.set_ylabel("y [m]")
        else:
            ax.set_xlim(lo[0], hi[0])
            ax.set_ylim(lo[1], hi[1])
            ax.set_zlim(lo[2], hi[2])
            ax.set_box_aspect(np.maximum(hi - lo, 0.05 * span))
            closed = np.vstack([base, base[:1]]) if len(base) > 2 else base
            ax.plot(closed[:, 0], closed[:, 1], closed[:, 2], color="0.5", lw=1.0)
            ax.set_xlabel("x [m]", fontsize=8)
            ax.set_ylabel("y [m]", fontsize=8)
            ax.set_zlabel("z [m]", fontsize=8)
            ax.tick_params(labelsize=7)
        ax.legend(fontsize=8, loc="upper left")

    def draw_frame(self, k: int):
        """Update every artist to frame k; returns them."""
        drawings = ([self._desired[k]] if self._desired is not None else []) + [self._measured[k]]
        changed = []
        for (plain_line, act_line, platform), (plain, act, poly) in zip(self._artists, drawings):
            for line, seg in ((plain_line, plain), (act_line, act)):
                xyz = _polyline(seg)
                if self.planar:
                    line.set_data(xyz[:, 0], xyz[:, 1])
                else:
                    line.set_data_3d(xyz[:, 0], xyz[:, 1], xyz[:, 2])
            if self.planar:
                platform.set_xy(poly[:, :2] if len(poly) else np.zeros((1, 2)))
            else:
                platform.set_verts([poly])
            changed += [plain_line, act_line, platform]
        run = self.run
        t = self.frame_times[k]
        variant = f" ({run.variant})" if run.variant else ""
        self._title.set_text(f"{run.robot}{variant}, controller {run.controller or 'not recorded'}: t = {t:.3f} s")
        if self.error_axes is not None:
            self._cursor.set_xdata([t, t])
            changed.append(self._cursor)
        return changed + [self._title]

    def frames(self):
        """The frames as (height, width, 3) uint8 RGB arrays, in order (module docstring: Speed)."""
        canvas = self.fig.canvas
        dynamic = self.draw_frame(0)
        for a in dynamic:
            a.set_animated(True)
        canvas.draw()
        background = canvas.copy_from_bbox(self.fig.bbox)
        for k in range(len(self.frame_times)):
            canvas.restore_region(background)
            for a in self.draw_frame(k):
                if hasattr(a, "do_3d_projection"):
                    a.do_3d_projection()
                self.fig.draw_artist(a)
            yield np.asarray(canvas.buffer_rgba())[:, :, :3].copy()

    def save(self, path, quiet: bool = False) -> Path:
        """Write the animation: MP4 (H.264, imageio-ffmpeg) for a .mp4 path, GIF (Pillow) for .gif; no suffix:
        .mp4 when imageio-ffmpeg is there, else .gif. A progress bar counts the frames. Returns the path."""
        import matplotlib.pyplot as plt

        path = output_path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        n = len(self.frame_times)
        bar = None if quiet else progress_bar(total=n, desc=f"{path.name[:32]:32s}", unit="frame")
        try:
            if path.suffix == ".mp4":
                import imageio_ffmpeg

                w, h = self.fig.canvas.get_width_height()
                out = imageio_ffmpeg.write_frames(str(path), (w, h), fps=self.fps, codec="libx264",
                                                  pix_fmt_out="yuv420p", macro_block_size=2, quality=7)
                out.send(None)
                try:
                    for frame in self.frames():
                        out.send(frame)
                        if bar is not None:
                            bar.update(1)
                finally:
                    out.close()
            else:
                from PIL import Image

                images = []
                for frame in self.frames():
                    images.append(Image.fromarray(frame).quantize(colors=128, method=Image.Quantize.MEDIANCUT))
                    if bar is not None:
                        bar.update(1)
                images[0].save(path, save_all=True, append_images=images[1:], duration=round(1000 / self.fps),
                               loop=0, optimize=False)
        finally:
            if bar is not None:
                bar.close()
            plt.close(self.fig)
        return path


def write_animation(run, path, fps: float = 25.0, speed: float = 1.0, quiet: bool = False) -> Path:
    """The animation of a recorded run (``runs.RecordedRun``) written to ``path`` (see ``RunAnimation.save``)."""
    return RunAnimation(run, fps, speed).save(output_path(path), quiet)
