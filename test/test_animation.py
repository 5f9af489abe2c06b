"""Animations of recorded runs (pkm_control.viewer.animation) and `pkm animate`.

Short synthetic runs of every robot (every tree joint from the analytic IK of known poses): the file
is written, has the frame count of its fps and speed (counted here from the run's duration) and the
figure's size, and the robot's part of the picture changes between frames exactly when the robot moves.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_runs import ROBOTS, tree_motion, write_bag

from pkm_control.viewer.animation import RunAnimation, mp4_available, write_animation
from pkm_control.errors import InvalidInputError
from pkm_control.kinematics import robot_kinematics
from pkm_control.identification.runs import RecordedRun, load_run, write_joints_csv

N = 50                  # samples 2 ms apart: 0.098 s


def synthetic_run(robot, variant, moving=True, desired=True):
    kin = robot_kinematics(robot, variant)
    t, q = tree_motion(kin, N, scale=3.0 if moving else 0.0)
    qd = tree_motion(kin, N, scale=3.5 if moving else 0.0)[1] if desired else None
    m = kin.model
    return RecordedRun(robot, m.variant, "pd", t, m.joint_names, q, qd, m.actuated_joints, "synthetic", "test")


def robot_region(anim, frame):
    """The pixels of the robot's axes in a frame (rows from the top)."""
    h = frame.shape[0]
    box = anim.robot_axes.get_window_extent()
    return frame[h - int(box.y1) + 2:h - int(box.y0) - 2, int(box.x0) + 2:int(box.x1) - 2].astype(int)


@pytest.mark.parametrize("robot,variant", ROBOTS)
def test_gif_of_every_robot(tmp_path, robot, variant):
    from PIL import Image

    fps, speed = 50.0, 0.5
    anim = RunAnimation(synthetic_run(robot, variant), fps=fps, speed=speed)
    expected = math.floor(0.098 * fps / speed) + 1           # one frame every speed / fps s of sim time: 10
    path = anim.save(tmp_path / "run.gif", quiet=True)
    with Image.open(path) as im:
        assert (im.n_frames, im.size) == (expected, (720, 360))   # 9 x 4.5 in at 80 dpi
        frames = []
        for k in range(im.n_frames):
            im.seek(k)
            frames.append(np.asarray(im.convert("RGB")))
    # the robot moves on one sine period about home over the run: frame k at phase 2 pi k / 10, so frames 2, 3,
    # 7, 8 differ from frame 0 in the robot's region, and frame 5 (phase pi) shows the pose of frame 0 again
    first = robot_region(anim, frames[0])
    change = [np.abs(robot_region(anim, f) - first).mean() for f in frames]
    assert min(change[k] for k in (2, 3, 7, 8)) > 0.05
    assert change[5] < 0.1 * min(change[k] for k in (2, 3, 7, 8))


def test_frames_change_only_where_the_robot_moves():
    still = RunAnimation(synthetic_run("palida", None, moving=False), fps=50, speed=0.5)
    frames = list(still.frames())
    assert len(frames) == 10
    for f in frames[1:]:
        np.testing.assert_array_equal(robot_region(still, f), robot_region(still, frames[0]))
        assert (f != frames[0]).any()                 # the cursor and the time in the title move
    moving = RunAnimation(synthetic_run("palida", None), fps=50, speed=0.5)
    frames = list(moving.frames())
    assert (robot_region(moving, frames[4]) != robot_region(moving, frames[0])).any()


def test_without_desired_robot_no_error_panel(tmp_path):
    anim = RunAnimation(synthetic_run("delta", None, desired=False), fps=25)
    assert anim.error_axes is None
    assert next(anim.frames()).shape == (360, 400, 3)
    assert len(anim.frame_times) == math.floor(0.098 * 25) + 1


@pytest.mark.skipif(not mp4_available(), reason="imageio-ffmpeg is not installed")
def test_mp4_has_every_frame(tmp_path):
    import imageio_ffmpeg

    path = write_animation(synthetic_run("planar_redundant", "redundant"), tmp_path / "run", fps=50, speed=0.5,
                           quiet=True)
    assert path.suffix == ".mp4"
    frames, _ = imageio_ffmpeg.count_frames_and_secs(str(path))
    assert frames == 10


def test_bad_settings_are_refused(tmp_path):
    run = synthetic_run("delta", None)
    for fps, speed, match in ((0, 1, "fps = 0"), (500, 1, "fps = 500"), (25, 0, "speed = 0"),
                              (25, float("nan"), "not finite|finite")):
        with pytest.raises(InvalidInputError, match=match):
            RunAnimation(run, fps=fps, speed=speed)
    m = robot_kinematics("delta").model
    second = RecordedRun("delta", "", None, np.array([0.0, 1.0]), m.joint_names, run.q[:2], None, m.actuated_joints,
                         "synthetic", "test")
    with pytest.raises(InvalidInputError, match="1.0 s at 25 fps and speed 0.001: 25001 frames, more than 20000"):
        RunAnimation(second, fps=25, speed=1e-3)          # 1 s * 25 / 1e-3 + 1 frames
    with pytest.raises(InvalidInputError, match=r"\.mp4 or \.gif"):
        write_animation(run, tmp_path / "x.avi")


def test_pkm_animate_from_csv_and_bag(tmp_path, capsys):
    from pkm_control.cli import main

    kin = robot_kinematics("delta")
    t, q = tree_motion(kin, N, scale=3.0)
    m = kin.model
    csv = tmp_path / "run_joints.csv"
    write_joints_csv(csv, kin, "cf_rb", t, m.actuated_joints, q[:, m.actuated_idx])
    assert main(["animate", "--csv", str(csv), "--output", str(tmp_path / "a.gif"), "--fps", "50",
                 "--speed", "0.5", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "delta, controller cf_rb: 50 samples over 0.098 s" in out and "a.gif" in out
    assert (tmp_path / "a.gif").stat().st_size > 10_000
    np.testing.assert_allclose(load_run(csv).q, q, atol=1e-8)
    write_bag(tmp_path / "bag", kin, states=(t, q))
    assert main(["animate", "--bag", str(tmp_path / "bag"), "--output", str(tmp_path / "b.gif"), "--quiet"]) == 0
    assert "measured: /joint_states, no desired robot" in capsys.readouterr().out
    for argv, message in ((["--csv", str(tmp_path / "none.csv")], "no such file"),
                          (["--bag", str(tmp_path / "none")], "no such file"),
                          (["--csv", str(csv), "--robot", "palida"], "not joints of robot 'palida'"),
                          (["--csv", str(csv), "--output", str(tmp_path / "c.webm")], ".mp4 or .gif")):
        assert main(["animate", *argv, "--quiet"]) == 2
        assert message in capsys.readouterr().err, argv
