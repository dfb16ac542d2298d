"""Compliant contact of a robot with a flat ground: spring-damper normal force and regularised
Coulomb friction, as a force hook of the Simulator / Plant. No ROS imports.

    points = contact_points_from_urdf(robot, urdf)                     # <collision> spheres, boxes
    points = [ContactPoint("FL_FOOT", (0, 0, 0), radius=0.016), ...]   # or declared
    contact = GroundContact(robot, points)                             # parameters below
    plant.add_force(contact)                                           # fn(t, q, v) -> (nv,)

Contact points: a point of a link (link frame) with a radius (a sphere; 0 for a point). From
URDF ``<collision>`` elements: a sphere gives its centre and radius (its lowest point touches
the ground whatever the orientation); a box gives its 8 corners (radius 0). Meshes and
cylinders are not used (declare points for them: e.g. the foot link origins of a legged robot).

For each point, with c its centre in the world (root) frame and n = (0, 0, 1) the ground normal
(the ground is the plane z = ground_height of the root frame):

    penetration  d  = radius - (c_z - ground_height)          (no force when d <= 0)
    normal force f_n = max(0, k d - c_d v_z)                   (spring-damper, never pulling)
    friction     f_t = -mu f_n v_t / sqrt(|v_t|^2 + v_s^2)     (regularised Coulomb)

v the velocity of the contact point (the sphere's lowest point), v_t its horizontal part. The
force f = (f_t, f_n) acts at the contact point c - radius n; it is applied as a link wrench, and
the generalized force is tau_c = J^T f, the backward pass of Newton-Euler with only these
wrenches (mbd_ros.kernels.contact: one numba kernel, no allocation).

Parameters (defaults): ``stiffness`` k [N/m] (default: the robot's weight shared by all points
gives 1 mm of penetration, k = m g / (n_points * 1e-3)), ``damping`` c_d [N s/m] (default:
a damping ratio of 0.1 for the mass share m / n_points on k, 0.2 sqrt(k m / n_points)),
``friction`` mu (0.8), ``slip_velocity`` v_s [m/s] (0.1: below it friction acts as a viscous
damper of mu f_n / v_s, so a loaded foot creeps at a speed that grows with the tangential
load), ``ground_height`` (0).

Explicit integration: the contact is stable while the damping terms stay below 2 m_eff / dt,
where m_eff is the effective mass of the contacting link (a light foot on a soft leg: a few
10 g): at 1 ms that bounds c_d and mu f_n / v_s to ~50 N s/m for a small quadruped (measured on
solo12: c_d = 20 with v_s = 0.01 chatters; the defaults settle). Stiffer, more damped or less
regularised contacts need a smaller step.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model import layout as L
from ..kernels.contact import ground_contact as _ground_contact

GRAVITY_ACCELERATION = 9.81
DEFAULT_PENETRATION = 1e-3     # m: static penetration under the robot's weight (default stiffness)
DEFAULT_FRICTION = 0.8
DEFAULT_SLIP_VELOCITY = 0.1    # m/s
DEFAULT_DAMPING_RATIO = 0.1


@dataclass(frozen=True)
class ContactPoint:
    """A sphere of `radius` (m; 0: a point) centred at `position` (m) in `link`'s frame."""
    link: str
    position: tuple = (0.0, 0.0, 0.0)
    radius: float = 0.0


def contact_points_from_urdf(robot, urdf):
    """Contact points from the <collision> spheres and boxes of a URDF (file path or XML text).
    Returns a list of ContactPoint (empty if the file has none of those)."""
    import io

    import yourdfpy
    text = urdf
    if not str(urdf).lstrip().startswith("<"):
        with open(urdf, encoding="utf-8") as f:
            text = f.read()
    parsed = yourdfpy.URDF.load(io.StringIO(text), load_meshes=False, build_scene_graph=False,
                                load_collision_meshes=False, build_collision_scene_graph=False)
    points = []
    for link in parsed.robot.links:
        if link.name not in robot.link_names:
            continue
        for collision in link.collisions:
            origin = np.eye(4) if collision.origin is None else np.asarray(collision.origin)
            geometry = collision.geometry
            if geometry.sphere is not None:
                centre = origin[:3, 3]
                points.append(ContactPoint(link.name, tuple(float(x) for x in centre),
                                           float(geometry.sphere.radius)))
            elif geometry.box is not None:
                half = 0.5 * np.asarray(geometry.box.size, dtype=float)
                for sx in (-1, 1):
                    for sy in (-1, 1):
                        for sz in (-1, 1):
                            corner = origin[:3, :3] @ (half * (sx, sy, sz)) + origin[:3, 3]
                            points.append(ContactPoint(link.name,
                                                       tuple(float(x) for x in corner), 0.0))
    return points


def parse_contact_points(spec):
    """Declared contact points: a list of {link, position: [x, y, z], radius} dicts or
    ContactPoints. ValueError naming the entry and field when malformed."""
    points = []
    for k, entry in enumerate(spec or ()):
        if isinstance(entry, ContactPoint):
            points.append(entry)
            continue
        if not isinstance(entry, dict) or "link" not in entry:
            raise ValueError(f"contact point {k}: needs a 'link' (and optional 'position', "
                             f"'radius'), got {entry!r}")
        position = entry.get("position", (0.0, 0.0, 0.0))
        radius = entry.get("radius", 0.0)
        try:
            position = tuple(float(x) for x in position)
            radius = float(radius)
        except (TypeError, ValueError):
            raise ValueError(f"contact point {k} ({entry['link']}): position must be 3 numbers "
                             f"and radius a number") from None
        if len(position) != 3 or not np.isfinite(position).all():
            raise ValueError(f"contact point {k} ({entry['link']}): position must be 3 finite "
                             "numbers")
        if not (np.isfinite(radius) and radius >= 0.0):
            raise ValueError(f"contact point {k} ({entry['link']}): radius must be >= 0")
        points.append(ContactPoint(str(entry["link"]), position, radius))
    return points


class GroundContact:
    """Spring-damper + regularised Coulomb contact of `points` with the ground plane; a force
    hook fn(t, q, v) -> (nv,) generalized forces (see the module docstring for the model and
    the parameters). Tree robots (no loop closures).

    Attributes after each call: `forces` (n_points, 3) world-frame contact forces,
    `penetration` (n_points,) m, `in_contact` (n_points,) bool.
    """

    def __init__(self, robot, points, stiffness=None, damping=None, friction=DEFAULT_FRICTION,
                 slip_velocity=DEFAULT_SLIP_VELOCITY, ground_height=0.0):
        points = parse_contact_points(points)
        if not points:
            raise ValueError("ground contact needs at least one contact point")
        unknown = sorted({p.link for p in points if p.link not in robot.link_names})
        if unknown:
            raise ValueError(f"contact points on unknown links {unknown}")
        n = len(points)
        share = robot.total_mass / n
        if stiffness is None:
            stiffness = robot.total_mass * GRAVITY_ACCELERATION / (n * DEFAULT_PENETRATION)
        if damping is None:
            damping = 2.0 * DEFAULT_DAMPING_RATIO * np.sqrt(stiffness * share)
        for name, value in (("stiffness", stiffness), ("damping", damping),
                            ("friction", friction), ("slip_velocity", slip_velocity)):
            if not (np.isfinite(value) and value >= 0.0):
                raise ValueError(f"contact {name} must be finite and >= 0, got {value}")
        if not slip_velocity > 0.0:
            raise ValueError("contact slip_velocity must be > 0")
        if not np.isfinite(ground_height):
            raise ValueError("contact ground_height must be finite")
        tree = robot.tree
        if tree.kind == "flexible":
            raise ValueError("ground contact is computed on rigid trees; this robot has flexible "
                             "links")
        self.robot = robot
        self.points = points
        self.stiffness = float(stiffness)
        self.damping = float(damping)
        self.friction = float(friction)
        self.slip_velocity = float(slip_velocity)
        self.ground_height = float(ground_height)
        model = robot.model
        link_index = {name: i for i, name in enumerate(robot.link_names)}
        # each point in its body's frame: r_b = R_link r + p_link (links merged into bodies)
        self.link_rows = np.array([link_index[p.link] for p in points], dtype=np.int64)
        self.body = np.array([model.link_int[i, L.LINK_BODY] for i in self.link_rows],
                             dtype=np.int64)
        self.link_rot = np.array([model.link_float[i, L.LINK_ROT:L.LINK_ROT + 9].reshape(3, 3)
                                  for i in self.link_rows])
        self.link_pos = np.array([model.link_float[i, L.LINK_POS:L.LINK_POS + 3]
                                  for i in self.link_rows])
        local = np.array([p.position for p in points], dtype=float)
        self.r_body = np.ascontiguousarray(np.einsum("kij,kj->ki", self.link_rot, local)
                                           + self.link_pos)
        self.radius = np.array([p.radius for p in points], dtype=float)
        self.forces = np.zeros((n, 3))
        self.penetration = np.zeros(n)
        self.in_contact = np.zeros(n, dtype=bool)
        self._params = np.array([self.stiffness, self.damping, self.friction,
                                 self.slip_velocity, self.ground_height])
        # the tree's model arrays and a workspace of its own (the contact runs inside integrator
        # stages, outside the robot's lock)
        self._body_int, self._body_float = tree.body_int, tree.body_float
        self._work = np.zeros_like(tree.work)
        self._body_wrench = np.zeros((tree.body_int.shape[0], 6))
        self._tau = np.zeros(robot.nv)

    def __call__(self, t, q, v):
        """(nv,) generalized contact forces J^T f at (q, v) (a numba kernel: kinematics, the
        contact law per point, and the Newton-Euler backward pass of the wrenches)."""
        _ground_contact(self._body_int, self._body_float, self._work, q, v, self.body,
                        self.r_body, self.radius, self._params, self._body_wrench,
                        self.forces, self.penetration, self._tau)
        np.greater(self.penetration, 0.0, out=self.in_contact)
        return self._tau

    def total_normal_force(self):
        """Sum of the normal forces of the last call (N)."""
        return float(self.forces[:, 2].sum())
