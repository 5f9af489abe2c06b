"""Robot descriptions: config YAML -> xacro URDF + closures -> pinocchio model."""

from .loader import (Closure, ClosedLoopModel, closure_bias, closure_jacobian, closure_jacobian_dot, closure_residual,
                     closure_residual_and_jacobian, constraint_models, load_model)
from .robots import cached_per_robot, load_robot, robot_config, robot_names, robot_urdf, robot_variants
from .spec import RobotSpec, RobotSpecWarning, parse_spec

__all__ = ["Closure", "ClosedLoopModel", "closure_bias", "closure_jacobian", "closure_jacobian_dot", "closure_residual",
           "closure_residual_and_jacobian", "constraint_models", "load_model", "cached_per_robot", "load_robot",
           "robot_config", "robot_names", "robot_urdf", "robot_variants", "RobotSpec", "RobotSpecWarning", "parse_spec"]
