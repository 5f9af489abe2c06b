"""The browser view (viser) of a RobotScene, and screenshots of it taken by headless Chromium.

Why viser rather than meshcat: viser (PyPI) serves its own prebuilt web client and has the GUI a replay
needs (slider, buttons, text panels) in the same page, plus a render request (``get_render``) that makes a
round trip through the browser: when it returns, the browser has drawn everything sent before it, which is
what a screenshot must wait for. meshcat has no GUI widgets and no such acknowledgement.

No ROS here: ``BrowserView.show`` takes joint vectors; the ROS subscriptions are in ``nodes/viewer.py``.
"""

from __future__ import annotations

import os
import shutil
import threading

import numpy as np

from ..errors import PkmError
from .scene import PathTrace, RobotScene, contact_force_arrow, home_q, tracking_error, wxyz

GHOST_OPACITY = 0.3
FORCE_COLOUR = (220, 30, 30)
CONTACT_COLOUR = (240, 160, 0)
#: N: the contact force arrow's length is a quarter of the robot's size at this force
CONTACT_FULL_SCALE = 100.0
MEASURED_PATH_COLOUR = (30, 30, 30)
DESIRED_PATH_COLOUR = (40, 170, 60)
#: seconds a screenshot waits for the browser to connect and to draw (generous: CI is a loaded 2-core machine)
BROWSER_TIMEOUT = 120.0
#: Chromium's options (the environment's notes): no sandbox as root, no network beyond localhost, WebGL by
#: SwiftShader (software) since headless Chromium has no GPU
CHROMIUM_ARGS = ("--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--use-angle=swiftshader",
                 "--enable-unsafe-swiftshader")


def _rgb(rgba) -> tuple:
    return tuple(int(round(255 * c)) for c in rgba[:3])


class BrowserView:
    """A viser server drawing one robot: the measured robot, the desired robot as a translucent ghost, both
    platform frames, the platform's traced paths, the actuator forces as arrows and a status panel (robot,
    controller, sim time, tracking error). ``show`` moves it; ``url`` is the page."""

    def __init__(self, scene: RobotScene, host: str = "127.0.0.1", port: int = 8080, controller: str = "",
                 trace_length: int = 2000):
        import viser

        self.scene = scene
        self.controller = controller
        clm = scene.model
        self.title = clm.name + (f" ({clm.variant})" if clm.variant else "")
        self.server = server = viser.ViserServer(host=host, port=port, label=f"pkm view: {self.title}", verbose=False)
        self._connected = threading.Event()
        server.on_client_connect(lambda client: self._connected.set())
        server.gui.configure_theme(control_layout="floating", show_logo=False, show_share_button=False)
        server.scene.set_up_direction(tuple(scene.up))
        self._frame_camera()

        self.status = server.gui.add_markdown(self._status_text(None, None))
        self.ghost_toggle = server.gui.add_checkbox("desired robot (ghost)", True)
        self.path_toggle = server.gui.add_checkbox("platform path", True)
        self.ghost_toggle.on_update(lambda _: self._show_ghost(self.ghost_toggle.value))
        self.path_toggle.on_update(lambda _: self._show_paths(self.path_toggle.value))

        self.measured = self._add_robot("/measured", None)
        self.desired = self._add_robot("/desired", GHOST_OPACITY)
        axes = 0.15 * scene.size
        self.frames = {name: server.scene.add_frame(f"/{name}/platform_frame", axes_length=axes,
                                                    axes_radius=0.04 * axes, visible=name == "measured")
                       for name in ("measured", "desired")}
        for h in self.desired:
            h.visible = False
        self.traces = {"measured": PathTrace(trace_length), "desired": PathTrace(trace_length)}
        self._nodes = {}
        self.q = {"measured": None, "desired": None}
        self.platform = None            # (position, rotation) of the measured platform: the contact arrow's base
        self.tool_point = np.zeros(3)   # m, platform frame: where /platform_wrench's sensor sits (environment.yaml)

    # ------------------------------------------------------------------ scene

    def _frame_camera(self):
        """Look at the robot at home from a raised diagonal, from where its bounding sphere just fills the view."""
        home = self.scene.placements(home_q(self.scene.model)).positions
        reach = np.array([0.5 * np.linalg.norm(s.size) for s in self.scene.shapes])   # a sphere round each shape
        low, high = (home - reach[:, None]).min(axis=0), (home + reach[:, None]).max(axis=0)
        centre, radius = 0.5 * (low + high), 0.5 * np.linalg.norm(high - low)
        up = self.scene.up
        side = np.cross(up, [0.0, 0.0, 1.0] if abs(up[2]) < 0.9 else [1.0, 0.0, 0.0])
        side /= np.linalg.norm(side)
        ahead = np.cross(side, up)
        direction = 1.2 * ahead + 0.8 * side + 0.7 * up
        cam = self.server.initial_camera
        distance = radius / np.sin(0.5 * cam.fov)
        cam.position = tuple(centre + distance * direction / np.linalg.norm(direction))
        cam.look_at = tuple(centre)
        cam.up = tuple(up)
        lowest = float(np.min(home @ up - reach))
        plane = "xy" if abs(up[2]) > 0.9 else "xz"
        floor = centre - (centre @ up - lowest) * up
        self.server.scene.add_grid("/grid", width=3 * self.scene.size, height=3 * self.scene.size, plane=plane,
                                   cell_size=0.1, section_size=0.5, position=tuple(floor))

    def _add_robot(self, root: str, opacity):
        add = self.server.scene
        handles = []
        for s in self.scene.shapes:
            name, colour = f"{root}/{s.name}", _rgb(s.rgba)
            if s.kind == "box":
                h = add.add_box(name, color=colour, dimensions=s.size, opacity=opacity)
            elif s.kind == "cylinder":
                h = add.add_cylinder(name, radius=s.size[0], height=s.size[1], color=colour, opacity=opacity)
            elif s.kind == "sphere":
                h = add.add_icosphere(name, radius=s.size[0], color=colour, opacity=opacity)
            else:
                import trimesh

                mesh = trimesh.load(s.mesh_path, force="mesh")
                mesh.apply_scale(s.size)
                mesh.visual = trimesh.visual.ColorVisuals(mesh, face_colors=(*colour, int(255 * (opacity or 1))))
                h = add.add_mesh_trimesh(name, mesh)
            handles.append(h)
        return handles

    def _show_ghost(self, visible: bool):
        if self.q["desired"] is not None:
            for h in self.desired:
                h.visible = visible
            self.frames["desired"].visible = visible

    def _show_paths(self, visible: bool):
        for key, node in self._nodes.items():
            if key not in ("forces", "contact"):
                node.visible = visible

    def _line(self, key: str, segments: np.ndarray, colour):
        if key in self._nodes:
            self._nodes[key].remove()
            del self._nodes[key]
        if len(segments):
            self._nodes[key] = self.server.scene.add_line_segments(
                f"/path/{key}", segments, colour, thickness=0.004 * self.scene.size, visible=self.path_toggle.value)

    # ------------------------------------------------------------------ state

    def show(self, measured=None, desired=None, effort=None, t: float | None = None, trace: bool = True,
             contact=None):
        """Move the robots: tree configurations (model order) of the measured and the desired robot (either may
        be None: unchanged), the actuated joints' efforts (arrows; None: unchanged), the sim time (s), the measured
        contact force F_e (N, the sensor frame of /platform_wrench: an arrow at the tool point; None: unchanged)."""
        with self.server.atomic():
            for name, q, handles in (("measured", measured, self.measured), ("desired", desired, self.desired)):
                if q is None:
                    continue
                pl = self.scene.placements(q)
                for h, p, r in zip(handles, pl.positions, pl.wxyz):
                    h.position, h.wxyz = p, r
                    if name == "desired":
                        h.visible = self.ghost_toggle.value
                frame = self.frames[name]
                if name == "measured":
                    self.platform = (pl.platform_position, pl.platform_rotation)
                frame.position = pl.platform_position
                frame.wxyz = wxyz(pl.platform_rotation[None])[0]
                frame.visible = name == "measured" or self.ghost_toggle.value
                self.q[name] = np.array(q, float)
                if trace:
                    self.traces[name].add(pl.platform_position)
                    self._line(name, self.traces[name].segments(),
                               MEASURED_PATH_COLOUR if name == "measured" else DESIRED_PATH_COLOUR)
            if effort is not None and self.q["measured"] is not None:
                tails, vectors = self.scene.actuator_forces(self.q["measured"], effort)
                arrows = np.stack([tails, tails + vectors], axis=1)
                self._nodes["forces"] = self.server.scene.add_arrows(
                    "/forces", arrows, FORCE_COLOUR, shaft_radius=0.006 * self.scene.size,
                    head_radius=0.015 * self.scene.size, head_length=0.03 * self.scene.size)
            if contact is not None and self.platform is not None:
                tail, vector = contact_force_arrow(*self.platform, self.tool_point, contact, CONTACT_FULL_SCALE,
                                                   self.scene.size)
                self._nodes["contact"] = self.server.scene.add_arrows(
                    "/contact_force", np.array([[tail, tail + vector]]), CONTACT_COLOUR,
                    shaft_radius=0.006 * self.scene.size, head_radius=0.015 * self.scene.size,
                    head_length=0.03 * self.scene.size)
            self.status.content = self._status_text(t, self._error())

    # ------------------------------------------------------------------ replay

    def show_frame(self, frame: dict):
        """Draw one frame of a Replay: both robots and the platform paths up to it."""
        self.show(measured=frame["measured"], desired=frame["desired"], t=frame["t"], trace=False)
        with self.server.atomic():
            for name, points in frame["paths"].items():
                segments = np.stack([points[:-1], points[1:]], axis=1) if len(points) > 1 else np.zeros((0, 2, 3))
                self._line(name, segments, MEASURED_PATH_COLOUR if name == "measured" else DESIRED_PATH_COLOUR)

    def attach_replay(self, replay, rate: float = 30.0) -> threading.Thread:
        """A time slider, play / pause and a speed choice for a Replay, and a thread that plays it at ``rate``
        frames per wall second (ends with ``stop``)."""
        from .replay import SPEEDS

        clock = replay.clock()
        gui = self.server.gui
        run = replay.run
        self.controller = run.controller or self.controller
        with gui.add_folder(f"replay: {os.path.basename(run.source)}"):
            slider = gui.add_slider("time (s)", min=clock.start, max=clock.end,
                                    step=max((clock.end - clock.start) / 1000, 1e-3), initial_value=clock.start)
            button = gui.add_button("play / pause")
            speed = gui.add_dropdown("speed", [f"{v:g}x" for v in SPEEDS], initial_value="1x")
        self.replay_widgets = {"time": slider, "play": button, "speed": speed}
        moving = {"by_us": False}

        def on_slider(_):
            if not moving["by_us"]:
                clock.playing = False
                self.show_frame(replay.frame(clock.seek(slider.value)))

        slider.on_update(on_slider)
        button.on_click(lambda _: clock.toggle())
        speed.on_update(lambda _: clock.set_speed(float(speed.value[:-1])))
        self.clock, self._stopping = clock, threading.Event()
        self.show_frame(replay.frame(clock.t))

        def play():
            period = 1.0 / rate
            while not self._stopping.wait(period):
                if clock.playing:
                    t = clock.advance(period)
                    self.show_frame(replay.frame(t))
                    moving["by_us"] = True
                    slider.value = t
                    moving["by_us"] = False

        thread = threading.Thread(target=play, name="pkm-view-replay", daemon=True)
        thread.start()
        return thread

    def _error(self):
        if self.q["measured"] is None or self.q["desired"] is None:
            return None
        return tracking_error(self.scene, self.q["measured"], self.q["desired"])

    def _status_text(self, t, error) -> str:
        lines = [f"**robot** {self.title}", f"**controller** {self.controller or 'unknown'}",
                 f"**sim time** {'-' if t is None else f'{t:.3f} s'}"]
        if error is None:
            lines.append("**tracking error** - (needs /joint_states and /desired_joint_states)")
        else:
            clm = self.scene.model
            revolute = np.array([clm.is_revolute(n) for n in clm.actuated_joints])
            e = np.abs(error["actuated"])
            parts = []
            if (~revolute).any():
                parts.append(f"{1e3 * e[~revolute].max():.3f} mm")
            if revolute.any():
                parts.append(f"{1e3 * e[revolute].max():.3f} mrad")
            lines.append(f"**tracking error** max \\|e\\| {' / '.join(parts)}; platform "
                         f"{1e3 * error['platform_position']:.3f} mm")
        return "  \n".join(lines)

    # ------------------------------------------------------------------ serving

    @property
    def url(self) -> str:
        host = self.server.get_host()
        return f"http://{'127.0.0.1' if host in ('0.0.0.0', '') else host}:{self.server.get_port()}"

    def wait_for_client(self, timeout: float = BROWSER_TIMEOUT) -> bool:
        return self._connected.wait(timeout)

    def sync(self, timeout: float = BROWSER_TIMEOUT):
        """Return once every connected browser has drawn all that was sent before: a render request goes
        through the same websocket after the updates, and its answer comes after the frame that shows them."""
        for client in self.server.get_clients().values():
            client.get_render(64, 64, timeout=timeout)

    def stop(self):
        if getattr(self, "_stopping", None) is not None:
            self._stopping.set()
        self.server.stop()


def chromium_path() -> str:
    """The Chromium executable: $PKM_CHROMIUM, else chromium or chromium-browser on PATH."""
    path = os.environ.get("PKM_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not path or not os.access(path, os.X_OK):
        raise PkmError("headless Chromium not found (set PKM_CHROMIUM, or install Debian's package: "
                       "apt-get install -y chromium)")
    return path


class HeadlessBrowser:
    """Headless Chromium (playwright driving the system's Chromium) that opens views' pages for screenshots.

    with HeadlessBrowser() as browser:
        browser.open(view).screenshot("a.png")
    """

    def __enter__(self):
        try:
            from playwright.sync_api import sync_playwright
        except ImportError as exc:
            raise PkmError("screenshots need playwright (pip install playwright; the browser is Debian's "
                           "chromium, not a playwright download)") from exc
        executable = chromium_path()
        self._pw = sync_playwright().start()
        try:
            self._browser = self._pw.chromium.launch(executable_path=executable, headless=True,
                                                     args=list(CHROMIUM_ARGS))
        except BaseException:
            self._pw.stop()
            raise
        return self

    def open(self, view: BrowserView, width: int = 1280, height: int = 800) -> "ViewPage":
        """The view's page, once the browser has connected to it."""
        page = self._browser.new_page(viewport={"width": int(width), "height": int(height)})
        page.goto(view.url)
        if not view.wait_for_client():
            raise PkmError(f"the browser did not connect to {view.url} within {BROWSER_TIMEOUT:.0f} s")
        # the notice that WebGL runs in software (SwiftShader) would cover the scene
        page.add_style_tag(content=".mantine-Notifications-root { display: none !important; }")
        return ViewPage(view, page)

    def __exit__(self, *exc):
        self._browser.close()
        self._pw.stop()
        return False


class ViewPage:
    """One view's page in a HeadlessBrowser."""

    def __init__(self, view: BrowserView, page):
        self.view, self.page = view, page

    def screenshot(self, path) -> None:
        """Write a PNG of the page once the browser has drawn every update sent so far."""
        self.view.sync()
        self.page.screenshot(path=str(path))
