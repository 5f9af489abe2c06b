"""pkm_control: model-based control of parallel kinematic machines (ROS-free core + ROS 2 nodes)."""

__version__ = "0.1.0"
