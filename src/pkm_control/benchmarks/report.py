"""One way for every ``pkm bench``, ``pkm demo`` and ``pkm reproduce`` driver to report its figures.

A driver measures, then hands its figures here:

* ``Provenance``: the machine (host name, CPU model, core count, Python, date) and the command of the run,
  taken once per run and given to both the table and the JSON, so the two name the same run;
* ``Table``: a result table, a title, a line naming the robot, the machine and the command, a header of column
  names and one of units, and the rows, each column as wide as its widest cell (numbers right-aligned);
* ``document`` / ``print_json`` / ``write_json``: the same figures machine-readable (``--json`` and results
  files), with the same machine block;
* ``ratio``: a figure against the baseline measured in the same run, the "x over baseline" columns.
"""

from __future__ import annotations

import datetime
import json
import math
import os
import platform
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np


def ratio(baseline, new, higher_is_better: bool = False) -> float | None:
    """How many times the new figure beats the baseline measured in the same run.

    baseline / new for a cost (a time, an error), new / baseline for a rate (``higher_is_better``). None (printed
    "-", JSON null) where the new figure is zero, where a rate's baseline is zero, or where either figure is missing
    or not finite: a ratio to zero or to an unknown says nothing.
    """
    if baseline is None or new is None:
        return None
    baseline, new = float(baseline), float(new)
    if not (math.isfinite(baseline) and math.isfinite(new)) or new == 0 or (higher_is_better and baseline == 0):
        return None
    return new / baseline if higher_is_better else baseline / new


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


@dataclass(frozen=True)
class Provenance:
    """The machine and the command of one run: what a figure was measured on, and how to measure it again."""

    machine: dict
    command: str

    @classmethod
    def now(cls, argv=None) -> Provenance:
        """This machine, the date (UTC) and the command as typed (``sys.argv``, the program by its file name)."""
        argv = sys.argv if argv is None else argv
        return cls({"host": platform.node(), "cpu": _cpu_model(), "cores": os.cpu_count(),
                    "python": platform.python_version(),
                    "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")},
                   shlex.join([Path(argv[0]).name, *argv[1:]]))

    @classmethod
    def of(cls, data: dict) -> Provenance:
        """The provenance of a document (``document``): its machine block and command."""
        return cls(data["machine"], data["command"])

    def line(self, robot: str) -> str:
        m = self.machine
        return (f"robot {robot}; {m['host']} ({m['cpu']}, {m['cores']} cores), Python {m['python']}, {m['date']}; "
                f"{self.command}")


def document(data, provenance: Provenance) -> dict:
    """The JSON form of a driver's figures: the machine block and the command, then the data (a list as ``rows``)."""
    body = dict(data) if isinstance(data, dict) else {"rows": list(data)}
    return {"machine": provenance.machine, "command": provenance.command, **body}


def _plain(o):
    if isinstance(o, (np.ndarray, np.generic)):
        return o.tolist()
    raise TypeError(f"{type(o).__name__} is not JSON serializable")


def dumps(doc: dict) -> str:
    return json.dumps(doc, indent=2, default=_plain)


def print_json(data, provenance: Provenance) -> dict:
    """``--json``: the document on stdout; returns it."""
    doc = document(data, provenance)
    print(dumps(doc))
    return doc


def write_json(path: Path, data, provenance: Provenance) -> dict:
    """A results file: the document written to ``path``; returns it."""
    doc = document(data, provenance)
    Path(path).write_text(dumps(doc))
    return doc


@dataclass(frozen=True)
class Column:
    """A column: its name, unit, the format spec of its numbers ("" for text), least width, alignment."""

    name: str
    unit: str = ""
    fmt: str = ""
    width: int = 0
    align: str = ">"


def cell(value, fmt: str = "") -> str:
    """A value as a table prints it: "-" for None (a figure not measured, a ratio not defined)."""
    return "-" if value is None else format(value, fmt)


@dataclass(frozen=True)
class Table:
    """A result table: title, robot, columns and rows of values (one per column), and lines of notes after."""

    title: str
    robot: str
    columns: tuple
    rows: tuple
    notes: tuple = ()

    def text(self, provenance: Provenance) -> str:
        cells = [[cell(v, c.fmt) for v, c in zip(row, self.columns, strict=True)] for row in self.rows]
        widths = [max(c.width, len(c.name), len(c.unit), *(len(r[i]) for r in cells))
                  for i, c in enumerate(self.columns)]

        def line(texts):
            return " ".join(f"{t:{c.align}{w}}" for t, c, w in zip(texts, self.columns, widths)).rstrip()

        lines = [self.title, provenance.line(self.robot), line([c.name for c in self.columns])]
        if any(c.unit for c in self.columns):
            lines.append(line([c.unit for c in self.columns]))
        return "\n".join(lines + [line(r) for r in cells] + list(self.notes))
