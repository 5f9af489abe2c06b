"""rclpy nodes of the control graph: the only package that imports rclpy.

Each module is one executable (``python -m pkm_control.nodes.<name>`` or the console script
of the same name): trajectory_generator, inverse_kinematics, computed_force, joint_controller,
hardware. ``bringup`` starts all five as processes from the same YAML (``pkm bringup``), and
``common`` holds the shared settings, message conversion, validation and diagnostics.

Graph (standard messages only):

  trajectory_generator --/platform_trajectory--> inverse_kinematics --/joint_references--> joint_controller
                       \\------------------------> computed_force   --/feedforward------->  |
  hardware --/joint_states--> joint_controller --/<controller_name>/commands--> hardware;  hardware --/clock--> all
"""

#: the five node executables, in start order (the clock source last, so every subscriber is up)
NODES = ("trajectory_generator", "inverse_kinematics", "computed_force", "joint_controller", "hardware")
