"""ROS 2 interface packages without a PyPI wheel (tf2_msgs, control_msgs): their upstream
definitions (one folder each) and the builder that generates and compiles them into a
pip-installed ROS 2 environment (build.py, ``mbd-ros build-interfaces``). No ROS import here:
the library works without ROS."""
