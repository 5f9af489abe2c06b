"""Workspace sampling: random reachable poses, slices and volumes with dexterity.

The sampling box is the config's ``workspace: {lower, upper}`` in task
coordinates. Reachability is the family's ``inverse_batch`` (geometry and every
joint limit); dexterity is 1/kappa(J) per reachable sample. ``workspace_figure``
draws it (``pkm workspace --plot``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import MAGNITUDE_LIMIT, InvalidInputError, InvalidModelError, check_number, check_vector, excerpt
from .analysis import dexterity, singularity
from .base import ParallelKinematics
from .task_space import Pose, rpy_to_matrix, rot_z


#: the most samples of one ``sample_workspace`` call: about 250 MB for the batched IK of a hexapod
#: (a 500 x 500 slice, a 63^3 volume), and a minute of dexterity evaluations
SAMPLES_MAX = 250_000


def workspace_box(kin: ParallelKinematics):
    """(lower, upper) task-coordinate box from the config."""
    ws = kin.model.spec.require("workspace", "the workspace box")     # task dimension, lower <= upper: checked
    return ws.lower, ws.upper


def coords_to_arrays(task, X):
    """Batched task coordinates (N, n) -> positions (N, 3), rotations (N, 3, 3)."""
    X = np.asarray(X, float)
    N = X.shape[0]
    if task.kind == "spatial":
        R = np.stack([rpy_to_matrix(*x[3:]) for x in X]) if N else np.zeros((0, 3, 3))
        return X[:, :3].copy(), R
    if task.kind == "translation":
        return X.copy(), np.broadcast_to(np.eye(3), (N, 3, 3)).copy()
    if task.kind == "xy":
        return np.column_stack([X, np.zeros(N)]), np.broadcast_to(np.eye(3), (N, 3, 3)).copy()
    P = np.column_stack([X[:, 0], X[:, 1], np.zeros(N)])
    return P, np.stack([rot_z(task.alpha_sign * a) for a in X[:, 2]]) if N else np.zeros((0, 3, 3))


def random_poses(kin: ParallelKinematics, n: int, rng: np.random.Generator, min_ratio: float = 1e-3,
                 box=None) -> list[Pose]:
    """n random poses in the workspace box that are reachable (all limits) and not near-singular.

    min_ratio: the smallest sigma_min/sigma_max accepted for J_x and J_q.
    """
    lo, hi = box if box is not None else workspace_box(kin)
    out: list[Pose] = []
    for _ in range(200):
        X = lo + (hi - lo) * rng.random((max(4 * n, 64), kin.task.dim))
        P, R = coords_to_arrays(kin.task, X)
        _, ok = kin.inverse_batch(P, R)
        for i in np.flatnonzero(ok):
            pose = Pose(P[i], R[i])
            rep = singularity(kin, pose)
            if min(rep.inverse_ratio, rep.forward_ratio) >= min_ratio:
                out.append(pose)
                if len(out) == n:
                    return out
    raise InvalidModelError(f"could not find {n} reachable regular poses of '{kin.model.name}' "
                            f"in its workspace box (found {len(out)})")


@dataclass(frozen=True)
class WorkspaceResult:
    axes: tuple                 # names of the varied coordinates
    grids: tuple                # 1-D grids of the varied coordinates
    coords: np.ndarray          # (N, n) task coordinates of every sample
    reachable: np.ndarray       # (N,) bool
    dexterity: np.ndarray       # (N,) 1/kappa(J), nan where unreachable

    @property
    def reachable_fraction(self) -> float:
        return float(self.reachable.mean()) if self.reachable.size else 0.0

    def dexterity_stats(self) -> dict:
        """min, mean, median and max of the dexterity over the reachable samples ({} if there is none)."""
        d = self.dexterity[self.reachable]
        if d.size == 0:
            return {}
        return {"min": float(d.min()), "mean": float(d.mean()), "median": float(np.median(d)),
                "max": float(d.max())}


def sample_workspace(kin: ParallelKinematics, vary, fixed, resolution: int, progress=None,
                     scale: float = 1.0) -> WorkspaceResult:
    """Grid over the coordinates named in ``vary``, others at ``fixed`` (task coords).

    The grid spans the config's workspace box scaled by ``scale`` (in (0, MAGNITUDE_LIMIT]) about its
    centre (scale > 1 shows where the reachable set ends); resolution ** len(vary) is at most SAMPLES_MAX.
    progress: optional callable wrapping an iterable (e.g. tqdm) for the dexterity loop.
    """
    names = kin.task.names
    if (not isinstance(vary, (list, tuple)) or not all(isinstance(a, str) for a in vary)
            or not 1 <= len(vary) <= len(names) or len(set(vary)) != len(vary)):
        raise InvalidInputError(f"vary must name 1 to {len(names)} distinct task coordinates of "
                                f"'{kin.model.name}' ({' '.join(names)}), got {excerpt(vary)}")
    for a in vary:
        if a not in names:
            raise InvalidInputError(f"coordinate '{excerpt(a)}' is not a task coordinate of '{kin.model.name}' "
                                    f"({' '.join(names)})")
    fixed = check_vector(f"fixed task coordinates ({' '.join(names)})", fixed, kin.task.dim, MAGNITUDE_LIMIT)
    if isinstance(resolution, bool) or not isinstance(resolution, (int, np.integer)) or resolution < 2:
        raise InvalidInputError(f"resolution must be a whole number >= 2, got {excerpt(resolution)}")
    if int(resolution) ** len(vary) > SAMPLES_MAX:            # int: a numpy integer power wraps around
        raise InvalidInputError(f"{resolution}^{len(vary)} samples exceed the limit {SAMPLES_MAX:,} "
                                f"(workspace.SAMPLES_MAX): lower the resolution")
    scale = check_number("scale", scale)
    if not 0 < scale <= MAGNITUDE_LIMIT:
        raise InvalidInputError(f"scale must be positive and at most {MAGNITUDE_LIMIT:g}, got {scale}")
    lo, hi = workspace_box(kin)
    mid, half = (lo + hi) / 2, (hi - lo) / 2 * scale
    lo, hi = mid - half, mid + half
    idx = [names.index(a) for a in vary]
    grids = tuple(np.linspace(lo[i], hi[i], resolution) for i in idx)
    mesh = np.meshgrid(*grids, indexing="ij")
    X = np.tile(fixed, (mesh[0].size, 1))
    for i, m in zip(idx, mesh):
        X[:, i] = m.ravel()
    P, R = coords_to_arrays(kin.task, X)
    _, ok = kin.inverse_batch(P, R)
    dex = np.full(len(X), np.nan)
    it = np.flatnonzero(ok)
    for i in (progress(it) if progress else it):
        dex[i] = dexterity(kin, Pose(P[i], R[i]))
    return WorkspaceResult(tuple(vary), grids, X, ok, dex)


def workspace_figure(kin: ParallelKinematics, res: WorkspaceResult, deg: bool = False):
    """Dexterity map of a sampled line (1 varied coordinate), slice (2) or volume (3): a matplotlib Figure.

    Axes in m, and rad (deg with ``deg``) for the angles; the colour scale spans the dexterity of the
    reachable samples; the title gives the fixed coordinates. Unreachable samples are left blank.
    """
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator
    from mpl_toolkits.axes_grid1 import make_axes_locatable

    if not 1 <= len(res.axes) <= 3:
        raise InvalidInputError(f"a workspace plot shows 1 to 3 varied coordinates, got {len(res.axes)}: "
                                f"{' '.join(res.axes)}")
    names = list(kin.task.names)
    angular = {names[i] for i in kin.task.angular}

    def unit(a):
        return ("deg" if deg else "rad") if a in angular else "m"

    def values(a, v):
        return np.degrees(v) if deg and a in angular else v

    def label(a):
        return f"{a} [{unit(a)}]"

    fixed = ", ".join(f"{a} = {values(a, res.coords[0, i]):.4g} {unit(a)}"
                      for i, a in enumerate(names) if a not in res.axes)
    d = res.dexterity[res.reachable]
    vmin, vmax = (d.min(), d.max()) if d.size else (None, None)
    cbar_label = "dexterity 1/kappa(J)"
    fig = plt.figure(figsize=(6.4, 5.4))
    if len(res.axes) == 3:
        ax = fig.add_subplot(projection="3d")
        cols = [names.index(a) for a in res.axes]
        sc = ax.scatter(*(values(a, res.coords[res.reachable, c]) for a, c in zip(res.axes, cols)), c=d, s=4,
                        cmap="viridis", vmin=vmin, vmax=vmax)
        ax.set_zlabel(label(res.axes[2]))
        for axis in (ax.xaxis, ax.yaxis, ax.zaxis):
            axis.set_major_locator(MaxNLocator(5))
        fig.colorbar(sc, ax=ax, shrink=0.6, pad=0.12, label=cbar_label + " (unreachable: not drawn)")
    elif len(res.axes) == 2:
        ax = fig.add_subplot()
        g0, g1 = (values(a, g) for a, g in zip(res.axes, res.grids))
        sc = ax.pcolormesh(g0, g1, res.dexterity.reshape(len(g0), len(g1)).T, cmap="viridis", vmin=vmin,
                           vmax=vmax, shading="nearest")
        cax = make_axes_locatable(ax).append_axes("right", size="4%", pad=0.12)    # as tall as the map
        fig.colorbar(sc, cax=cax, label=cbar_label + " (blank: unreachable)")
    else:
        ax = fig.add_subplot()
        ax.plot(values(res.axes[0], res.grids[0]), res.dexterity, ".-")
        ax.set_ylabel(cbar_label + " (gaps: unreachable)")
    ax.set_xlabel(label(res.axes[0]))
    if len(res.axes) > 1:
        ax.set_ylabel(label(res.axes[1]))
        if len({unit(a) for a in res.axes}) == 1:
            ax.set_aspect("equal")
    name = f"{kin.model.name} {kin.model.variant}".strip()
    ax.set_title(f"{name}: {res.reachable_fraction:.0%} of the samples reachable"
                 + (f"\nat {fixed}" if fixed else ""), fontsize=10)
    fig.tight_layout()
    return fig
