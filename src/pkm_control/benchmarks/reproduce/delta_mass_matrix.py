"""Codourey 1998 (seed 002), Figs. 4-5: the DELTA's 3x3 mass matrix over two horizontal slices.

The slices lie at z = -230 mm (Fig. 4) and z = -350 mm (Fig. 5). Each covers x, y in
[-250, +250] mm on a 26 x 26 grid: the paper's sample numbers 0..25, 20 mm apart.
The matrix is A, "the inertia seen from the motor" (joint space, kg m^2).

The paper plots the mass matrix of eq. 50 (the simplified model: "the shape of
this mass matrix is shown in Figures 4 and 5"). We plot it like the paper (3x3
surfaces, but over x, y in mm and each on its own scale), the full model of eq. 47 (exact for the
config, heatmaps), and their difference. For each slice and model we give the max/min ratio of every diagonal
inertia. The paper says "the ratio between the maximum and minimum inertias is
about 2", with more variation at the upper slice and off-diagonal coupling of the
same order as the diagonal. It also prints the simplified-vs-full error table
over random workspace states (``simplification_error``).

The paper gives no link lengths or masses. Ours are the representative values of
config/delta.yaml, so the numbers can only match the paper's qualitatively.
"""

from __future__ import annotations

import csv
import pathlib
import time

import numpy as np

from ...errors import PkmError
from ...kinematics.task_space import Pose
from . import finish

SLICES_MM = (-230.0, -350.0)          # Fig. 4, Fig. 5
HALF_WIDTH_MM = 250.0
N_GRID = 26                           # sample numbers 0..25 (paper's axes)
PAPER_RATIO = 2.0                     # "the ratio between the maximum and minimum inertias is about 2"
IJ = [(i, j) for i in range(3) for j in range(3)]
UNIT = "kg m$^2$"                     # of A, for the plots


def _slice(form, z, grid):
    """Full (eq. 47) and simplified (eq. 50) A over the grid; NaN where unreachable."""
    n = len(grid)
    Af = np.full((n, n, 3, 3), np.nan)
    As = np.full((n, n, 3, 3), np.nan)
    Ap = np.full((n, n, 3, 3), np.nan)        # eq. 50 as printed (m_b/2 in I_bt)
    Al = np.full((n, n, 3, 3), np.nan)        # eq. 47 as printed (non-symmetric J_u^T J)
    kin = form.kin
    dI = form.I_bt_printed - form.I_bt
    for ix, x in enumerate(grid):
        for iy, y in enumerate(grid):
            pose = Pose(np.array([x, y, z]), np.eye(3))
            try:
                kin.inverse(pose)                           # reachable with every joint limit
                Af[ix, iy] = form.joint_mass_matrix(pose, "full")
                As[ix, iy] = form.joint_mass_matrix(pose, "simplified")
                Al[ix, iy] = form.joint_mass_matrix(pose, "full", literal=True)
            except PkmError:
                continue
            Ap[ix, iy] = As[ix, iy] + dI * np.eye(3)
    return Af, As, Ap, Al


def _ratios(A):
    d = np.stack([A[..., k, k] for k in range(3)])
    return [float(np.nanmax(d[k]) / np.nanmin(d[k])) for k in range(3)], float(np.nanmax(d) / np.nanmin(d))


def matrix_figure(A, grid_mm, title, surface=False, diverging=False):
    """Figure of 3x3 panels of A (kg m^2) over the x-y grid in mm: surfaces (the paper's Figs. 4-5) or heatmaps.

    Each panel has its own scale (z axis and colours), so the small coupling terms are not flattened
    by the diagonal ones; a diverging map is symmetric about zero. Each surface is seen from the side
    that shows its largest deviation from the median: a peak from the opposite side, a dip from its
    own (one common view hides the peak of one diagonal term behind the rest of its surface).
    """
    import matplotlib.pyplot as plt
    X, Y = np.meshgrid(grid_mm, grid_mm, indexing="ij")
    extent = [grid_mm[0], grid_mm[-1], grid_mm[0], grid_mm[-1]]
    fig = plt.figure(figsize=(13, 11.5) if surface else (11, 10), layout="constrained")
    for (i, j) in IJ:
        Z = A[..., i, j]
        m = np.nanmax(np.abs(Z))
        colours = {"cmap": "RdBu_r", "vmin": -m, "vmax": m} if diverging else {"cmap": "viridis"}
        name = f"A{i + 1}{j + 1}"
        if surface:
            ax = fig.add_subplot(3, 3, 3 * i + j + 1, projection="3d")
            ax.plot_surface(X, Y, Z, linewidth=0.15, edgecolor="k", antialiased=True, **colours)
            ax.set_zlabel(f"{name} [{UNIT}]", fontsize=8, labelpad=9)
            d = Z - np.nanmedian(Z)
            k = np.unravel_index(np.nanargmax(np.abs(d)), Z.shape)
            azim = np.degrees(np.arctan2(Y[k], X[k]))
            ax.view_init(elev=30, azim=azim + 180.0 if d[k] > 0 else azim)
            ax.set_box_aspect(None, zoom=0.85)                  # room for the z label inside the panel
        else:
            ax = fig.add_subplot(3, 3, 3 * i + j + 1)
            im = ax.imshow(Z.T, origin="lower", extent=extent, **colours)       # rows = y, columns = x
            fig.colorbar(im, ax=ax, shrink=0.8, label=UNIT).ax.tick_params(labelsize=7)
        ax.set_title(name, fontsize=10)
        ax.set_xlabel("x [mm]", fontsize=8)
        ax.set_ylabel("y [mm]", fontsize=8)
        ax.tick_params(labelsize=7)
    fig.suptitle(title, fontsize=11)
    return fig


def run(out_dir: pathlib.Path, progress: bool = True) -> dict:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ...dynamics import robot_dynamics
    from ...dynamics.virtual_work import Formulation, format_simplification_error, simplification_error

    t0 = time.perf_counter()
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    form = Formulation(robot_dynamics("delta"))
    grid_mm = np.linspace(-HALF_WIDTH_MM, HALF_WIDTH_MM, N_GRID)
    grid = grid_mm / 1000.0
    summary = {"robot": "delta", "paper": "Codourey 1998, IJRR 17(12), Figs. 4-5, eq. 47/50/57/58",
               "grid": {"x_mm": [grid_mm[0], grid_mm[-1]], "y_mm": [grid_mm[0], grid_mm[-1]], "n": N_GRID},
               "parameters": {"I_m": form.I_m, "I_b (eq. 41)": form.I_b, "I_bt (eq. 50)": form.I_bt,
                              "I_bt as printed (m_b/2)": form.I_bt_printed, "m_n": form.m_n,
                              "m_ab": form.m_ab, "m_nt": form.m_nt, "L_A": form.LA, "L_B": form.LB},
               "paper_ratio_max_min": PAPER_RATIO, "slices": {}, "files": []}
    rows = []
    lines = ["Codourey Figs. 4-5: DELTA mass matrix A (joint space, kg m^2) over x, y in +-250 mm",
             f"  parameters (config/delta.yaml, representative): I_b = {form.I_b:.5g}, I_bt = {form.I_bt:.5g} "
             f"(printed eq. 50 with m_b/2: {form.I_bt_printed:.5g}), m_n = {form.m_n:g}, m_ab = {form.m_ab:g} kg",
             f"  {'slice':>9s} {'model':24s} {'A11 max/min':>12s} {'A22':>7s} {'A33':>7s} {'all diag':>9s} "
             f"{'paper':>6s} {'|Aij|/Aii max':>14s} {'reach':>6s}"]
    for z_mm in SLICES_MM:
        z = z_mm / 1000.0
        Af, As, Ap, Al = _slice(form, z, grid)
        reach = float(np.isfinite(Af[..., 0, 0]).mean())
        tag = f"z{int(round(-z_mm))}"
        sl = {"z_mm": z_mm, "reachable_fraction": reach}
        for name, A in (("full eq. 47", Af), ("simplified eq. 50", As), ("eq. 50 as printed (m_b/2)", Ap)):
            per, allr = _ratios(A)
            diag_max = np.nanmax(np.stack([A[..., k, k] for k in range(3)]))
            off = np.nanmax(np.abs(np.stack([A[..., i, j] for (i, j) in IJ if i != j])))
            sl[name] = {"diag_ratio_max_min": per, "all_diag_ratio_max_min": allr,
                        "diag_range": [float(np.nanmin(A[..., 0, 0])), float(np.nanmax(A[..., 0, 0]))],
                        "max_offdiag_over_max_diag": float(off / diag_max)}
            lines.append(f"  {z_mm:7.0f}mm {name:24s} {per[0]:12.3f} {per[1]:7.3f} {per[2]:7.3f} {allr:9.3f} "
                         f"{'~' + str(PAPER_RATIO):>6s} {off / diag_max:14.3f} {reach:6.2f}")
        dA = As - Af
        rel = np.abs(dA) / np.nanmax(np.abs(Af), axis=(2, 3), keepdims=True)
        sl["simplified_minus_full"] = {"max_abs": float(np.nanmax(np.abs(dA))),
                                       "max_rel_to_max_entry": float(np.nanmax(rel)),
                                       "diag_max_rel": float(np.nanmax(np.abs(np.stack([dA[..., k, k] / Af[..., k, k]
                                                                                        for k in range(3)]))))}
        sl["literal_eq47_max_asymmetry"] = float(np.nanmax(np.abs(Al - np.swapaxes(Al, -1, -2))))
        summary["slices"][tag] = sl
        for ix, x in enumerate(grid_mm):
            for iy, y in enumerate(grid_mm):
                rows.append([z_mm, x, y, ix, iy, int(np.isfinite(Af[ix, iy, 0, 0]))]
                            + [Af[ix, iy, i, j] for (i, j) in IJ] + [As[ix, iy, i, j] for (i, j) in IJ])
        files = [f"delta_mass_matrix_{tag}_eq50.png", f"delta_mass_matrix_{tag}_full.png",
                 f"delta_mass_matrix_{tag}_eq50_minus_full.png"]
        figs = [matrix_figure(As, grid_mm, f"Codourey Fig. {4 if z_mm == -230 else 5}: mass matrix A (eq. 50) at "
                              f"z = {z_mm:.0f} mm; each panel on its own scale and view\n(the paper's axes are "
                              "sample numbers 0..25, i.e. x, y = -250..+250 mm)", surface=True),
                matrix_figure(Af, grid_mm, f"full mass matrix A (eq. 47, exact for the config), z = {z_mm:.0f} mm; "
                              "each panel on its own scale"),
                matrix_figure(dA, grid_mm, f"simplified (eq. 50) minus full (eq. 47), z = {z_mm:.0f} mm; "
                              "each panel on its own scale", diverging=True)]
        for f, fig in zip(files, figs):
            fig.savefig(out_dir / f, dpi=90)
            plt.close(fig)
        summary["files"] += files
    header = (["z_mm", "x_mm", "y_mm", "x_sample", "y_sample", "reachable"]
              + [f"full_A{i + 1}{j + 1}" for (i, j) in IJ] + [f"eq50_A{i + 1}{j + 1}" for (i, j) in IJ])
    with open(out_dir / "delta_mass_matrix.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    summary["files"].append("delta_mass_matrix.csv")

    a, b = (summary["slices"][t]["simplified eq. 50"]["all_diag_ratio_max_min"] for t in ("z230", "z350"))
    summary["more_variation_at_upper_slice"] = bool(a > b)
    rep = simplification_error(200, np.random.default_rng(0), form)
    summary["simplification_error"] = rep
    with open(out_dir / "delta_simplification_error.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["quantity", "max", "rms", "median"])
        for k in ("mass_matrix", "mass_matrix_diagonal", "tau", "tau_inertial", "tau_gravity"):
            w.writerow([k, rep[k]["max"], rep[k]["rms"], rep[k]["median"]])
    summary["files"].append("delta_simplification_error.csv")
    lines.append(f"  more variation at the upper slice (paper: yes): {'yes' if a > b else 'no'} "
                 f"(all-diagonal max/min {a:.3f} at -230 mm vs {b:.3f} at -350 mm)")
    lines.append(format_simplification_error(rep))
    return finish(summary, lines, out_dir, t0, progress)
