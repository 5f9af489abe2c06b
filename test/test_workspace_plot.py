"""The workspace dexterity map (kinematics.workspace.workspace_figure): units, colour scale, title."""

import matplotlib.pyplot as plt
import numpy as np
import pytest

from pkm_control.errors import InvalidInputError
from pkm_control.kinematics import robot_kinematics
from pkm_control.kinematics.workspace import sample_workspace, workspace_figure


def test_slice_in_metres_with_the_data_range_and_the_fixed_coordinates():
    kin = robot_kinematics("delta")
    home = np.asarray(kin.model.config["home"], float)
    res = sample_workspace(kin, ["x", "y"], home, 9, scale=1.5)
    fig = workspace_figure(kin, res)
    ax, cax = fig.axes
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("x [m]", "y [m]")
    d = res.dexterity[res.reachable]
    assert ax.collections[0].get_clim() == pytest.approx((d.min(), d.max()))     # not 0..1
    assert f"z = {home[2]:.4g} m" in ax.get_title()
    fig.canvas.draw()
    assert cax.get_position().height == pytest.approx(ax.get_position().height, rel=1e-3)   # as tall as the map
    plt.close(fig)


def test_angles_in_degrees_and_volumes():
    kin = robot_kinematics("planar_redundant")
    home = np.asarray(kin.model.config["home"], float)
    res = sample_workspace(kin, ["x", "alpha"], home, 7)
    fig = workspace_figure(kin, res, deg=True)
    ax = fig.axes[0]
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("x [m]", "alpha [deg]")
    edges = ax.collections[0].get_coordinates()[..., 1]                    # cells centred on the grid, in deg
    assert np.ptp(edges) == pytest.approx(np.ptp(np.degrees(res.grids[1])) * 7 / 6)
    assert f"y = {home[1]:.4g} m" in ax.get_title()
    plt.close(fig)
    kin = robot_kinematics("stewart")
    res = sample_workspace(kin, ["x", "y", "z"], np.asarray(kin.model.config["home"], float), 4)
    fig = workspace_figure(kin, res, deg=True)
    ax = fig.axes[0]
    assert ax.get_zlabel() == "z [m]" and "roll = 0 deg, pitch = 0 deg, yaw = 0 deg" in ax.get_title()
    plt.close(fig)
    with pytest.raises(InvalidInputError, match="1 to 3"):
        workspace_figure(kin, sample_workspace(kin, ["x", "y", "z", "yaw"], res.coords[0], 2))
