"""Why ``pkm reproduce planar_redundant`` does not show Wu's two observations: a sensitivity study.

Wu et al. 2009 (seed 003), sec. 5, below Table 2: "From Fig. 2, it can be seen that the difference between F1
acting on slider E1D1 and F2 acting on slider E2D2 is very small. From Fig. 3, one may see that F1 of the
corresponding non-redundant parallel manipulator is much bigger than F2." The seed has the captions of Fig. 2-3
but no curve and no number, so the observations are tested in kind, with these measures (rms over the motion;
F1, F2 the slider forces of tau in eq. 35 / 37, positive along +Y as J_i of eq. 21 makes both):

    ratio = rms F1 / rms F2                          Fig. 3: "much bigger", tested as ratio_n > RATIO_MIN
    diff  = rms(F1 - F2) / rms(F1, F2), in [0, 2]    Fig. 2: "very small", tested as diff_r < DIFF_MAX
    sum   = rms(F1 + F2) / rms(F1, F2) = sqrt(4 - diff^2)

with rms(F1, F2) = sqrt((rms F1^2 + rms F2^2) / 2): diff = 0 when F1 = F2, 2 when F1 = -F2. ``sum`` small is the
first observation if Wu's F2 had the opposite sign to eq. 21's (reading "F2 sign flipped"); F1/F2 is the same
in both readings. Subscripts r, n: redundant (eq. 39) and nonredundant (eq. 38) robot.

The structural reason (eq. 21-22): the slider rows J_i = [tan beta_i, 1, 0] have 1 in the Y column, the strut rows
J_{i+2} = [sin phi_i, cos phi_i]([e1^T; e2^T] + E R r'_Bi e3^T) - J_i cos phi_i have 0, so the Y row of
J^T tau = Omega p (eq. 36 / 38) reads F1 + F2 = (Omega p)_Y in both robots. The vertical generalized force (weight
the counterweights do not carry, plus vertical inertia) goes to the sliders alone and is the same with and without
strut E1B1 up to that strut's own 80 kg; redundancy can change only F1 - F2. Table 2's counterweights balance the
weight exactly (2 x 495 = 150 + 2 (120 + 220 + 60 + 20) kg), so in the redundant robot (Omega p)_Y is the vertical
inertia force alone. Both observations together need |F1 + F2| >> |F1 - F2| in the redundant robot and
F1 - F2 ~ F1 + F2 (F2 ~ 0) in the nonredundant one.

Inputs varied, one at a time about the shipped values and then jointly over a plausible box:

* inertias (Table 2 gives masses only): I_zz about the com of the links, the strut parts and the platform as
  factors of the config's (uniform boxes / cylinders); factor 3 is all of the mass at the body's ends, the bound
  for a body of that length; the com of the link (s_i2 of eq. 31-33) and of the platform (Wu's O_N = A1);
* motion (sec. 5 gives the end points and the three phases only): duration T and ramp fraction (accelerating
  time / T) of the trapezoidal velocity profile;
* column placement: eq. 20a and 20b as printed are the same equation (both x + d/2, and 20c-d both + d/2), which
  leaves open the columns' offset from Wu's origin and which column is column 1. Columns at X = c0 (column 1)
  and c0 + d, c0 over the range where the test motion is reachable (|c0| < 0.3 m), with column 1 on the left
  (shipped, c0 = 0) or on the right; eq. 20a read alone (c0 = -d/2) makes x = 0.9 m unreachable;
* what Fig. 2-3 might plot: the gravity part only (quasi-static), the inertial part only (g = 0), forces
  without the counterweights (m_i5 = 0), with counterweights that move with their sliders (H_i5 = +H_i1: 495 kg
  added to each slider), and each of the motion components x, y, alpha alone (the others at mid-path).

Computation: tau is linear in p (eq. 36, 38) and Omega = Omega(g, at rest) + Omega(g = 0, motion); for one path and
profile shape the motion part scales as 1 / T^2 (rates as 1 / T). So a path costs one pass of observation_matrix per
robot and mode, and every p and T after that is a matrix product. The dynamics is invariant under a horizontal
shift (gravity is vertical) and under the mirror X -> -X with alpha -> -alpha (every com of the config lies on its
body's axis), so every column placement is the shipped model on a transformed path.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...errors import InvalidModelError
from ...kinematics.task_space import Pose, rot_z
from ...trajectory.profiles import trapezoidal

DIFF_MAX = 0.25             # Fig. 2 "difference ... very small": rms(F1 - F2) below a quarter of rms(F1, F2)
RATIO_MIN = 2.0             # Fig. 3 "much bigger": rms F1 at least twice rms F2
N_STUDY = 101               # samples per motion
STATIC_T = math.inf         # T of the quasi-static (gravity only) pass

# rotating bodies of the config -> parts of the Formulation (Wu's pivotal points, sec. 3.4)
_PARTS = {"link": ("link1", "link2"), "strut_upper": ("strut1_upper", "strut2_upper"),
          "strut_lower": ("strut1_lower", "strut2_lower"), "platform": ("platform",)}
# plausible box of the joint search (and the band shaded in the sweeps)
IZZ_RANGE = (0.25, 3.0)                              # factor on I_zz about the com (3: mass at the ends)
COM_RANGE = {"link": (0.3, 0.9),                     # s_i2 from D_i along the 1.2 m link (config 0.6)
             "platform": (-0.3, 0.05),               # com from A1 towards B (B at -l6 = -0.25; config -0.125)
             "strut_upper": (0.2, 0.6),              # from E_i along the 0.8 m housing (config 0.4)
             "strut_lower": (-0.6, -0.2)}            # from B along the 0.8 m rod (config -0.4)
OFFSETS = np.round(np.linspace(-0.28, 0.28, 9), 3)   # c0 (m), reachable: |c0| < 0.3 m
RAMPS = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5)
DURATIONS = np.geomspace(1.0, 100.0, 13)
IZZ_FACTORS = np.geomspace(0.1, 1000.0, 13)
JOINT_RAMPS = (0.1, 0.25, 0.45)
JOINT_OFFSETS = (-0.28, -0.14, 0.0, 0.14, 0.28)
JOINT_DURATIONS = (1.0, 1.5, 2.0, 3.0, 5.0, 10.0, STATIC_T)
JOINT_INERTIAS = 48         # random inertia sets per path (the first one is the config's)
READINGS = ("as modelled", "gravity only (quasi-static)", "inertial only (g = 0)", "counterweights omitted",
            "counterweights move with sliders", "x motion only", "y motion only", "alpha motion only")
JOINT_READINGS = ("as modelled", "inertial only (g = 0)", "counterweights omitted", "counterweights move with sliders")


@dataclass(frozen=True)
class Motion:
    """Wu's test motion (sec. 5) on columns at X = offset and offset + d, column 1 on ``column1``'s side."""

    ramp: float
    offset: float = 0.0
    column1: str = "left"
    moving: str = "xya"          # coordinates that move; the others stay at mid-path


def measures(f1, f2) -> dict:
    """ratio, diff and sum of the module docstring; f1, f2 of shape (n,) or (n, k) (time along axis 0)."""
    r1, r2 = np.sqrt(np.mean(np.square(f1), axis=0)), np.sqrt(np.mean(np.square(f2), axis=0))
    r12 = np.sqrt(0.5 * (r1 * r1 + r2 * r2))
    return {"ratio": r1 / r2, "diff": np.sqrt(np.mean(np.square(f1 - f2), axis=0)) / r12,
            "sum": np.sqrt(np.mean(np.square(f1 + f2), axis=0)) / r12}


class Study:
    """Slider forces of both robots as linear maps of p, per path (see the module docstring)."""

    def __init__(self, formulations, x_start, x_end, n=N_STUDY):
        self.F = formulations                                   # {"redundant": F_r, "nonredundant": F_n}
        self.x_start, self.x_end = np.asarray(x_start, float), np.asarray(x_end, float)
        self.n = int(n)
        cfg = self.F["redundant"].kin.model.spec
        self.cx0 = float(cfg.blocks["geometry"]["column_x"][0])
        self.d = float(cfg.blocks["geometry"]["column_x"][1]) - self.cx0
        self.l = float(cfg.blocks["geometry"]["l"])
        self.bodies = cfg.blocks["bodies"]
        if any(abs(float(self.bodies[b]["com"][0])) > 0.0 for b in _PARTS):
            raise InvalidModelError("planar_redundant sensitivity: the mirror placement needs every com on its "
                                    "body's axis")
        self.slider_rows = {v: [F.actuated_joints.index(f"slider{i}") for i in (1, 2)] for v, F in self.F.items()}
        self._maps = {}

    # ------------------------------------------------------------------ paths
    def path(self, motion: Motion):
        """(X, Xd, Xdd) at T = 1 in the model's frame (columns at column_x); the rates scale as 1/T, 1/T^2."""
        s, ds, dds = trapezoidal(np.linspace(0.0, 1.0, self.n), 1.0, motion.ramp)
        a, b = self.x_start.copy(), self.x_end.copy()
        for k, c in enumerate("xya"):
            if c not in motion.moving:
                a[k] = b[k] = 0.5 * (a[k] + b[k])
        dX = b - a
        X, Xd, Xdd = a + np.outer(s, dX), np.outer(ds, dX), np.outer(dds, dX)
        if motion.column1 == "left":        # horizontal shift: column 1 at offset -> at column_x[0]
            X[:, 0] += self.cx0 - motion.offset
        else:                               # mirror: column 1 at offset + d -> at column_x[0], alpha -> -alpha
            X[:, 0] = self.cx0 + motion.offset + self.d - X[:, 0]
            X[:, 2] *= -1.0
            for A in (Xd, Xdd):
                A[:, 0] *= -1.0
                A[:, 2] *= -1.0
        return X, Xd, Xdd

    def beta_max_deg(self, motion: Motion) -> float:
        """Largest link angle |beta_i| along the path (eq. 19: sin beta_i = (x - x_Di) / l), in degrees."""
        x = self.path(motion)[0][:, 0]
        return math.degrees(math.asin(max(np.abs(x - self.cx0).max(), np.abs(x - self.cx0 - self.d).max()) / self.l))

    def maps(self, motion: Motion) -> dict:
        """{variant: (K_rest, K_move)}, each (n, 2, n_p): [F1, F2] = K_rest p + K_move p / T^2."""
        if motion not in self._maps:
            X, Xd, Xdd = self.path(motion)
            out = {}
            for v, F in self.F.items():
                rest, move = [], []
                for x, xd, xdd in zip(X, Xd, Xdd):
                    pose = Pose(np.array([x[0], x[1], 0.0]), rot_z(-x[2]))      # Wu's alpha is clockwise
                    J = F.jacobian(pose)                                          # eq. 24 / 25
                    # tau = J (J^T J)^-1 Omega p (eq. 39) or J_N^-T Omega_N p_NN (eq. 38), per unit p
                    solve = ((lambda Om, J=J: J @ np.linalg.solve(J.T @ J, Om)) if F.redundant
                             else (lambda Om, J=J: np.linalg.solve(J.T, Om)))
                    rest.append(solve(F.observation_matrix(pose, np.zeros(3), np.zeros(3))[0])[self.slider_rows[v]])
                    move.append(solve(F.observation_matrix(pose, xd, xdd, gravity=np.zeros(3))[0])[self.slider_rows[v]])
                out[v] = (np.array(rest), np.array(move))
            self._maps[motion] = out
        return self._maps[motion]

    # ------------------------------------------------------------------ parameters
    def params(self, variant, izz=None, com=None, counterweights="balanced") -> np.ndarray:
        """p (eq. 36 / 38) with I_zz factors and com positions {body: value} and a counterweight reading."""
        F = self.F[variant]
        idx = {name: i for i, name in enumerate(F.parameter_names)}
        p = F.parameters()
        for body, parts in _PARTS.items():
            b = self.bodies[body]
            m, cx = float(b["mass"]), float(b["com"][0])
            cy = float((com or {}).get(body, b["com"][1]))
            i_com = float(b["inertia"][2]) * float((izz or {}).get(body, 1.0))
            for part in parts:
                if f"{part}.m" in idx:
                    p[idx[f"{part}.mx"]], p[idx[f"{part}.my"]] = m * cx, m * cy
                    p[idx[f"{part}.Izz"]] = i_com + m * (cx * cx + cy * cy)      # parallel axes, about the pivot
        if counterweights != "balanced":
            for i in (1, 2):
                if counterweights == "riding":        # H_i5 = +H_i1: the counterweight is slider mass
                    p[idx[f"slider{i}_body.m"]] += p[idx[f"counterweight{i}_body.m"]]
                p[idx[f"counterweight{i}_body.m"]] = 0.0
        return p

    def forces(self, motion, P, T, variant, gravity=True):
        """[F1, F2] of shape (n, 2, k) for parameter columns P (n_p, k) at duration T (inf: at rest)."""
        K_rest, K_move = self.maps(motion)[variant]
        out = np.zeros((self.n, 2, P.shape[1]))
        if gravity:
            out += K_rest @ P
        if math.isfinite(T):
            out += (K_move @ P) / (T * T)
        return out

    def evaluate(self, motion, T, settings, gravity=True) -> dict:
        """Measures of both robots for settings = [dict(izz=..., com=..., counterweights=...)]."""
        res = {}
        for v, tag in (("redundant", "r"), ("nonredundant", "n")):
            P = np.column_stack([self.params(v, **s) for s in settings])
            f = self.forces(motion, P, T, v, gravity)
            for k, val in measures(f[:, 0], f[:, 1]).items():
                res[f"{k}_{tag}"] = val
        return res


def _rms(a):
    return float(np.sqrt(np.mean(np.square(a))))


def _row(m):
    return {k: float(np.atleast_1d(v)[0]) for k, v in m.items() if k in ("ratio_r", "diff_r", "sum_r", "ratio_n")}


def run_study(F_r, F_n, dyn_r, dyn_n, x_start, x_end, duration, ramp, progress=None):
    """(summary, plot data) of the study in the module docstring; ``progress`` wraps an iterable (tqdm) or is None."""
    st = Study({"redundant": F_r, "nonredundant": F_n}, x_start, x_end)
    base = Motion(ramp)
    T = float(duration)
    shipped = st.evaluate(base, T, [{}])
    out = {"thresholds": {"diff_max": DIFF_MAX, "ratio_min": RATIO_MIN,
                          "measures": "ratio = rms F1 / rms F2; diff = rms(F1 - F2) / rms(F1, F2); "
                                      "sum = rms(F1 + F2) / rms(F1, F2); r: redundant, n: nonredundant",
                          "reproduced_eq21_signs": f"diff_r < {DIFF_MAX} and ratio_n > {RATIO_MIN}",
                          "reproduced_F2_sign_flipped": f"sum_r < {DIFF_MAX} and ratio_n > {RATIO_MIN}"},
           "samples_per_motion": st.n, "baseline": _row(shipped)}

    # ---- the same baseline from the generic engine (independent of Omega and of the linear maps)
    X, Xd, Xdd = st.path(base)
    eng = {}
    for v, dyn, tag in (("redundant", dyn_r, "r"), ("nonredundant", dyn_n, "n")):
        tau = np.array([dyn.inverse_dynamics(Pose(np.array([x[0], x[1], 0.0]), rot_z(-x[2])), xd / T, xdd / T ** 2,
                                             friction=False).tau for x, xd, xdd in zip(X, Xd, Xdd)])
        f = tau[:, st.slider_rows[v]]
        eng.update({f"{k}_{tag}": float(val) for k, val in measures(f[:, 0], f[:, 1]).items()})
    out["baseline_engine"] = {k: eng[k] for k in out["baseline"]}

    # ---- the identity F1 + F2 = (Omega p)_Y along the shipped motion, both robots
    f_r = st.forces(base, st.params("redundant")[:, None], T, "redundant")[:, :, 0]
    f_n = st.forces(base, st.params("nonredundant")[:, None], T, "nonredundant")[:, :, 0]
    plot = {"t": np.linspace(0.0, 1.0, st.n) * T, "f_r": f_r, "f_n": f_n, "scatter": {}}
    s_r, s_n, d_r, d_n = f_r.sum(axis=1), f_n.sum(axis=1), f_r[:, 0] - f_r[:, 1], f_n[:, 0] - f_n[:, 1]
    out["identity"] = {"F1_plus_F2": "(Omega p)_Y, the same in both robots but for strut E1B1 (eq. 21-22)",
                       "rms_sum_r_N": _rms(s_r), "rms_sum_n_N": _rms(s_n), "rms_sum_r_minus_sum_n_N": _rms(s_r - s_n),
                       "rms_diff_r_N": _rms(d_r), "rms_diff_n_N": _rms(d_n)}

    # ---- one at a time
    tasks = []
    for body, label in (("link", "link I_zz factor"), ("strut_upper", "strut I_zz factor"),
                        ("platform", "platform I_zz factor")):
        bodies = ("strut_upper", "strut_lower") if body == "strut_upper" else (body,)
        tasks.append((f"{body.split('_')[0]}_izz_factor", label, IZZ_FACTORS, 1.0, IZZ_RANGE,
                      lambda x, bs=bodies: (base, T, {"izz": {b: x for b in bs}})))
    for body, label, vals in (("link", "link com s_i2 from D_i (m)", np.linspace(0.1, 1.1, 11)),
                              ("platform", "platform com from A1 towards B (m)", np.linspace(-0.5, 0.2, 8))):
        tasks.append((f"{body}_com_m", label, vals, float(st.bodies[body]["com"][1]), COM_RANGE[body],
                      lambda x, b=body: (base, T, {"com": {b: x}})))
    tasks.append(("duration_s", "duration T (s)", DURATIONS, T, (T, DURATIONS[-1]),
                  lambda x: (base, x, {})))
    tasks.append(("ramp_fraction", "ramp fraction (accelerating time / T)", np.array(RAMPS), ramp, (0.05, 0.5),
                  lambda x: (Motion(x), T, {})))
    for side in ("left", "right"):
        tasks.append((f"column_offset_m_column1_{side}", f"column offset c0 (m), column 1 on the {side}", OFFSETS,
                      0.0 if side == "left" else None, (OFFSETS[0], OFFSETS[-1]),
                      lambda x, sd=side: (Motion(ramp, float(x), sd), T, {})))
    items = [(task, float(x)) for task in tasks for x in task[2]]
    rows = {task[0]: [] for task in tasks}
    for task, x in items if progress is None else progress(items):
        motion, TT, setting = task[-1](x)
        rows[task[0]].append(_row(st.evaluate(motion, TT, [setting])))
    out["sweeps"] = {name: {"label": label, "values": [float(v) for v in vals], "shipped": ship,
                            "plausible": [float(band[0]), float(band[1])],
                            **{k: [r[k] for r in rows[name]] for k in rows[name][0]}}
                     for name, label, vals, ship, band, _ in tasks}

    # ---- readings of what Fig. 2-3 plot
    readings = {}
    for name in READINGS:
        motion, TT, setting, grav = base, T, {}, True
        if name.startswith("gravity only"):
            TT = STATIC_T
        elif name.startswith("inertial only"):
            grav = False
        elif name == "counterweights omitted":
            setting = {"counterweights": "omitted"}
        elif name == "counterweights move with sliders":
            setting = {"counterweights": "riding"}
        elif name.endswith("motion only"):
            motion = Motion(ramp, moving={"x": "x", "y": "y", "alpha": "a"}[name.split()[0]])
        readings[name] = _row(st.evaluate(motion, TT, [setting], grav))
    out["readings"] = readings

    # ---- joint search over the plausible box
    rng = np.random.default_rng(2009)
    inertias = [{}]
    for _ in range(JOINT_INERTIAS - 1):
        inertias.append({"izz": {b: float(math.exp(rng.uniform(*np.log(IZZ_RANGE)))) for b in _PARTS},
                         "com": {b: float(rng.uniform(*COM_RANGE[b])) for b in _PARTS}})
    motions = [Motion(r, c, s) for r in JOINT_RAMPS for c in JOINT_OFFSETS for s in ("left", "right")]
    it = motions if progress is None else progress(motions)
    pts = {name: [] for name in JOINT_READINGS}
    for motion in it:
        for TT in JOINT_DURATIONS:
            for name in JOINT_READINGS:
                if name == "inertial only (g = 0)" and not math.isfinite(TT):
                    continue                                 # no force at all
                cw = {"counterweights omitted": "omitted", "counterweights move with sliders": "riding"}.get(name,
                                                                                                            "balanced")
                m = st.evaluate(motion, TT, [dict(s, counterweights=cw) for s in inertias],
                                gravity=name != "inertial only (g = 0)")
                for k in range(len(inertias)):
                    pts[name].append((motion, TT, k, m["ratio_r"][k], m["diff_r"][k], m["sum_r"][k], m["ratio_n"][k]))
    joint = {}
    for name, rows in pts.items():
        a = np.array([r[3:] for r in rows])
        ok1a, ok1b, ok2 = a[:, 1] < DIFF_MAX, a[:, 2] < DIFF_MAX, a[:, 3] > RATIO_MIN
        res = {"points": len(rows), "fraction_obs2": float(ok2.mean()),
               "min_ratio_r_where_obs2": float(a[ok2, 0].min()) if ok2.any() else None,
               "obs2_column1": sorted({r[0].column1 for r, ok in zip(rows, ok2) if ok}),
               "obs2_max_duration_s": max((r[1] for r, ok in zip(rows, ok2) if ok), default=None)}
        for reading, col, ok1 in (("eq21_signs", 1, ok1a), ("F2_sign_flipped", 2, ok1b)):
            closeness = np.maximum(a[:, col] / DIFF_MAX, RATIO_MIN / a[:, 3])    # <= 1: both observations
            best = int(np.argmin(closeness))
            mo, TT, k = rows[best][:3]
            res[reading] = {
                "fraction_obs1": float(ok1.mean()), "fraction_both": float((ok1 & ok2).mean()),
                "max_ratio_n_where_obs1": float(a[ok1, 3].max()) if ok1.any() else None,
                "min_obs1_measure_where_obs2": float(a[ok2, col].min()) if ok2.any() else None,
                "closest": {"closeness": float(closeness[best]), "ramp": mo.ramp, "column_offset_m": mo.offset,
                            "column1": mo.column1, "duration_s": TT if math.isfinite(TT) else "quasi-static",
                            "inertia_set": k, "beta_max_deg": st.beta_max_deg(mo),
                            **dict(zip(("ratio_r", "diff_r", "sum_r", "ratio_n"), map(float, a[best])))}}
        joint[name] = res
        plot["scatter"][name] = (a[:, 1], a[:, 3])
    out["joint_search"] = {
        "box": {"izz_factor": list(IZZ_RANGE), "com_m": {b: list(v) for b, v in COM_RANGE.items()},
                "ramps": list(JOINT_RAMPS), "column_offsets_m": list(JOINT_OFFSETS), "column1": ["left", "right"],
                "durations_s": [t if math.isfinite(t) else "quasi-static" for t in JOINT_DURATIONS],
                "inertia_sets": JOINT_INERTIAS},
        "closeness": "max(diff_r (eq21_signs) or sum_r (F2_sign_flipped) / diff_max, ratio_min / ratio_n): "
                     "<= 1 reproduces both observations",
        "readings": joint}
    return out, plot


def plot_study(path, summary: dict, plot: dict) -> None:
    """F1/F2 (rms) of both robots and the redundant F1 - F2 versus each input; readings; identity; joint search."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    sty = {"ratio_r": ("C0", "-", "o", "redundant: rms F1 / rms F2"),
           "ratio_n": ("C1", "-", "s", "nonredundant: rms F1 / rms F2"),
           "diff_r": ("C2", "--", "^", "redundant: rms(F1 - F2) / rms(F1, F2)"),
           "sum_r": ("C3", ":", "v", "redundant: rms(F1 + F2) / rms(F1, F2) (F2 sign flipped)")}
    fig, axs = plt.subplots(3, 4, figsize=(17, 11.5))
    axs = axs.ravel()

    def targets(ax):
        ax.axhline(RATIO_MIN, color="C1", lw=0.8, ls=":")
        ax.axhline(DIFF_MAX, color="C2", lw=0.8, ls=":")
        ax.axhspan(RATIO_MIN, 20.0, color="C1", alpha=0.05, lw=0)
        ax.axhspan(0.01, DIFF_MAX, color="C2", alpha=0.05, lw=0)
        ax.set_yscale("log")
        ax.set_ylim(0.05, 12.0)
        ax.grid(alpha=0.3, which="both")

    for ax, (name, sw) in zip(axs, summary["sweeps"].items()):
        x = np.array(sw["values"])
        ax.axvspan(*sw["plausible"], color="0.9", alpha=0.7, lw=0)
        if sw["shipped"] is not None:
            ax.axvline(sw["shipped"], color="k", lw=0.8, ls="--")
        for k in ("ratio_r", "ratio_n", "diff_r"):
            c, ls, mk, _ = sty[k]
            ax.plot(x, sw[k], color=c, ls=ls, marker=mk, ms=4)
        if "factor" in name or name == "duration_s":
            ax.set_xscale("log")
        ax.set_xlabel(sw["label"])
        ax.set_title(sw["label"].replace(" (m)", "").replace(" (s)", ""), fontsize=9)
        targets(ax)
    ax = axs[9]
    names = list(summary["readings"])
    for j, k in enumerate(("ratio_r", "ratio_n", "diff_r", "sum_r")):
        c, _, mk, _ = sty[k]
        ax.plot(np.arange(len(names)) + 0.12 * (j - 1.5), [max(summary["readings"][n][k], 0.056) for n in names],
                ls="none", marker=mk, color=c, ms=6)
    ax.set_xticks(np.arange(len(names)), names, rotation=35, ha="right", fontsize=8)
    ax.set_title("what Fig. 2-3 might plot (shipped inputs)", fontsize=9)
    targets(ax)
    ax = axs[10]
    t, f_r, f_n = plot["t"], plot["f_r"], plot["f_n"]
    ax.plot(t, f_r.sum(axis=1), color="C0", label="F1 + F2, redundant")
    ax.plot(t, f_n.sum(axis=1), color="C1", ls="--", label="F1 + F2, nonredundant")
    ax.plot(t, f_r[:, 0] - f_r[:, 1], color="C0", lw=0.8, alpha=0.6, label="F1 - F2, redundant")
    ax.plot(t, f_n[:, 0] - f_n[:, 1], color="C1", lw=0.8, ls="--", alpha=0.6, label="F1 - F2, nonredundant")
    ax.axhline(0.0, color="k", lw=0.5)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("force (N)")
    ax.set_title("F1 + F2 = (Omega p)_Y in both robots (eq. 21-22)", fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    ax = axs[11]
    for j, (name, (d, r)) in enumerate(plot["scatter"].items()):
        ax.scatter(d, r, s=2, alpha=0.25, color=f"C{j + 4}", label=name, rasterized=True)
    ax.axvspan(0.0, DIFF_MAX, ymin=0, ymax=1, color="C2", alpha=0.08)
    ax.axvspan(math.sqrt(4.0 - DIFF_MAX ** 2), 2.0, color="C3", alpha=0.08)
    ax.axhline(RATIO_MIN, color="C1", lw=0.8, ls=":")
    ax.set_yscale("log")
    ax.set_ylim(0.03, 12.0)
    ax.set_yticks([0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0], ["0.1", "0.2", "0.5", "1", "2", "5", "10"])
    ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.text(0.02, 0.97, "target, eq. 21 signs", transform=ax.transAxes, fontsize=7, va="top", color="C2")
    ax.text(0.98, 0.97, "target, F2 flipped\n(sum < %g)" % DIFF_MAX, transform=ax.transAxes, fontsize=7, va="top",
            ha="right", color="C3")
    ax.set_xlim(0.0, 2.0)
    ax.set_xlabel("redundant: rms(F1 - F2) / rms(F1, F2)")
    ax.set_ylabel("nonredundant: rms F1 / rms F2")
    ax.set_title("joint search, plausible box: target = shaded and above 2", fontsize=9)
    ax.legend(fontsize=7, markerscale=4, loc="lower center")
    ax.grid(alpha=0.3, which="both")
    handles = [plt.Line2D([], [], color=c, ls=ls, marker=mk) for c, ls, mk, _ in sty.values()]
    handles += [plt.Rectangle((0, 0), 1, 1, color="0.9"), plt.Line2D([], [], color="k", ls="--")]
    handles += [plt.Rectangle((0, 0), 1, 1, color=c, alpha=0.15) for c in ("C1", "C2")]
    labels = [v[3] for v in sty.values()] + ["plausible range", "shipped value",
                                             f"paper, Fig. 3: nonredundant F1/F2 > {RATIO_MIN:g}",
                                             f"paper, Fig. 2: redundant F1 - F2 small (< {DIFF_MAX:g})"]
    fig.suptitle("Wu et al. 2009, Fig. 2-3: slider forces F1, F2 versus the inputs the paper does not give "
                 "(one at a time about the shipped values; rms over the motion)", y=0.995, fontsize=11)
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.975), ncol=4, fontsize=8.5, frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 0.935))
    fig.savefig(path, dpi=100)
    plt.close(fig)
