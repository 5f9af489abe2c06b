"""Trajectory generation (ROS-free): time-scaling profiles and task-space trajectories.

profiles.py  s(t) from 0 to 1 with derivatives: parabolic, trapezoidal, sine-on-ramp and asymmetric
             sine-on-ramp (Codourey), 3rd-order trigonometric spline (Lopes), quintic; ``PROFILES``,
             ``profile_peaks``, ``profile_integral``
paths.py     ``TaskTrajectory`` and PointToPoint, Sequence, Waypoints, Circle, SemiEllipse, FourierTrajectory;
             ``WaypointTrajectory`` (plain coordinate vectors)
spec.py      ``trajectory_from_spec`` (dict/YAML/goal message), ``check_reachable``,
             ``palida_benchmark_circle``
"""

from .paths import (Circle, FourierTrajectory, PointToPoint, SemiEllipse, Sequence, TaskTrajectory,
                    WaypointTrajectory, Waypoints)
from .profiles import (PROFILE_OPTIONS, PROFILES, ProfilePeaks, asymmetric_sine_on_ramp, parabolic,
                       profile_function, profile_integral, profile_peaks, quintic, sine_on_ramp, trapezoidal,
                       trig_spline3, trig_spline3_peaks)
from .spec import check_reachable, home_pose, palida_benchmark_circle, trajectory_from_spec

__all__ = ["Circle", "FourierTrajectory", "PROFILES", "PROFILE_OPTIONS", "PointToPoint", "ProfilePeaks", "SemiEllipse",
           "Sequence", "TaskTrajectory", "WaypointTrajectory", "Waypoints", "asymmetric_sine_on_ramp",
           "check_reachable", "home_pose", "palida_benchmark_circle", "parabolic", "profile_function",
           "profile_integral", "profile_peaks", "quintic", "sine_on_ramp", "trajectory_from_spec", "trapezoidal",
           "trig_spline3", "trig_spline3_peaks"]
