"""Physical constants and conventions of the library."""

# Coulomb friction from URDF <dynamics friction=F> is smoothed as F tanh(v / FRICTION_VELOCITY):
# a true sign(v) makes forward dynamics discontinuous at v = 0 and stiff for integrators. Below
# 1e-3 rad/s (or m/s) the friction force fades linearly to zero, like a very stiff viscous term.
# This is the default of mbd_ros.load(friction_velocity=...).
FRICTION_VELOCITY = 1e-3

# Gravity in the root frame (m/s^2), as in Pinocchio and Gazebo.
STANDARD_GRAVITY = (0.0, 0.0, -9.81)

# Joint types whose configuration is a vector space: q (+) v dt = q + v dt (the integrators'
# and rollouts' fast paths; free, spherical and planar joints are Lie groups: RKMK stages).
VECTOR_SPACE_JOINTS = ("revolute", "prismatic", "helical", "cylindrical", "universal")
