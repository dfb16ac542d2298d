"""ROS 2 nodes of mbd_ros: thin rclpy adapters (message -> arrays -> library -> message).

- ``forward_dynamics``: accelerations, joint wrenches and loop-closure wrenches from joint
  states (mode ``observe``), or a simulated plant for hardware-in-the-loop tests that integrates
  the motion from effort commands and publishes ``joint_states`` (mode ``simulate``).
- ``inverse_dynamics``: joint torques for controllers (gravity compensation, feed-forward,
  computed torque) from ``joint_states`` and a reference trajectory point.
- ``reference_publisher``: a small sinusoidal reference trajectory source for the demo.
- ``hil_demo``: runs the three as processes, closing the loop over topics, and reports.

Run one with ``ros2 run mbd_ros <name>`` or ``python -m mbd_ros.nodes.<name>``. This package is
the only part of mbd_ros that imports rclpy; importing ``mbd_ros.nodes`` itself does not.
"""
