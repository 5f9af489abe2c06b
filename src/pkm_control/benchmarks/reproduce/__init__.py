"""Reproductions of the reference papers' figures and tables (``pkm reproduce NAME``).

Each module has ``run(out_dir: pathlib.Path, progress: bool = True) -> dict``: it
writes PNG plots and CSV data into out_dir, prints the key figures beside the
paper's, and returns a JSON-able summary.
"""

from __future__ import annotations

import importlib
import time

from ..report import Provenance, document

REPRODUCTIONS = {
    "lopes": ("pkm_control.benchmarks.reproduce.lopes",
              "Lopes: P1 -> P2 -> P1 with 3rd-order trigonometric splines; actuator motion, forces, contributions"),
    "planar_redundant": ("pkm_control.benchmarks.reproduce.planar_redundant",
                         "Wu et al.: driving forces of the redundant (minimum norm) and non-redundant robots"),
    "delta-mass-matrix": ("pkm_control.benchmarks.reproduce.delta_mass_matrix",
                          "Codourey: 3x3 mass matrix over slices z = -230 / -350 mm; simplified-model error"),
    "delta-regulators": ("pkm_control.benchmarks.reproduce.delta_regulators",
                         "Codourey: tracking errors of regulators 1-4 and the mass-matrix decoupling (Fig. 7)"),
    "stewart-control": ("pkm_control.benchmarks.reproduce.stewart_control",
                        "Taghirad: every motion law; a +-20 % perturbed plant, noisy encoders, the exact model"),
    "stewart-force": ("pkm_control.benchmarks.reproduce.stewart_force",
                      "Taghirad: direct force control (approach, 50 N ramp and hold, slide, release), a stiffness "
                      "sweep, impedance vs its design"),
    "palida-base-parameters": ("pkm_control.benchmarks.reproduce.palida_base_parameters",
                               "Abdellatif: base parameters derived numerically beside Table I"),
}


#: reproductions with a short smoke-test run (``quick``: not the documented numbers)
QUICK = frozenset({"stewart-control", "stewart-force"})


def run(name: str, out_dir, progress: bool = True, quick: bool = False) -> dict:
    from pathlib import Path

    from ...errors import InvalidInputError

    module, _ = REPRODUCTIONS[name]
    if quick and name not in QUICK:
        raise InvalidInputError(f"reproduction {name!r} has no quick run (those that have: {sorted(QUICK)})")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return importlib.import_module(module).run(out, progress=progress, **({"quick": True} if quick else {}))


def finish(summary: dict, lines: list, out_dir, t0: float, progress: bool) -> dict:
    """The common end of a reproduction: its run time and files in ``summary`` and on the last text line, the
    machine and the command (``report.Provenance``) in ``summary`` and on the line after the title (naming
    ``summary["robot"]``), the text printed when ``progress`` and kept as ``summary["text"]``."""
    provenance = Provenance.now()
    summary["seconds"] = time.perf_counter() - t0
    lines.insert(1, provenance.line(summary["robot"]))
    lines.append(f"  files in {out_dir}: {', '.join(summary['files'])}  ({summary['seconds']:.1f} s)")
    if progress:
        print("\n".join(lines))
    summary.update(document(summary, provenance), text="\n".join(lines))
    return summary
