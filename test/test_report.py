"""benchmarks/report.py: the one table, JSON and ratio of every ``pkm bench``, ``pkm demo`` and ``pkm reproduce``."""

import datetime
import json
import math
import os
import platform

import numpy as np
import pytest

from pkm_control.benchmarks import report
from pkm_control.benchmarks.report import Column, Provenance, Table, cell, ratio

MACHINE = {"host": "bench-host", "cpu": "Test CPU 9000", "cores": 2, "python": "3.11.7",
           "date": "2026-01-02 03:04:05 UTC"}
PROVENANCE = Provenance(MACHINE, "pkm bench kinematics --samples 2000")


@pytest.mark.parametrize("baseline,new,higher,expected", [
    (10.0, 2.0, False, 5.0),            # a cost: baseline / new
    (2.0, 10.0, True, 5.0),             # a rate: new / baseline
    (3.0, 12.0, False, 0.25),           # worse than the baseline: below 1
    (0.0, 4.0, False, 0.0),
    (np.float64(7.0), np.float64(2.0), False, 3.5),
])
def test_ratio_over_the_baseline(baseline, new, higher, expected):
    assert ratio(baseline, new, higher_is_better=higher) == expected


@pytest.mark.parametrize("baseline,new,higher", [
    (5.0, 0.0, False), (5.0, 0.0, True), (0.0, 5.0, True),       # the new figure zero; a rate's baseline zero
    (None, 1.0, False), (1.0, None, False), (math.nan, 1.0, False), (1.0, math.nan, True), (math.inf, 1.0, False),
])
def test_no_ratio_where_the_new_figure_is_zero_or_a_figure_unknown(baseline, new, higher):
    assert ratio(baseline, new, higher_is_better=higher) is None
    assert cell(ratio(baseline, new, higher_is_better=higher), ".1f") == "-"


def _table():
    columns = (Column("robot", align="<"), Column("IK+J", "us", ".1f"), Column("batch", "/s", ".3g"),
               Column("x generic", "", ".1f", width=12), Column("note", align="<"))
    rows = (("palida", 31.44, 8.61e4, ratio(382.0, 31.44), "met"),
            ("planar_redundant (nonredundant)", 1234.56, 1.1e6, ratio(10.0, 0.0), ""),
            ("delta", 2.0, 12.0, ratio(190.3, 29.2), "TARGETS MISSED"))
    return Table("a benchmark", "palida, planar_redundant, delta", columns, rows, ("a note",))


def test_table_columns_line_up():
    lines = _table().text(PROVENANCE).splitlines()
    assert lines[0] == "a benchmark" and lines[-1] == "a note"
    header, units, *body = lines[2:-1]
    assert len(body) == 3 and all(line == line.rstrip() for line in lines)
    name = "planar_redundant (nonredundant)"
    # the first column as wide as its widest cell; each after it one space on
    ik_end = len(name) + 1 + len("1234.6")
    batch_end = ik_end + 1 + len("8.61e+04")
    x_end = batch_end + 1 + 12                       # the least width of x generic holds
    note = x_end + 1
    assert header == f"{'robot':{len(name)}s} {'IK+J':>6s} {'batch':>8s} {'x generic':>12s} note"
    assert units[ik_end - 2:ik_end] == "us" and units[batch_end - 2:batch_end] == "/s" and len(units) == batch_end
    # numbers right-aligned on the column's edge, text left-aligned; "-" where the ratio is not defined
    for line, cells in zip(body, (("palida", "31.4", "8.61e+04", "12.2", "met"),
                                  (name, "1234.6", "1.1e+06", "-", ""),
                                  ("delta", "2.0", "12", "6.5", "TARGETS MISSED"))):
        assert line.startswith(cells[0] + " ")
        for text, end in zip(cells[1:4], (ik_end, batch_end, x_end)):
            assert line[end - len(text) - 1:end] == " " + text
        assert line[note:] == cells[4]


def test_table_names_the_robot_the_machine_and_the_command():
    line = _table().text(PROVENANCE).splitlines()[1]
    assert line == ("robot palida, planar_redundant, delta; bench-host (Test CPU 9000, 2 cores), Python 3.11.7, "
                    "2026-01-02 03:04:05 UTC; pkm bench kinematics --samples 2000")


def test_a_table_refuses_a_row_of_the_wrong_length():
    with pytest.raises(ValueError):
        Table("t", "palida", (Column("a"), Column("b")), ((1.0,),)).text(PROVENANCE)


def test_the_machine_block_of_this_machine():
    p = Provenance.now(["/work/main/.venv/bin/pkm", "reproduce", "stewart-control", "--out", "my results"])
    assert set(p.machine) == {"host", "cpu", "cores", "python", "date"}
    assert p.machine["host"] == platform.node() and p.machine["cores"] == os.cpu_count()
    assert p.machine["python"] == platform.python_version() and p.machine["cpu"]
    datetime.datetime.strptime(p.machine["date"], "%Y-%m-%d %H:%M:%S UTC")
    assert p.command == "pkm reproduce stewart-control --out 'my results'"     # as a shell takes it back


def test_json_round_trip_with_the_machine_block(tmp_path, capsys):
    data = {"robot": "palida", "ik_us": np.float64(31.4), "q": np.array([0.1, 0.2]), "ratio": ratio(1.0, 0.0)}
    plain = {"robot": "palida", "ik_us": 31.4, "q": [0.1, 0.2], "ratio": None}
    doc = report.print_json(data, PROVENANCE)
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads(report.dumps(doc)) == {"machine": MACHINE, "command": PROVENANCE.command, **plain}
    assert Provenance.of(printed) == PROVENANCE
    # a list of rows (the speed benchmarks) under "rows"; a results file holds the same document
    written = report.write_json(tmp_path / "r.json", [plain, plain], PROVENANCE)
    assert json.loads((tmp_path / "r.json").read_text()) == written == {"machine": MACHINE,
                                                                        "command": PROVENANCE.command,
                                                                        "rows": [plain, plain]}


def test_json_refuses_what_it_cannot_write():
    with pytest.raises(TypeError, match="object"):
        report.dumps({"x": object()})


def test_the_simulation_benchmark_prints_its_ratio_and_json(monkeypatch, capsys):
    """bench_simulation through report: the speed-up column is the generic median step over the compiled one."""
    from pkm_control.benchmarks import speed

    def fake(robot, variant, steps):
        return {"robot": robot, "variant": variant, "dt": 5e-4, "steps": steps, "sign_eps": 2e-3,
                "compiled": {"step": (10.0, 20.0), "period": (12.0, 25.0)},
                "generic": {"step": (400.0, 500.0), "period": (402.0, 510.0)},
                "robot_step": (300.0, 350.0), "robot_step_compiled": True, "first_step_s": 1.25}

    monkeypatch.setattr(speed, "bench_simulation_robot", fake)
    speed.bench_simulation(["palida"], steps=7)
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("robot palida; ")
    compiled = next(line for line in lines if " compiled " in line).split()
    assert compiled[-1] == "40" and compiled[-5:-1] == ["10.0", "20.0", "12.0", "25.0"]
    assert next(line for line in lines if " generic " in line).split()[-1] == "-"
    speed.bench_simulation(["palida"], steps=7, as_json=True)
    doc = json.loads(capsys.readouterr().out)
    assert doc["rows"][0]["generic"]["step"] == [400.0, 500.0] and set(doc["machine"]) >= {"host", "cpu"}


def test_the_generic_dynamics_table_prints_ratios_and_honest_verdicts(monkeypatch, capsys):
    """bench_dynamics' second table: ID over rnea and FD over constraintDynamics against issue 21's targets (5x with
    an analytic family, 15x with the numeric one, 1.5x), PASS only at or below the target; a robot whose closures
    pinocchio cannot hold has no FD baseline and no verdict."""
    from pkm_control.benchmarks import speed

    def fake_generic(robot, variant):
        rows = []
        for family, id_us, fd_us in (("hexapod_ups", 20.0, 19.0), ("numeric", 60.0, 30.0)):
            cd = None if robot == "five_bar" else 10.0
            rows.append({"robot": robot, "variant": variant, "family": family, "rnea_us": 4.0,
                         "constraint_dynamics_us": cd, "id_us": id_us, "ik_us": 5.0, "fd_us": fd_us,
                         "id_x": id_us / 4.0, "fd_x": None if cd is None else fd_us / cd,
                         "id_x_target": 15.0 if family == "numeric" else 5.0,
                         "fd_x_target": None if cd is None else 1.5,
                         "id_x_analytic": id_us / 20.0 if rows else None,
                         "fd_x_analytic": fd_us / 19.0 if rows else None})
        return rows

    monkeypatch.setattr(speed, "bench_dynamics_robot", lambda robot, variant: {"robot": robot, "variant": variant,
                                                                               "method": None, "friction": False,
                                                                               "generic_id_us": 1.0,
                                                                               "generic_mass_us": 1.0,
                                                                               "generic_fd_us": 1.0,
                                                                               "generic_batch_per_s": 1.0})
    monkeypatch.setattr(speed, "bench_generic_robot", fake_generic)
    speed.bench_dynamics(["palida", "five_bar"])
    lines = [line.split() for line in capsys.readouterr().out.splitlines()]
    rows = [cells for cells in lines if cells[:1] in (["palida"], ["five_bar"]) and len(cells) > 10
            and cells[1] in ("hexapod_ups", "numeric")]
    # palida analytic: 20 / 4 = 5.0 <= 5 PASS; FD 19 / 10 = 1.90 > 1.5 MISS; no analytic family to compare with
    assert rows[0][1:] == ["hexapod_ups", "20.0", "4.0", "5.0", "5.0", "PASS", "5.0", "19.0", "10.0", "1.90", "1.5",
                           "MISS", "-", "-"]
    # palida numeric: 60 / 4 = 15.0 <= 15 PASS; FD 30 / 10 = 3.00 MISS; over the analytic family 60 / 20, 30 / 19
    assert rows[1][5:7] == ["15.0", "PASS"] and rows[1][-3:] == ["MISS", "3.0", "1.6"]
    # five_bar: no constraintDynamics baseline, no FD verdict
    assert rows[2][-6:] == ["-", "-", "-", "-", "-", "-"]
