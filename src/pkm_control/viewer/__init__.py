"""The browser 3D view (`pkm view`): ``scene`` (shapes, placements, forces, tracking error, paths; no ROS, no
browser), ``browser`` (the viser page and headless-Chromium screenshots), ``replay`` (a recorded run on a time
line). The ROS subscriptions are in ``nodes/viewer.py``."""
