"""Compliant contact of a robot with a flat ground and static boxes (steps, tables): a penalty
normal force with damping that ramps in with the penetration, and regularised Coulomb friction,
as a force hook of the Simulator / Plant. No ROS imports.

    points, notes = collision_points(robot, urdf)                      # every <collision>
    points = [ContactPoint("FL_FOOT", (0, 0, 0), radius=0.016), ...]   # or declared
    contact = GroundContact(robot, points,                             # parameters below
                            boxes=[{"center": [1, 0, 0.05], "size": [0.4, 1, 0.1]}])
    plant = Plant(robot, dt, forces=[contact],
                  substeps=contact.substeps_for(dt, "rk4"))          # automatic substeps

Contact points: a sphere of `radius` (0: a point) fixed in a link. From URDF ``<collision>``
elements (mbd_ros.simulation.collision, read with the package's hardened URDF reader): every
link's spheres (centre, radius), box corners, cylinder rim samples, capsule end spheres and a
mesh's bounding-box corners. So a body, a knee or a shin touching the ground is held up like a
foot (solo12's URDF has only meshes: before, only the four declared feet collided and the body
fell through the floor when the legs folded).

For each point, with c its centre in the world (root) frame, n = (0, 0, 1) the ground normal
(the plane z = ground_height of the root frame), v the velocity of its lowest point:

    penetration  d  = radius - (c_z - ground_height)                (no force when d <= 0)
    normal force f_n = max(0, k d - c_d min(1, d / d_w) v_z)        (never pulling)
    friction     f_t = -mu f_n v_t / sqrt(|v_t|^2 + v_s^2)           (regularised Coulomb)

Static boxes (`boxes`: centre, size, yaw about z, world frame; at most MAX_STATIC_BOXES): the
same law along the box's outward normal at the sphere's closest point (a centre inside the box
is pushed out through its nearest face; kernels.contact.box_penetration). A box thinner than
the distance a point travels in one integrator step can be crossed (the half-space ground
cannot): keep steps and table tops thicker than reachable_speed x dt / substeps (a few cm).

Why this law. MuJoCo's soft contacts (a constraint with impedance, solved at the velocity
level with a reference acceleration -b v - k d whose time constant is tied to the step) and
Drake's compliant point contact (Hunt-Crossley: f_n = k d (1 - d_hc v_z), solved with its
discrete TAMSI/SAP solvers) both keep a *compliant* normal law and make it stable by
construction of the time stepping. Here the plant's integrators are explicit (RK4,
semi-implicit Euler) and the contact is a force hook, so the same two ideas are applied as:

- dissipative law: the damping ramps in over the first d_w of penetration (Hunt-Crossley's
  damping proportional to the penetration, made linear beyond d_w so a deep contact is
  critically damped): no force jump at touch-down, no pull at lift-off, and
  d/dt (kinetic + gravity + sum k d^2 / 2) <= 0 for a passive robot (each point removes
  c_d min(1, d / d_w) v_z^2, or k d v_z with v_z > 0 where the max clamps);
- stiffness from the task, step from the stiffness: k by default gives DEFAULT_PENETRATION
  (1 mm) of static penetration with the robot's weight on SUPPORT_POINTS (3) points (any
  stance on 3 or more points sinks < 2 mm: the bound asked of a standing robot), c_d is
  critical for that share of the mass;
- implicit dampers, explicit springs: each point's dampers (normal and friction) are made
  linearly implicit on its effective mass m_e (1 / lambda_max(J M^-1 J^T) at the initial
  configuration, J the point's Jacobian; shared by the points of its body) over the
  integrator step h: b -> b / (1 + b h / m), the diagonal regularisation MuJoCo's soft
  constraints use, so no damping or friction coefficient limits the step; the springs stay
  explicit and `substeps_for(dt, integrator)` picks the integrator steps per plant step with
  omega h <= 0.5 L on every point (omega = sqrt(n k / m_e), n <= 8 points of one body in
  contact, L the integrator's limit: RK4 2 sqrt(2), Euler 2). A light foot (solo12: 17 g)
  needs 2 RK4 substeps at 1 kHz; a box or a body none.

No tunnelling: against a half-space a point can only be stopped too late (too deep), never
pass (the spring force grows with the depth, its step stays stable at any depth: the law is
linear in d); the deepest penetration of a point of effective mass m hitting the ground at
speed u on an undamped spring is u sqrt(m / k) (energy), less with the damping and with the
other points of the robot that touch too. `reachable_speed` bounds the speed a point reaches
under the URDF effort and velocity limits (a free fall from its height plus each joint's
largest speed times its lever arm); the tests throw A1 belly first at its 17.7 m/s (deepest
4.4 cm, the base above the ground) and a lone 2 kg ball at that speed (within the bound, back
above the ground).

Parameters (defaults): ``stiffness`` k [N/m] (m g / (3 DEFAULT_PENETRATION)), ``damping``
c_d [N s/m] (2 sqrt(k m / 3): critical for a third of the robot), ``damping_depth`` d_w [m]
(DEFAULT_PENETRATION; 0: constant damping), ``friction`` mu (0.8), ``slip_velocity`` v_s
[m/s] (0.1: below it friction acts as a viscous damper of mu f_n / v_s: a loaded foot creeps
at v_s r / sqrt(1 - r^2), r = |f_t| / (mu f_n), and a block on a slope steeper than atan mu
slides), ``ground_height`` (0).
"""
from __future__ import annotations

import math

import numpy as np

from ..model import layout as L
from ..robot.integrators import EXPLICIT_STABILITY
from ..kernels.contact import BOX_COLUMNS
from ..kernels.contact import ground_contact as _ground_contact
from .collision import ContactPoint, collision_points

GRAVITY_ACCELERATION = 9.81
DEFAULT_PENETRATION = 1e-3     # m: static penetration with the weight on SUPPORT_POINTS points
SUPPORT_POINTS = 3             # a stance rests on at least 3 points
DEFAULT_FRICTION = 0.8
DEFAULT_SLIP_VELOCITY = 0.1    # m/s
# largest stable omega h on an undamped oscillator (the dampers are implicit): the explicit
# integrators' (robot/integrators.py); implicit Euler linearises the accelerations, force
# hooks included (L-stable): no bound
STABILITY_LIMITS = {**EXPLICIT_STABILITY, "implicit_euler": np.inf}
STABILITY_MARGIN = 0.5         # the effective masses are those of the initial configuration
MAX_SUBSTEPS = 100
BODY_POINTS_CAP = 8            # points of one body counted as touching together (a face: 4-8)


def contact_points_from_urdf(robot, urdf):
    """Contact points of every <collision> primitive of the URDF (file path or XML text):
    mbd_ros.simulation.collision.collision_points without its notes (the meshes it could not
    read are skipped)."""
    return collision_points(robot, urdf)[0]


def _number(name, value, signed=False):
    """float(value) of the contact parameter `name`: finite (and >= 0 unless signed), else
    ValueError naming it."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"contact {name} must be a number, got {value!r}") from None
    if not (math.isfinite(number) and (signed or number >= 0.0)):
        raise ValueError(f"contact {name} must be finite" + ("" if signed else " and >= 0")
                         + f", got {value}")
    return number


def parse_contact_points(spec):
    """Declared contact points: a list of {link, position: [x, y, z], radius} dicts or
    ContactPoints. ValueError naming the entry and field when malformed."""
    points = []
    for k, entry in enumerate(spec or ()):
        if isinstance(entry, ContactPoint):   # checked as a dict is (a NaN radius got through)
            entry = {"link": entry.link, "position": entry.position, "radius": entry.radius}
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


MAX_STATIC_BOXES = 100   # bounded cost: every point is tested against every box


def parse_static_boxes(spec):
    """Static boxes (steps, tables) in the world (odom) frame: a list of dicts {center: [x y z]
    (m), size: [sx sy sz] (m, > 0), yaw: rad (about z; default 0)}, or a flat list of 7 numbers
    per box [x y z sx sy sz yaw] (the node's `contact_boxes` parameter). Returns a list of
    (center (3,), size (3,), yaw) tuples; ValueError naming the box and field when malformed."""
    if spec is None:
        return []
    if not isinstance(spec, (list, tuple, np.ndarray)):
        raise ValueError(f"static boxes: a list of {{center, size, yaw}} or 7 numbers per box, "
                         f"got {type(spec).__name__}")
    entries = list(spec)
    if entries and not isinstance(entries[0], dict):   # flat numbers, 7 per box
        if len(entries) % 7:
            raise ValueError(f"static boxes: {len(entries)} numbers; 7 per box [x y z sx sy "
                             "sz yaw]")
        entries = [{"center": entries[i:i + 3], "size": entries[i + 3:i + 6],
                    "yaw": entries[i + 6]} for i in range(0, len(entries), 7)]
    if len(entries) > MAX_STATIC_BOXES:
        raise ValueError(f"static boxes: {len(entries)}, more than MAX_STATIC_BOXES = "
                         f"{MAX_STATIC_BOXES}")
    boxes = []
    for k, entry in enumerate(entries):
        if not isinstance(entry, dict) or "center" not in entry or "size" not in entry:
            raise ValueError(f"static box {k}: needs 'center' and 'size' (and optional 'yaw'), "
                             f"got {entry!r}")
        try:
            center = np.array([float(x) for x in entry["center"]])
            size = np.array([float(x) for x in entry["size"]])
            yaw = float(entry.get("yaw", 0.0))
        except (TypeError, ValueError):
            raise ValueError(f"static box {k}: center and size must be 3 numbers, yaw a "
                             "number") from None
        if center.shape != (3,) or size.shape != (3,):
            raise ValueError(f"static box {k}: center and size must be 3 numbers each")
        if not (np.isfinite(center).all() and np.isfinite(size).all() and np.isfinite(yaw)):
            raise ValueError(f"static box {k}: center, size and yaw must be finite")
        if not (size > 0.0).all():
            raise ValueError(f"static box {k}: size must be > 0, got {size.tolist()}")
        boxes.append((center, size, yaw))
    return boxes


def box_row(box):
    """The kernel's row of a static box (center, size, yaw): centre, half extents, cos, sin."""
    center, size, yaw = box
    return np.r_[center, 0.5 * size, np.cos(yaw), np.sin(yaw)]


class GroundContact:
    """Spring-damper + regularised Coulomb contact of `points` (ContactPoints or dicts, link
    frame, m) with the ground plane z = ground_height and the static `boxes` (see
    parse_static_boxes); a force hook fn(t, q, v) -> (nv,) generalized forces (see the module
    docstring for the model and the parameters: stiffness N/m, damping N s/m, damping_depth m,
    friction, slip_velocity m/s). Tree robots (no loop closures). Call substeps_for(dt,
    integrator) before simulating: it picks the integrator substeps and makes the dampers
    implicit for that step (without it the dampers are explicit, as the plain law).

    Attributes after each call: `forces` (n_points, 3) world-frame contact forces (sum over the
    obstacles), `penetration` (n_points,) m (the deepest), `where` (n_points,) -1 ground or the
    box index, `in_contact` (n_points,) bool.
    """

    def __init__(self, robot, points, stiffness=None, damping=None, friction=DEFAULT_FRICTION,
                 slip_velocity=DEFAULT_SLIP_VELOCITY, ground_height=0.0,
                 damping_depth=DEFAULT_PENETRATION, boxes=()):
        points = parse_contact_points(points)
        if not points:
            raise ValueError("ground contact needs at least one contact point")
        unknown = sorted({p.link for p in points if p.link not in robot.link_names})
        if unknown:
            raise ValueError(f"contact points on unknown links {unknown}")
        n = len(points)
        share = robot.total_mass / SUPPORT_POINTS
        if stiffness is None:
            stiffness = share * GRAVITY_ACCELERATION / DEFAULT_PENETRATION
        stiffness = _number("stiffness", stiffness)
        if not stiffness > 0.0:    # (0: a contact that never pushes)
            raise ValueError(f"contact stiffness must be > 0, got {stiffness}")
        if damping is None:
            damping = 2.0 * np.sqrt(stiffness * share)    # critical on a support's share
        for name, value in (("damping", damping), ("friction", friction),
                            ("slip_velocity", slip_velocity), ("damping_depth", damping_depth)):
            _number(name, value)
        if not float(slip_velocity) > 0.0:
            raise ValueError("contact slip_velocity must be > 0")
        ground_height = _number("ground_height", ground_height, signed=True)
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
        self.damping_depth = float(damping_depth)
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
                                 self.slip_velocity, self.ground_height, self.damping_depth,
                                 0.0])
        self.point_mass = np.full(n, np.inf)   # set by substeps_for (implicit dampers)
        self.substeps = 1
        # the tree's model arrays and a workspace of its own (the contact runs inside integrator
        # stages, outside the robot's lock)
        self._body_int, self._body_float = tree.body_int, tree.body_float
        self._work = np.zeros_like(tree.work)
        self._body_wrench = np.zeros((tree.body_int.shape[0], 6))
        self._tau = np.zeros(robot.nv)
        self.boxes = parse_static_boxes(boxes)
        self._boxes = np.ascontiguousarray(
            np.array([box_row(b) for b in self.boxes], dtype=float).reshape(-1, BOX_COLUMNS))
        self.where = np.full(n, -1, dtype=np.int64)   # what each point is deepest in
        self._energy = np.zeros(1)
        self._pair = np.zeros(4)

    def __call__(self, t, q, v):
        """(nv,) generalized contact forces J^T f at (q, v) (a numba kernel: kinematics, the
        contact law per point, and the Newton-Euler backward pass of the wrenches)."""
        _ground_contact(self._body_int, self._body_float, self._work, q, v, self.body,
                        self.r_body, self.radius, self.point_mass, self._params, self._boxes,
                        self._pair, self._body_wrench, self.forces, self.penetration,
                        self.where, self._energy, self._tau)
        np.greater(self.penetration, 0.0, out=self.in_contact)
        return self._tau

    def total_normal_force(self):
        """Sum of the normal forces of the last call (N)."""
        return float(self.forces[:, 2].sum())

    def spring_energy(self):
        """Energy stored in the normal springs at the last call, sum k d^2 / 2 over the
        penetrating (point, obstacle) pairs (J): with the robot's kinetic and potential energy,
        the energy a passive robot on the ground never gains."""
        return float(self._energy[0])

    def obstacle_name(self, k):
        """What point k is deepest in at the last call: 'the ground' or 'static box i'."""
        return "the ground" if self.where[k] < 0 else f"static box {int(self.where[k])}"

    def max_penetration(self):
        """Deepest penetration of the last call (m; negative: no point touches)."""
        return float(self.penetration.max())

    def effective_masses(self, q=None):
        """(n_points,) effective mass of each point in its lightest direction at q (default
        the neutral configuration), 1 / lambda_max(J M^-1 J^T) with J the (3, nv) Jacobian of
        the point's lowest position (kg): the normal and the friction forces both act on it."""
        robot = self.robot
        q = robot.neutral() if q is None else np.asarray(q, dtype=float)
        minv = robot.mass_matrix_inverse(q)
        masses = np.empty(len(self.points))
        jacobians = {}
        for k, p in enumerate(self.points):
            if p.link not in jacobians:
                jacobians[p.link] = (robot.link_jacobian(q, p.link), robot.link_pose(q, p.link))
            jac, pose = jacobians[p.link]
            # the point r (world, from the link origin): v_point = v_link + w x r, z row only
            r = pose[:3, :3] @ np.asarray(p.position) - np.array([0.0, 0.0, p.radius])
            skew = np.array([[0.0, -r[2], r[1]], [r[2], 0.0, -r[0]], [-r[1], r[0], 0.0]])
            point = jac[:3] - skew @ jac[3:]     # v + w x r = v - [r]x w
            inverse = float(np.linalg.eigvalsh(point @ minv @ point.T)[-1])
            masses[k] = 1.0 / inverse if inverse > 0.0 else np.inf
        return masses

    def substeps_for(self, dt, integrator="rk4", q=None, minimum=1):
        """Integrator steps per plant step of `dt` (s) for which the contact is stable, and
        makes the dampers implicit for that step (sets `substeps`, `point_mass`).

        With m_e a point's effective mass (effective_masses(q), lightest direction) and n the
        points of its body (at most BODY_POINTS_CAP) touching together, each point's dampers
        are made linearly implicit on m_e / n over h = dt / substeps (so c_eff h / m < 1: the
        damping never limits the step) and the springs need omega h <= STABILITY_MARGIN x the
        integrator's limit on the imaginary axis, omega = sqrt(n k / m_e). At least `minimum`
        (the substeps something else needs: the dampers are made implicit for the step used).
        ValueError when more than MAX_SUBSTEPS would be needed (naming the rate needed)."""
        if integrator not in STABILITY_LIMITS:
            raise ValueError(f"substeps_for: integrator must be one of "
                             f"{sorted(STABILITY_LIMITS)}, got {integrator!r}")
        if not (isinstance(dt, (int, float, np.floating)) and math.isfinite(dt) and dt > 0.0):
            raise ValueError(f"substeps_for: dt must be a positive finite number of seconds, "
                             f"got {dt!r}")
        imaginary_limit = STABILITY_LIMITS[integrator]
        masses = self.effective_masses(q)
        counts = np.bincount(self.body, minlength=int(self.body.max()) + 1)[self.body]
        n = np.minimum(counts, BODY_POINTS_CAP)
        omega = np.sqrt(n * self.stiffness / masses)
        if not omega.max() > 0.0:    # no point can move (all on a fixed root) or no stiffness
            h_max = np.inf
        else:
            h_max = STABILITY_MARGIN * imaginary_limit / omega.max()
        needed = max(1, int(np.ceil(float(dt) / h_max - 1e-9)))
        if needed > MAX_SUBSTEPS:
            raise ValueError(f"ground contact: a step of {dt:g} s needs {needed} integrator "
                             f"substeps (more than {MAX_SUBSTEPS}): the lightest contacting "
                             f"link ({self.points[int(np.argmax(omega))].link}, effective mass "
                             f"{masses.min():.3g} kg) is too light for contact_stiffness "
                             f"{self.stiffness:.3g} N/m at this rate; raise rate_hz to >= "
                             f"{1.0 / (h_max * MAX_SUBSTEPS):.0f} Hz or soften the contact")
        needed = max(needed, int(minimum))
        self.substeps = needed
        self.point_mass[:] = masses / n
        self._params[-1] = float(dt) / needed
        return needed


def reachable_speed(robot, contact, q, height=None):
    """Upper bound of the speed (m/s) a contact point reaches under the effort limits, at the
    configuration q: the fall from `height` (m; default the height of the highest point's
    lowest point above the ground), sqrt(2 g height), plus for each joint above the point its largest speed times
    its lever arm |J_col| at q, summed (the velocities of a chain add up). A joint's largest
    speed is its URDF velocity limit, bounded by what its effort limit can give its subtree
    over its range from rest, sqrt(2 tau_max range / M_jj) (the drive's work tau_max range
    into the kinetic energy M_jj w^2 / 2; range 2 pi when unlimited); a joint with neither
    limit counts max_speed 1000 (the plant's divergence bound). Returns (n_points,) speeds."""
    q = np.asarray(q, dtype=float)
    mass = robot.mass_matrix(q)
    lower, upper = (np.asarray(x, dtype=float) for x in robot.position_limits)
    effort = np.asarray(robot.effort_limits, dtype=float)
    velocity = np.asarray(robot.velocity_limits, dtype=float)
    span = np.where(np.isfinite(upper - lower), upper - lower, 2.0 * np.pi)
    with np.errstate(divide="ignore", invalid="ignore"):
        by_effort = np.sqrt(2.0 * effort * span / np.diag(mass))
    largest = np.fmin(np.where(velocity > 0.0, velocity, np.inf),
                      np.where(effort > 0.0, by_effort, np.inf))
    largest = np.where(np.isfinite(largest), largest, 1.0e3)
    contact(0.0, q, np.zeros(robot.nv))
    heights = -contact.penetration          # the lowest point's height above the ground
    if height is None:
        height = max(0.0, float(heights.max()))
    fall = math.sqrt(2.0 * GRAVITY_ACCELERATION * max(0.0, float(height)))
    free = np.zeros(robot.nv, dtype=bool)
    for j, kind in enumerate(robot.joint_types):
        if kind == "floating":   # the base moves by the fall, not by a drive
            free[robot.idx_v[j]:robot.idx_v[j] + 6] = True
    speeds = np.empty(len(contact.points))
    for k, p in enumerate(contact.points):
        jac, pose = robot.link_jacobian(q, p.link), robot.link_pose(q, p.link)
        r = pose[:3, :3] @ np.asarray(p.position)
        skew = np.array([[0.0, -r[2], r[1]], [r[2], 0.0, -r[0]], [-r[1], r[0], 0.0]])
        lever = np.linalg.norm(jac[:3] - skew @ jac[3:], axis=0)
        speeds[k] = fall + float(lever[~free] @ largest[~free])
    return speeds
