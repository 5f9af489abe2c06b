"""Trajectory generation: time-scaling profiles and waypoint trajectories."""

from .profiles import WaypointTrajectory, trig_spline3

__all__ = ["WaypointTrajectory", "trig_spline3"]
