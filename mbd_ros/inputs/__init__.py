"""Input formats: what a robot is read from, checked and bounded (every error a ModelError naming
the file, the entry and the field).

urdf.py and urdf_elements.py (URDF as mbd_ros reads it), xacro.py with xacro_process.py (xacro
files expanded in a limited child process: xacro is code), yaml_input.py (the capped, safe YAML
reader every section uses) with fields.py (its field checks), closures.py, forces.py and
flexible.py (the `closures:`, `forces:` and `flexible_links:` sections), mimic.py (<mimic> tags),
cli_arguments.py (argparse types of the command lines: a --plot path, a ROS_DOMAIN_ID, a
number in a range, an existing file).
"""
