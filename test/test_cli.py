"""The `pkm` command line: every subcommand, JSON output, units, and errors."""

import json

import numpy as np
import pytest

from pkm_control.cli import main
from pkm_control.kinematics import robot_kinematics


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_help_at_every_level(capsys):
    for argv in ([], ["ik"], ["fk"], ["jacobian"], ["workspace"], ["info"], ["bench"], ["tour"], ["demo"]):
        with pytest.raises(SystemExit) as exc:
            main(argv + ["--help"])
        assert exc.value.code == 0
        assert "usage: pkm" in capsys.readouterr().out


def test_info_lists_robots_and_describes_one(capsys):
    code, out, _ = run(capsys, "info", "--json")
    robots = json.loads(out)["robots"]
    assert code == 0 and {"stewart", "palida", "lopes", "delta", "planar_redundant"} <= set(robots)
    assert "3-6" in robots["stewart"] and "nonredundant" in robots["planar_redundant"]
    code, out, _ = run(capsys, "info", "--robot", "stewart", "--json")
    info = json.loads(out)
    assert info["task_coordinates"] == ["x", "y", "z", "roll", "pitch", "yaw"] and len(info["actuated_joints"]) == 6
    code, out, _ = run(capsys, "info", "--robot", "delta")
    assert code == 0 and "x y z" in out


def test_ik_fk_jacobian_round_trip_through_json(capsys):
    kin = robot_kinematics("stewart", None)
    home = np.asarray(kin.model.config["home"], float)
    x = home + np.array([0.01, -0.02, 0.01, 0.05, -0.03, 0.1])
    code, out, _ = run(capsys, "ik", "--robot", "stewart", "--pose", *map(str, x), "--json")
    ik = json.loads(out)
    assert code == 0 and ik["closure_residual"] <= 1e-12
    qa = [j["position"] for j in ik["joints"] if j["actuated"]]
    assert len(qa) == 6
    code, out, _ = run(capsys, "fk", "--robot", "stewart", "--joints", *map(str, qa), "--json")
    fk = json.loads(out)
    np.testing.assert_allclose([fk["pose"][k] for k in kin.task.names], x, atol=1e-9)
    code, out, _ = run(capsys, "jacobian", "--robot", "stewart", "--pose", *map(str, x), "--json")
    jac = json.loads(out)
    np.testing.assert_allclose(jac["jacobian"], kin.jacobian(kin.task.pose(x)), rtol=1e-12)
    assert jac["singularity"]["classification"] == "regular"


def test_degrees_in_and_out(capsys):
    kin = robot_kinematics("stewart", None)
    home = np.asarray(kin.model.config["home"], float)
    x = home + np.array([0, 0, 0, 0.1, 0.0, 0.2])
    _, rad, _ = run(capsys, "ik", "--robot", "stewart", "--pose", *map(str, x), "--json")
    xd = np.concatenate([x[:3], np.degrees(x[3:])])
    _, deg, _ = run(capsys, "ik", "--robot", "stewart", "--pose", *map(str, xd), "--json", "--deg")
    for jr, jd in zip(json.loads(rad)["joints"], json.loads(deg)["joints"]):
        revolute = not jr["actuated"] and jr["name"] not in ("platform_x", "platform_y", "platform_z")
        expected = np.degrees(jr["position"]) if revolute else jr["position"]
        assert jd["position"] == pytest.approx(expected, rel=1e-12, abs=1e-12)


def test_errors_are_reported_not_raised(capsys):
    code, _, err = run(capsys, "ik", "--robot", "stewart", "--pose", "0", "0", "100", "0", "0", "0")
    assert code == 2 and ("UnreachablePoseError" in err or "JointLimitError" in err)
    code, _, err = run(capsys, "ik", "--robot", "nosuchrobot", "--pose", "0", "0", "1")
    assert code == 2 and "nosuchrobot" in err
    with pytest.raises(SystemExit, match="6 values"):
        main(["ik", "--robot", "stewart", "--pose", "0", "0", "1"])


def test_workspace_with_plot(capsys, tmp_path):
    png = tmp_path / "ws.png"
    code, out, _ = run(capsys, "workspace", "--robot", "delta", "--resolution", "7", "--plot", str(png), "--json")
    res = json.loads(out)
    assert code == 0 and res["samples"] == 49 and 0 < res["reachable_fraction"] <= 1
    assert png.stat().st_size > 1000 and res["plot"] == str(png)


def test_workspace_plot_bare_name_goes_to_results(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, "workspace", "--robot", "delta", "--resolution", "5", "--plot", "ws.pdf", "--json")
    assert code == 0 and json.loads(out)["plot"] == "results/ws.pdf"
    assert (tmp_path / "results" / "ws.pdf").stat().st_size > 1000 and not (tmp_path / "ws.pdf").exists()


def test_workspace_plot_path_errors_are_one_line(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, "workspace", "--robot", "delta", "--resolution", "5", "--plot", "nodir/ws.png")
    assert code == 2 and err.count("\n") == 1 and "nodir/ does not exist" in err
    code, _, err = run(capsys, "workspace", "--robot", "delta", "--resolution", "5", "--plot", "ws.xyz")
    assert code == 2 and err.count("\n") == 1 and "'.xyz'" in err and " png " in err and " pdf " in err
    assert not any(tmp_path.iterdir())                    # nothing written, no results/ created


def test_tour_every_robot_ok(capsys):
    code, out, _ = run(capsys, "tour", "--json")
    rows = json.loads(out)
    assert code == 0 and {r["robot"] for r in rows} >= {"stewart", "palida", "lopes", "delta", "planar_redundant"}
    homes = [r for r in rows if r["pose"] == "home"]
    assert all(r["status"] == "ok" and r["singularity"] == "regular" and r["fk_error"] <= 1e-10 for r in homes)
