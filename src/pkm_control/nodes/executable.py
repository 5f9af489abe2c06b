"""The nodes' console scripts (setup.py), as launch starts them: before a node's modules are imported (rclpy,
pinocchio, numba: seconds under load), a SIGINT ends the process at once, as SIGTERM and SIGHUP do (nothing is built
yet: nothing to stop cleanly; Python's KeyboardInterrupt there was lost in an import lock's callback and the node
went on for launch's 2 s until SIGTERM), and the process ends with its parent. ``runtime.run_node`` then takes the
signals over for the clean stop. This module imports nothing heavy."""

from __future__ import annotations

import importlib
import signal

from ..process import end_with_parent


def run_executable(module: str) -> int:
    """Import ``module`` with the signals' default actions and the parent's death armed, then run its ``main``."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    end_with_parent()
    return importlib.import_module(module).main()


def _node(name: str):
    def main() -> int:
        return run_executable(f"pkm_control.nodes.{name}")
    main.__doc__ = f"The {name} node's executable (module docstring)."
    return main


trajectory_generator = _node("trajectory_generator")
inverse_kinematics = _node("inverse_kinematics")
computed_force = _node("computed_force")
joint_controller = _node("joint_controller")
hardware = _node("hardware")
