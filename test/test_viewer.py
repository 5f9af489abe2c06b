"""The browser view (`pkm view`): the scene core against the URDF text and the requested poses, then the page in
headless Chromium (the robot's colours drawn; a JointState that moves the robot changes the picture where the
robot is), live from ROS topics, and the CLI's screenshot and its refusals."""

import os
import shutil
import subprocess
import sys
import threading
import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin
import pytest

from pkm_control.description import load_robot, robot_names
from pkm_control.errors import InvalidInputError
from pkm_control.kinematics import robot_kinematics
from pkm_control.viewer.scene import PathTrace, robot_scene, tracking_error

CHROMIUM = os.environ.get("PKM_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
needs_browser = pytest.mark.skipif(
    CHROMIUM is None, reason="no Chromium on this machine (make test installs Debian's chromium when run as root)")
ROBOTS = robot_names()


@pytest.fixture(scope="module", params=ROBOTS)
def scene(request):
    return robot_scene(load_robot(request.param))


def _pose_q(kin, x):
    return kin.inverse(kin.task.pose(x)).q


# ----------------------------------------------------------------------------- the scene core (no ROS, no browser)

def _urdf_visuals(urdf: str):
    """{pinocchio's geometry name <link>_<k>: (link, kind, size, origin SE3)} of every <visual>, read from the URDF
    text itself."""
    out = {}
    for link in ET.fromstring(urdf).iter("link"):
        for k, vis in enumerate(link.findall("visual")):
            o = vis.find("origin")
            xyz = np.array([float(v) for v in (o.get("xyz", "0 0 0") if o is not None else "0 0 0").split()])
            rpy = [float(v) for v in (o.get("rpy", "0 0 0") if o is not None else "0 0 0").split()]
            geo = vis.find("geometry")[0]
            size = {"box": lambda g: tuple(float(v) for v in g.get("size").split()),
                    "cylinder": lambda g: (float(g.get("radius")), float(g.get("length"))),
                    "sphere": lambda g: (float(g.get("radius")),)}[geo.tag](geo)
            out[f"{link.get('name')}_{k}"] = (link.get("name"), geo.tag, size, pin.SE3(pin.rpy.rpyToMatrix(*rpy), xyz))
    return out


def test_every_urdf_visual_is_drawn_where_its_link_is(scene):
    """Shape kinds and sizes are the URDF's, and each shape's world placement is its link's frame (pinocchio's
    frame placement, another path than the geometry model's) times the visual's origin from the URDF text."""
    clm = scene.model
    visuals = _urdf_visuals(clm.urdf)
    assert sorted(s.name for s in scene.shapes) == sorted(visuals)
    assert all((s.kind, pytest.approx(s.size)) == visuals[s.name][1:3] for s in scene.shapes)
    kin = robot_kinematics(clm.name, clm.variant)
    x = np.array(clm.config["demo_poses"][0], float)
    q = _pose_q(kin, x)
    pl = scene.placements(q)
    data = clm.model.createData()
    pin.framesForwardKinematics(clm.model, data, q)
    for k, s in enumerate(scene.shapes):
        link, _, _, origin = visuals[s.name]
        expected = data.oMf[clm.model.getFrameId(link)] * origin
        assert np.allclose(pl.positions[k], expected.translation, atol=1e-12)
        w, xq, yq, zq = pl.wxyz[k]
        assert np.allclose(pin.Quaternion(w, xq, yq, zq).matrix(), expected.rotation, atol=1e-12)
    # the platform frame is at the pose asked for
    assert np.allclose(pl.platform_position, kin.task.pose(x).position, atol=1e-12)
    assert np.allclose(pl.platform_rotation, kin.task.pose(x).rotation, atol=1e-12)


def test_joint_vector_takes_any_order_and_refuses_bad_states():
    scene = robot_scene(load_robot("palida"))
    names = list(scene.joint_names)
    q = np.arange(len(names)) * 0.01
    order = np.random.default_rng(1).permutation(len(names))
    assert np.array_equal(scene.joint_vector([names[i] for i in order], q[order]), q)
    bad = {
        "unknown joints": (names[:-1] + ["nope"], q),
        "missing": (names[:-1], q[:-1]),
        "duplicate": (names[:-1] + [names[0]], q),
        "positions": (names, q[:-1]),
        "finite": (names, np.where(np.arange(len(q)) == 3, np.nan, q)),
        "beyond the limit": (names, np.where(np.arange(len(q)) == 3, 1e300, q)),
    }
    for words, (n, p) in bad.items():
        with pytest.raises(InvalidInputError, match=words):
            scene.joint_vector(n, p)


def test_force_arrows_lie_on_the_struts_and_scale_with_the_force_limit():
    """PaLiDA's drive force acts along the strut: the arrow is parallel to the line from the cardan ring to the
    strut's end (frames of the URDF), its length effort / limit x a quarter of the robot's size, and a pulling
    force ends at the strut's end, a pushing one starts there."""
    scene = robot_scene(load_robot("palida"))
    clm = scene.model
    kin = robot_kinematics("palida")
    q = _pose_q(kin, clm.config["demo_poses"][1])
    effort = scene.force_limit * np.array([0.5, -0.5, 1.0, -1.0, 0.1, 0.0])
    tails, vectors = scene.actuator_forces(q, effort)
    data = clm.model.createData()
    pin.framesForwardKinematics(clm.model, data, q)
    for i in range(6):
        ring = data.oMf[clm.model.getFrameId(f"leg{i + 1}_ring")].translation
        tip = data.oMf[clm.model.getFrameId(f"leg{i + 1}_tip")].translation
        strut = (tip - ring) / np.linalg.norm(tip - ring)
        length = abs(effort[i]) / scene.force_limit[i] * 0.25 * scene.size
        assert np.linalg.norm(vectors[i]) == pytest.approx(length, abs=1e-12)
        if effort[i]:
            assert abs(abs(vectors[i] @ strut) - length) < 1e-9         # parallel to the strut
            assert np.allclose(tails[i] if effort[i] > 0 else tails[i] + vectors[i], tip, atol=1e-12)
    with pytest.raises(InvalidInputError):
        scene.actuator_forces(q, effort[:5])


def test_the_contact_force_arrow_ends_at_the_tool_and_points_as_the_force_in_the_base():
    """/platform_wrench's F_e (sensor frame: platform axes) turned by the platform's rotation: a platform yawed by
    90 deg turns a force along its x into the base's y; the arrow's head is at the tool point x + R p_t, its length
    |F| / full scale x a quarter of the robot's size; a non-finite force is refused."""
    from pkm_control.kinematics.task_space import rot_z
    from pkm_control.viewer.scene import contact_force_arrow

    R, x, tool = rot_z(np.pi / 2), np.array([0.1, 0.2, 1.0]), np.array([0.0, 0.0, -0.1])
    tail, vector = contact_force_arrow(x, R, tool, [50.0, 0.0, 0.0], 100.0, 2.0)
    assert np.allclose(vector, [0.0, 0.25, 0.0], atol=1e-12)                   # 50/100 x 0.25 x 2 m, along y
    assert np.allclose(tail + vector, [0.1, 0.2, 0.9], atol=1e-12)
    with pytest.raises(InvalidInputError):
        contact_force_arrow(x, R, tool, [np.nan, 0.0, 0.0], 100.0, 2.0)


def test_tracking_error_is_the_offset_between_the_two_states():
    scene = robot_scene(load_robot("lopes"))
    kin = robot_kinematics("lopes")
    home = np.array(scene.model.config["home"], float)
    shifted = home + np.array([0.003, -0.004, 0, 0, 0, 0])
    qm, qd = _pose_q(kin, home), _pose_q(kin, shifted)
    err = tracking_error(scene, qm, qd)
    assert err["platform_position"] == pytest.approx(0.005, abs=1e-12)
    a = scene.model.actuated_idx
    assert np.array_equal(err["actuated"], qd[a] - qm[a])


def test_path_trace_keeps_the_last_points_as_segments():
    tr = PathTrace(capacity=3)
    assert tr.segments().shape == (0, 2, 3)
    for k in range(5):
        tr.add([k, 0, 0])
    seg = tr.segments()
    assert seg.shape == (2, 2, 3) and seg[0, 0, 0] == 2 and seg[-1, 1, 0] == 4


# ----------------------------------------------------------------------------- in headless Chromium

def _image(path):
    import matplotlib.image as mpimg

    return (mpimg.imread(path)[..., :3] * 255).astype(float)


def _colour_mask(img, rgb):
    """Pixels of the hue of ``rgb`` (any shading): chromaticity within 0.05 and clearly not grey."""
    chroma = img / (img.sum(axis=-1, keepdims=True) + 1e-9)
    target = np.asarray(rgb, float) / np.sum(rgb)
    return (np.abs(chroma - target).max(axis=-1) < 0.05) & (img.max(axis=-1) - img.min(axis=-1) > 40)


def _robot_mask(img, scene):
    colours = {s.rgba[:3] for s in scene.shapes if max(s.rgba[:3]) - min(s.rgba[:3]) > 0.3}
    assert colours, "every robot has a coloured part"
    return {c: _colour_mask(img, c) for c in colours}


def _scene_area(img):
    """The 3D canvas without the control panel (top right), whose text changes with every state."""
    h, w, _ = img.shape
    keep = np.ones((h, w), bool)
    keep[: int(0.35 * h), int(0.7 * w):] = False
    return keep


@needs_browser
@pytest.mark.slow
def test_robots_are_drawn_in_their_colours(tmp_path):
    """A screenshot at home: each colour of the robot's URDF materials covers a visible patch of the page, which a
    blank canvas (white, grey grid) has not. palida through `pkm view --screenshot` (the CLI in a subprocess, as a
    user runs it), delta (another family, other shapes) in the test's browser. Two robots, not five: each page
    costs Chromium's software WebGL 5-30 s of a loaded CI core; the other robots' scenes (every URDF visual where
    its link is) are checked without a browser above."""
    from pkm_control.viewer.browser import BrowserView, HeadlessBrowser
    from pkm_control.viewer.scene import home_q

    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    r = subprocess.run([sys.executable, "-m", "pkm_control.cli", "view", "--robot", "palida", "--screenshot",
                        str(tmp_path / "palida.png"), "--size", "800", "600"], capture_output=True, text=True, env=env,
                       timeout=600)
    assert r.returncode == 0 and "screenshot:" in r.stdout, r.stderr
    drawn = ("palida", "delta")
    with HeadlessBrowser() as browser:
        for robot in drawn[1:]:
            scene = robot_scene(load_robot(robot))
            view = BrowserView(scene, port=0)
            try:
                view.show(measured=home_q(scene.model))
                browser.open(view, 800, 600).screenshot(tmp_path / f"{robot}.png")
            finally:
                view.stop()
    for robot in drawn:
        img = _image(tmp_path / f"{robot}.png")
        for colour, mask in _robot_mask(img, robot_scene(load_robot(robot))).items():
            assert (mask & _scene_area(img)).sum() > 50, (robot, colour, int(mask.sum()))


@needs_browser
@pytest.mark.ros
def test_a_joint_state_that_moves_the_robot_changes_the_picture_where_the_robot_is(tmp_path):
    """Live from ROS: the viewer node draws the /joint_states it receives. A second JointState with another pose
    changes the screenshot, and the changed pixels are where the robot is in one picture or the other."""
    rclpy = pytest.importorskip("rclpy")
    from rclpy.executors import SingleThreadedExecutor
    from sensor_msgs.msg import JointState

    from pkm_control.ros.messages import joint_state_msg
    from pkm_control.nodes.viewer import ViewerNode
    from pkm_control.viewer.browser import BrowserView, HeadlessBrowser

    scene = robot_scene(load_robot("palida"))
    kin = robot_kinematics("palida")
    poses = [np.array(scene.model.config["home"], float), np.array([0.12, -0.08, -0.75, 0.1, -0.1, 0.3])]
    view = BrowserView(scene, port=0, controller="cf_rb_friction")
    rclpy.init(domain_id=int(os.environ.get("PKM_TEST_ROS_DOMAIN_ID", "147")))
    node = ViewerNode(view, sources="")      # the first publisher of each topic: this test's
    pub_node = rclpy.create_node("viewer_test_publisher")
    pubs = [pub_node.create_publisher(JointState, t, 10) for t in ("/joint_states", "/desired_joint_states")]
    ex = SingleThreadedExecutor()
    ex.add_node(node)
    ex.add_node(pub_node)
    stop = threading.Event()
    spinner = threading.Thread(target=lambda: [ex.spin_once(timeout_sec=0.05) for _ in iter(stop.is_set, True)])
    spinner.start()
    shots = []
    try:
        with HeadlessBrowser() as browser:
            page = browser.open(view, 800, 600)
            for k, x in enumerate(poses):
                q = _pose_q(kin, x)
                effort = np.zeros(len(q))
                effort[scene.model.actuated_idx] = 0.3 * scene.force_limit
                for _ in range(240):       # published again until drawn: the first may precede discovery
                    if all(np.array_equal(view.q[w], q) for w in ("measured", "desired")):
                        break
                    node.drawn.clear()
                    pubs[0].publish(joint_state_msg(k * 10**9, scene.joint_names, q, effort=effort))
                    pubs[1].publish(joint_state_msg(k * 10**9, scene.joint_names, q))
                    node.drawn.wait(0.5)
                else:
                    pytest.fail("the viewer did not draw the published joint states within 120 s")
                shots.append(tmp_path / f"pose{k}.png")
                page.screenshot(shots[-1])
                assert f"{float(k):.3f} s" in view.status.content
    finally:
        stop.set()
        spinner.join()
        ex.shutdown()
        node.destroy_node()
        pub_node.destroy_node()
        rclpy.shutdown()
        view.stop()
    a, b = (_image(p) for p in shots)
    area = _scene_area(a)
    changed = (np.abs(a - b).max(axis=-1) > 30) & area
    assert changed.sum() > 500, int(changed.sum())
    robot = np.zeros(area.shape, bool)
    for img in (a, b):
        for mask in _robot_mask(img, scene).values():
            robot |= mask
    # the box round the robot's coloured parts, grown by 60 px to take in its grey parts and shadow
    ys, xs = np.nonzero(robot)
    near = np.zeros(area.shape, bool)
    near[max(ys.min() - 60, 0): ys.max() + 60, max(xs.min() - 60, 0): xs.max() + 60] = True
    assert near.mean() < 0.5                                  # a box that leaves out most of the page
    assert (changed & near).sum() >= 0.98 * changed.sum()
    assert (changed & robot).sum() > 100


# ----------------------------------------------------------------------------- the CLI's refusals

def _exit_code(argv):
    from pkm_control.cli import main

    try:
        return main(argv)
    except SystemExit as exc:          # argparse's refusals
        return exc.code


@pytest.mark.parametrize("args, words", [
    (["--screenshot", "out.txt"], "must name a .png file"),
    (["--screenshot", "/no/such/folder/x.png"], "must name a .png file"),
    (["--pose", "0", "0", "nan", "0", "0", "0", "--screenshot", "x.png"], "must be finite"),
    (["--pose", "0", "0", "9", "0", "0", "0", "--screenshot", "x.png"], "outside its range"),
    (["--pose", "0", "0", "--screenshot", "x.png"], "needs 6 values"),
    (["--size", "10", "10", "--screenshot", "x.png"], "whole number from 200"),
    (["--port", "70000"], "whole number from 0 to 65,535"),
])
def test_view_refuses_bad_input_with_one_line(args, words, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code = _exit_code(["view", "--robot", "lopes", *args])
    err = capsys.readouterr().err
    assert code == 2 and words in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert not list(tmp_path.iterdir())


# ----------------------------------------------------------------------------- replay of a recorded run

def _recorded_run(tmp_path, robot="palida"):
    """A joints CSV (runs.write_joints_csv, as pkm demo writes it) of a 1 s move along x: measured = desired
    shifted by 2 mm."""
    from pkm_control.identification.runs import load_run, write_joints_csv

    kin = robot_kinematics(robot)
    home = np.array(kin.model.config["home"], float)
    t = np.linspace(0.0, 1.0, 11)
    xd = [home + np.r_[0.05 * s, np.zeros(len(home) - 1)] for s in t]
    q_desired = np.array([_pose_q(kin, x) for x in xd])
    q = np.array([_pose_q(kin, x + np.r_[0, 0.002, np.zeros(len(home) - 2)]) for x in xd])
    path = tmp_path / "run_joints.csv"
    write_joints_csv(path, kin, "cf_rb", t, kin.model.joint_names, q, q_desired)
    return load_run(path)


def test_replay_shows_the_sample_at_the_time_and_the_path_up_to_it(tmp_path):
    from pkm_control.viewer.replay import Replay

    run = _recorded_run(tmp_path)
    scene = robot_scene(load_robot("palida"))
    rp = Replay(run, scene)
    f = rp.frame(0.55)                                   # samples every 0.1 s: the one at 0.5 s
    assert f["t"] == pytest.approx(0.5) and np.array_equal(f["measured"], run.q[5])
    assert np.array_equal(f["desired"], run.q_desired[5])
    assert f["paths"]["desired"].shape == (6, 3)
    assert np.allclose(f["paths"]["desired"][:, 0] - f["paths"]["desired"][0, 0], 0.05 * np.linspace(0, 0.5, 6))
    assert np.allclose(f["paths"]["measured"] - f["paths"]["desired"], [0, 0.002, 0], atol=1e-9)
    assert rp.frame(-5)["t"] == 0.0 and rp.frame(99)["t"] == 1.0
    with pytest.raises(InvalidInputError, match="not of lopes"):
        Replay(run, robot_scene(load_robot("lopes")))


def test_replay_clock_plays_pauses_seeks_and_stops_at_the_end():
    from pkm_control.viewer.replay import ReplayClock

    c = ReplayClock(0.0, 1.0, 0.0)
    assert c.advance(0.3) == 0.0                         # paused
    c.toggle()
    c.set_speed(2.0)
    assert c.advance(0.3) == pytest.approx(0.6)
    assert c.advance(0.3) == 1.0 and not c.playing      # stops at the end
    assert c.toggle() and c.t == 0.0                     # plays again from the start
    assert c.seek(7.0) == 1.0 and c.seek(-1.0) == 0.0
    with pytest.raises(InvalidInputError):
        c.set_speed(3.0)
    with pytest.raises(InvalidInputError):
        c.seek(float("nan"))


def test_the_replay_gui_moves_the_robots_to_the_slider_time(tmp_path):
    """The page's slider seeks (as a browser's change would: the handle's value set), without a browser."""
    from pkm_control.viewer.browser import BrowserView
    from pkm_control.viewer.replay import Replay

    run = _recorded_run(tmp_path)
    scene = robot_scene(load_robot("palida"))
    view = BrowserView(scene, port=0)
    try:
        view.attach_replay(Replay(run, scene))
        assert np.array_equal(view.q["measured"], run.q[0]) and view.controller == "cf_rb"
        view.replay_widgets["time"].value = 0.8
        assert np.array_equal(view.q["measured"], run.q[8]) and np.array_equal(view.q["desired"], run.q_desired[8])
        assert "0.800 s" in view.status.content and "platform 2.000 mm" in view.status.content
    finally:
        view.stop()


@pytest.mark.ros
def test_the_viewer_draws_only_the_publishers_it_is_bound_to():
    """Live from ROS (issue 22 §1): the viewer's streams are bound (default sources: the measured joint states to
    joint_controller, the desired ones to inverse_kinematics): a peer's joint states, even published first, are
    refused, counted on the viewer's diagnostics with the peer's gid, and never drawn."""
    rclpy = pytest.importorskip("rclpy")
    from types import SimpleNamespace

    from rclpy.executors import SingleThreadedExecutor
    from sensor_msgs.msg import JointState

    from pkm_control.nodes.viewer import ViewerNode
    from pkm_control.ros.messages import joint_state_msg
    from pkm_control.trajectory.trust import gid_text
    from pkm_control.viewer.scene import home_q

    scene = robot_scene(load_robot("palida"))
    kin = robot_kinematics("palida")
    q_home, q_peer = home_q(scene.model), _pose_q(kin, np.array([0.12, -0.08, -0.75, 0.1, -0.1, 0.3]))
    shown = []
    view = SimpleNamespace(scene=scene, controller="pd", tool_point=None, show=lambda **kw: shown.append(kw))
    rclpy.init(domain_id=int(os.environ.get("PKM_TEST_ROS_DOMAIN_ID", "147")))
    node = ViewerNode(view)
    ctl, peer = rclpy.create_node("joint_controller"), rclpy.create_node("peer")
    pubs = {n: n.create_publisher(JointState, "/joint_states", 10) for n in (ctl, peer)}
    ex = SingleThreadedExecutor()
    for n in (node, ctl, peer):
        ex.add_node(n)

    def until(cond, publish):
        for _ in range(2400):                 # 120 s at most; published again (the first may precede discovery)
            if cond():
                return True
            publish()
            ex.spin_once(timeout_sec=0.05)
        return False

    try:
        binding = node.sources.bindings["/joint_states"]
        assert until(lambda: binding.refused > 0,
                     lambda: pubs[peer].publish(joint_state_msg(10**9, scene.joint_names, q_peer)))
        assert until(lambda: any(s.get("measured") is not None for s in shown),
                     lambda: pubs[ctl].publish(joint_state_msg(2 * 10**9, scene.joint_names, q_home)))
        assert all(np.array_equal(s["measured"], q_home) for s in shown if s.get("measured") is not None)
        gid = next(bytes(i.endpoint_gid) for i in node.get_publishers_info_by_topic("/joint_states")
                   if i.node_name == "peer")
        node.sources.refresh()
        assert f"{gid_text(gid)} (peer)" in node.diag.extra["source /joint_states"]
        assert node.diag.rejected == binding.refused
    finally:
        ex.shutdown()
        for n in (node, ctl, peer):
            n.destroy_node()
        rclpy.shutdown()
