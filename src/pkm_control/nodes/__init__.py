"""The rclpy nodes of the control graph, one thin node per module and nothing else.

Each module is one executable (``python -m pkm_control.nodes.<name>`` or the console script
of the same name): trajectory_generator, inverse_kinematics, computed_force, joint_controller,
hardware, viewer. What they share is in ``pkm_control.ros`` (parameters, diagnostics and the
runner, message conversion, the hardware behind topics, the QoS of every topic, the topology);
``pkm_control.graph`` starts them as processes (``pkm bringup``) and records and inspects a
running graph.

Graph (standard messages only), hardware: sim (the default; the robot inside joint_controller) or mujoco (MuJoCo as
the robot, inside joint_controller as well):

  trajectory_generator --/platform_trajectory--> inverse_kinematics --/joint_references--> joint_controller
                       \\------------------------> computed_force   --/feedforward------->  | (read, update, write)
  joint_controller --/clock, /joint_states--> all

hardware: topics (a robot in another process, here the ``hardware`` node):

  hardware --/joint_states--> joint_controller --/<controller_name>/commands--> hardware;  hardware --/clock--> all

hardware: ros2_control (the robot is a ros2_control controller manager, or the ``hardware`` node standing in
for one): the same topics (or topic_based_ros2_control's), and joint_controller --/clock--> all
"""
