"""Cut-joint kinematics (kernels/closure_kinematics.py) against finite differences along exact
rigid motions, an independent numpy residual, and the joint's own motion (docs/theory.md §4).

Motion used for the derivatives. A body with body-frame spatial velocity v(t) = v + t a (a: the
spatial acceleration, the kernels' ACC) has a pose T(t) with dT/dt = T [v(t)]^. Write
T(t) = T0 exp(Omega(t)); the Magnus series gives Omega(t) = t [v]^ + t^2/2 [a]^ + O(t^3) (the
first commutator term is -t^3/12 [[v]^, [a]^]). Hence the path T0 exp(t [v]^ + t^2/2 [a]^)
agrees with the true motion to second order: its first and second derivatives at t = 0 are
those of the true motion (T0 [v]^ and T0 ([a]^ + [v]^[v]^)), for any a. With a = 0 it IS the
exact constant-velocity motion. So along it

    d/dt g(0)   = G_a v_a + G_b v_b,        d2/dt2 g(0) = G_a a_a + G_b a_b + gamma2,

both checked with Richardson-extrapolated central differences (error O(h^4)).

FD_RTOL: the one tolerance of the finite-difference checks, |error| <= FD_RTOL * max(1, |value|):
h = 2e-3 leaves a truncation error of order h^4 |g^(6)| ~ 1e-9 for the unit-scale random poses
and twists used here, and a round-off error of order 1e-16 / h^2 ~ 3e-11 on the second difference.
Everything else (residuals on the constraint manifold, the wrench transform) is exact up to
round-off and uses conftest.RTOL.
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy.linalg import expm

from conftest import assert_close
from mbd_ros.inputs.closures import CUT_TYPES, read_closures
from mbd_ros.kernels import closure_kinematics as ck

FD_RTOL = 1e-7
H = 2e-3
SEEDS = range(5)


# ---- random data -------------------------------------------------------------------------------

def random_rotation(rng):
    q = rng.normal(size=4)
    q /= np.linalg.norm(q)
    x, y, z, w = q
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def random_unit(rng):
    u = rng.normal(size=3)
    return u / np.linalg.norm(u)


def random_pose(rng, scale=1.0):
    t = np.eye(4)
    t[:3, :3] = random_rotation(rng)
    t[:3, 3] = rng.uniform(-scale, scale, 3)
    return t


def origin_dict(pose):
    """A 4x4 pose as a closure-file origin {xyz, rpy} (URDF rpy: R = Rz Ry Rx)."""
    r = pose[:3, :3]
    pitch = np.arcsin(-np.clip(r[2, 0], -1.0, 1.0))
    roll = np.arctan2(r[2, 1], r[2, 2])
    yaw = np.arctan2(r[1, 0], r[0, 0])
    return {"xyz": pose[:3, 3].tolist(), "rpy": [float(roll), float(pitch), float(yaw)]}


def random_spec(cut_type, rng):
    """A random, valid ClosureSpec of the given type between links 'a' and 'b'."""
    entry = {"name": "cut", "type": cut_type, "parent": "a", "child": "b",
             "parent_origin": origin_dict(random_pose(rng, 0.5)),
             "child_origin": origin_dict(random_pose(rng, 0.5))}
    if cut_type in ("revolute", "prismatic", "cylindrical", "universal", "planar", "helical"):
        # sometimes a coordinate axis (the aligned frame is then the identity or a permutation)
        entry["axis"] = ([0.0, 0.0, 1.0] if rng.uniform() < 0.3 else random_unit(rng).tolist())
    if cut_type == "universal":
        a2 = random_unit(rng)
        if rng.uniform() < 0.5:   # usually perpendicular; a skew universal joint otherwise
            a2 -= a2.dot(entry["axis"]) * np.asarray(entry["axis"])
            a2 /= np.linalg.norm(a2)
        entry["axis2"] = a2.tolist()
    if cut_type == "distance":
        entry["length"] = float(rng.uniform(0.2, 1.0))
    if cut_type == "helical":
        entry["pitch"] = float(rng.choice([-1.0, 1.0]) * rng.uniform(0.05, 0.5))
    return read_closures({"closures": [entry]}, ["a", "b"]).closures[0]


def random_placement(rng):
    """A link's pose in its body (non-identity: links merged by fixed joints)."""
    pose = random_pose(rng, 0.3)
    return pose[:3, :3], pose[:3, 3]


# ---- evaluation helpers ------------------------------------------------------------------------

def hat(twist):
    """4x4 matrix of a body-frame twist [v; w]."""
    v, w = twist[:3], twist[3:]
    return np.array([[0.0, -w[2], w[1], v[0]],
                     [w[2], 0.0, -w[0], v[1]],
                     [-w[1], w[0], 0.0, v[2]],
                     [0.0, 0.0, 0.0, 0.0]])


def pose_along(pose, vel, acc, t):
    """T0 exp(t [v]^ + t^2/2 [a]^): second-order exact motion (see the module docstring)."""
    return pose @ expm(hat(t * vel + 0.5 * t * t * acc))


def evaluate(code, row, pose_a, vel_a, pose_b, vel_b):
    """(residual, G_a, G_b, gamma2) from the kernel."""
    n = ck.CUT_ROWS[code]
    res = np.full(ck.MAX_CUT_ROWS, np.nan)
    ja = np.full((ck.MAX_CUT_ROWS, 6), np.nan)
    jb = np.full((ck.MAX_CUT_ROWS, 6), np.nan)
    bias = np.full(ck.MAX_CUT_ROWS, np.nan)
    returned = ck.closure_kinematics(code, row, np.ascontiguousarray(pose_a[:3, :3]).ravel(),
                                     pose_a[:3, 3].copy(), vel_a, pose_b[:3, :3].ravel().copy(),
                                     pose_b[:3, 3].copy(), vel_b, res, ja, jb, bias)
    assert returned == n
    assert np.all(np.isnan(res[n:])), "the kernel wrote rows past b_s"
    return res[:n], ja[:n], jb[:n], bias[:n]


def residual(code, row, pose_a, pose_b):
    zero = np.zeros(6)
    return evaluate(code, row, pose_a, zero, pose_b, zero)[0]


def reference_residual(spec, placement_a, placement_b, pose_a, pose_b):
    """The residuals of the module docstring, written independently with 4x4 matrices."""
    def link_frame(pose, placement, origin):
        link = np.eye(4)
        link[:3, :3], link[:3, 3] = placement
        return pose @ link @ origin

    q = ck.aligned_frame(spec.axis)
    fa = link_frame(pose_a, placement_a, spec.parent_origin)
    fb = link_frame(pose_b, placement_b, spec.child_origin)
    ra, rb = fa[:3, :3] @ q, fb[:3, :3] @ q
    xa, ya, za = ra.T
    xb, yb, zb = rb.T
    d = fb[:3, 3] - fa[:3, 3]
    lock = 0.5 * np.array([za @ yb - ya @ zb, xa @ zb - za @ xb, ya @ xb - xa @ yb])
    if spec.type == "revolute":
        return np.r_[d, za @ xb, za @ yb]
    if spec.type == "prismatic":
        return np.r_[d @ xa, d @ ya, lock]
    if spec.type == "cylindrical":
        return np.r_[d @ xa, d @ ya, za @ xb, za @ yb]
    if spec.type == "universal":
        a1 = fa[:3, :3] @ spec.axis
        a2 = fb[:3, :3] @ spec.axis2
        return np.r_[d, a1 @ a2 - spec.axis @ spec.axis2]
    if spec.type == "spherical":
        return d
    if spec.type == "planar":
        return np.r_[d @ za, za @ xb, za @ yb]
    if spec.type == "fixed":
        return np.r_[d, lock]
    if spec.type == "helical":
        # rotation theta of x_B about z_A against the angle d.z_A / h the translation implies:
        # h |x_B in the A'xy plane| sin(theta - implied)
        theta = np.arctan2(xb @ ya, xb @ xa)
        implied = (d @ za) / spec.pitch
        in_plane = np.hypot(xb @ xa, xb @ ya)
        return np.r_[d @ xa, d @ ya, za @ xb, za @ yb,
                     spec.pitch * in_plane * np.sin(theta - implied)]
    return np.r_[np.linalg.norm(d) - spec.length]


def richardson_derivatives(g, h=H):
    """(g'(0), g''(0)) from central differences at h and h/2, Richardson-extrapolated."""
    g0 = g(0.0)
    values = {s: g(s) for s in (-h, -h / 2, h / 2, h)}
    d1 = lambda s: (values[s] - values[-s]) / (2 * s)                 # noqa: E731
    d2 = lambda s: (values[s] - 2 * g0 + values[-s]) / (s * s)        # noqa: E731
    return (4 * d1(h / 2) - d1(h)) / 3, (4 * d2(h / 2) - d2(h)) / 3


# ---- tests -------------------------------------------------------------------------------------

def test_type_codes_and_row_counts():
    assert set(ck.CUT_TYPE_CODES) == set(CUT_TYPES)
    expected = dict(revolute=5, prismatic=5, cylindrical=4, universal=4, spherical=3, planar=3,
                    fixed=6, distance=1, helical=5)
    for name, rows in expected.items():
        code = ck.cut_type_code(name)
        assert ck.CUT_ROWS[code] == rows == ck.constraint_count(code)
    assert ck.constraint_count(0) == 0 and ck.constraint_count(99) == 0
    assert max(ck.CUT_ROWS.values()) == ck.MAX_CUT_ROWS


def test_unknown_code_writes_nothing():
    row = np.zeros(ck.CUT_ROW_WIDTH)
    out = np.full(6, 7.0)
    jac = np.full((6, 6), 7.0)
    eye = np.eye(3).ravel()
    n = ck.closure_kinematics(42, row, eye, np.zeros(3), np.zeros(6), eye, np.zeros(3),
                              np.zeros(6), out, jac, jac.copy(), out.copy())
    assert n == 0 and np.all(out == 7.0) and np.all(jac == 7.0)


@pytest.mark.parametrize("cut_type", CUT_TYPES)
@pytest.mark.parametrize("seed", SEEDS)
def test_residual_matches_reference(cut_type, seed):
    rng = np.random.default_rng(100 + seed)
    spec = random_spec(cut_type, rng)
    pa, pb = random_placement(rng), random_placement(rng)
    row = ck.cut_row(spec, pa, pb)
    pose_a, pose_b = random_pose(rng), random_pose(rng)
    assert_close(residual(ck.cut_type_code(cut_type), row, pose_a, pose_b),
                 reference_residual(spec, pa, pb, pose_a, pose_b), f"{cut_type} residual")


@pytest.mark.parametrize("universe", [None, "a", "b"])
@pytest.mark.parametrize("cut_type", CUT_TYPES)
@pytest.mark.parametrize("seed", SEEDS)
def test_jacobian_and_bias_by_finite_differences(cut_type, seed, universe):
    """At random poses (off the constraint manifold), random twists and accelerations: the first
    derivative of g along the motion is G_a v_a + G_b v_b (checked also at a = 0, the exact
    constant-velocity motion), the second is G_a a_a + G_b a_b + gamma2. `universe`: body a (or
    b) is the fixed universe (identity pose, zero motion)."""
    rng = np.random.default_rng(1000 * seed + ck.cut_type_code(cut_type))
    spec = random_spec(cut_type, rng)
    pa, pb = random_placement(rng), random_placement(rng)
    code = ck.cut_type_code(cut_type)
    poses = [random_pose(rng), random_pose(rng)]
    vels = [rng.normal(size=6), rng.normal(size=6)]
    accs = [rng.normal(size=6), rng.normal(size=6)]
    if universe is not None:
        k = 0 if universe == "a" else 1
        poses[k], vels[k], accs[k] = np.eye(4), np.zeros(6), np.zeros(6)
        if k == 0:
            pa = (np.eye(3), np.zeros(3))
        else:
            pb = (np.eye(3), np.zeros(3))
    row = ck.cut_row(spec, pa, pb)
    g, ga, gb, gamma2 = evaluate(code, row, poses[0], vels[0], poses[1], vels[1])
    assert np.all(np.isfinite(ga)) and np.all(np.isfinite(gb)) and np.all(np.isfinite(gamma2))
    if universe == "a":
        assert not np.any(ga @ vels[0])
    for acc_a, acc_b in ((np.zeros(6), np.zeros(6)), (accs[0], accs[1])):
        def g_at(t):
            return residual(code, row, pose_along(poses[0], vels[0], acc_a, t),
                            pose_along(poses[1], vels[1], acc_b, t))
        first, second = richardson_derivatives(g_at)
        assert_close(g_at(0.0), g, f"{cut_type}: residual")
        assert_close(ga @ vels[0] + gb @ vels[1], first, f"{cut_type}: G_a v_a + G_b v_b",
                     rtol=FD_RTOL)
        assert_close(ga @ acc_a + gb @ acc_b + gamma2, second,
                     f"{cut_type}: G_a a_a + G_b a_b + gamma2", rtol=FD_RTOL)


def joint_motion(spec, rng):
    """(M, free twists): a random relative pose M of the aligned frame B' in A' allowed by the
    joint, and the joint's free relative motions at M as twists of B' in its own coordinates
    (6, 6 - b_s)."""
    q = ck.aligned_frame(spec.axis)
    m = np.eye(4)
    ez = np.array([0.0, 0.0, 1.0])
    free = []
    angle = rng.uniform(-np.pi, np.pi)
    rot_z = np.array([[np.cos(angle), -np.sin(angle), 0], [np.sin(angle), np.cos(angle), 0],
                      [0, 0, 1.0]])
    if spec.type == "revolute":
        m[:3, :3] = rot_z
        free = [np.r_[0, 0, 0, ez]]
    elif spec.type == "prismatic":
        m[2, 3] = rng.uniform(-1, 1)
        free = [np.r_[ez, 0, 0, 0]]
    elif spec.type == "cylindrical":
        m[:3, :3] = rot_z
        m[2, 3] = rng.uniform(-1, 1)
        free = [np.r_[ez, 0, 0, 0], np.r_[0, 0, 0, ez]]
    elif spec.type == "helical":
        angle += 2 * np.pi * rng.integers(-2, 3)     # any number of turns
        m[:3, :3] = rot_z
        m[2, 3] = spec.pitch * angle
        free = [np.r_[spec.pitch * ez, ez]]
    elif spec.type == "planar":
        m[:3, :3] = rot_z
        m[:2, 3] = rng.uniform(-1, 1, 2)
        free = [np.r_[1.0, 0, 0, 0, 0, 0], np.r_[0, 1.0, 0, 0, 0, 0], np.r_[0, 0, 0, ez]]
    elif spec.type == "spherical":
        m[:3, :3] = random_rotation(rng)
        free = [np.r_[0, 0, 0, e] for e in np.eye(3)]
    elif spec.type == "universal":
        a2 = q.T @ spec.axis2                              # aligned coordinates; a1 = z
        angle2 = rng.uniform(-np.pi, np.pi)
        m[:3, :3] = rot_z @ expm(angle2 * np.cross(np.eye(3), a2))
        free = [np.r_[0, 0, 0, m[:3, :3].T @ ez], np.r_[0, 0, 0, a2]]
    elif spec.type == "distance":
        m[:3, :3] = random_rotation(rng)
        m[:3, 3] = spec.length * random_unit(rng)
        d_in_b = m[:3, :3].T @ m[:3, 3]
        basis = np.linalg.svd(d_in_b[None, :])[2][1:]     # two directions normal to d
        free = [np.r_[0, 0, 0, e] for e in np.eye(3)] + [np.r_[t, 0, 0, 0] for t in basis]
    return m, np.array(free).reshape(-1, 6).T


@pytest.mark.parametrize("cut_type", CUT_TYPES)
@pytest.mark.parametrize("seed", SEEDS)
def test_on_the_manifold(cut_type, seed):
    """Cut frames coincident up to the joint's own motion: g = 0, G_b has full row rank b_s,
    the joint's free motions satisfy the velocity constraint (G_b S = 0, so the null space of
    G_b is exactly the joint's motion), and moving both bodies together satisfies it too."""
    rng = np.random.default_rng(2000 + seed)
    spec = random_spec(cut_type, rng)
    code = ck.cut_type_code(cut_type)
    pa, pb = random_placement(rng), random_placement(rng)
    row = ck.cut_row(spec, pa, pb)
    q = ck.aligned_frame(spec.axis)
    pose_a = random_pose(rng)

    def aligned(placement, origin):
        t = np.eye(4)
        t[:3, :3], t[:3, 3] = placement
        t = t @ origin
        t[:3, :3] = t[:3, :3] @ q
        return t

    frame_a, frame_b = aligned(pa, spec.parent_origin), aligned(pb, spec.child_origin)
    motion, free = joint_motion(spec, rng)
    pose_b = pose_a @ frame_a @ motion @ np.linalg.inv(frame_b)
    g, ga, gb, _ = evaluate(code, row, pose_a, np.zeros(6), pose_b, np.zeros(6))
    n = ck.CUT_ROWS[code]
    assert_close(g, np.zeros(n), f"{cut_type}: residual on the manifold")
    singular = np.linalg.svd(gb, compute_uv=False)
    assert singular.min() > 1e-6 * singular.max(), f"{cut_type}: G_b rank-deficient: {singular}"
    assert free.shape == (6, 6 - n)
    assert np.linalg.matrix_rank(free) == 6 - n
    # free twists of B' (own coordinates) -> body b twists: v_b = [R v' + p x R w'; R w']
    r, p = frame_b[:3, :3], frame_b[:3, 3]
    twists_b = np.vstack([r @ free[:3] + np.cross(p, (r @ free[3:]).T).T, r @ free[3:]])
    assert_close(gb @ twists_b, np.zeros((n, 6 - n)), f"{cut_type}: G_b S")
    # a common rigid motion of both bodies: world twist -> each body's twist
    world_twist = rng.normal(size=6)

    def body_twist(pose):
        rot, pos = pose[:3, :3], pose[:3, 3]
        w = world_twist[3:]
        return np.r_[rot.T @ (world_twist[:3] + np.cross(w, pos)), rot.T @ w]

    assert_close(ga @ body_twist(pose_a) + gb @ body_twist(pose_b), np.zeros(n),
                 f"{cut_type}: common rigid motion")
    # the cut's wrench on b, in frame B, does no work on the joint's free motions
    lam = rng.normal(size=n)
    wrench = np.zeros(6)
    ck.wrench_in_cut_frame(row, gb.T @ lam, wrench)
    child = np.eye(4)
    child[:3, :3], child[:3, 3] = pb
    child = child @ spec.child_origin          # frame B (unaligned) in body b
    rb, pb_ = child[:3, :3], child[:3, 3]
    twists_frame = np.vstack([rb.T @ (twists_b[:3] + np.cross(twists_b[3:].T, pb_).T),
                              rb.T @ twists_b[3:]])
    assert_close(wrench @ twists_frame, np.zeros(6 - n), f"{cut_type}: work of the cut wrench")


@pytest.mark.parametrize("seed", SEEDS)
def test_wrench_in_cut_frame(seed):
    """The frame change preserves power: f_B . V_B = f . V for any twist V of body b and the
    twist V_B of frame B (child_origin) in its own coordinates; the torque is about B's origin."""
    rng = np.random.default_rng(3000 + seed)
    spec = random_spec("revolute", rng)
    pb = random_placement(rng)
    row = ck.cut_row(spec, random_placement(rng), pb)
    frame = np.eye(4)
    frame[:3, :3], frame[:3, 3] = pb
    frame = frame @ spec.child_origin
    r, p = frame[:3, :3], frame[:3, 3]
    wrench = rng.normal(size=6)
    out = np.zeros(6)
    ck.wrench_in_cut_frame(row, wrench, out)
    for _ in range(6):
        twist = rng.normal(size=6)
        twist_frame = np.r_[r.T @ (twist[:3] + np.cross(twist[3:], p)), r.T @ twist[3:]]
        assert_close(out @ twist_frame, wrench @ twist, "power")
    # a pure force through B's origin has no torque about it
    force = rng.normal(size=3)
    ck.wrench_in_cut_frame(row, np.r_[force, np.cross(p, force)], out)
    assert_close(out, np.r_[r.T @ force, 0, 0, 0], "force through B")


def test_cut_row_layout():
    rng = np.random.default_rng(7)
    spec = random_spec("universal", rng)
    pa, pb = random_placement(rng), random_placement(rng)
    row = ck.cut_row(spec, pa, pb)
    assert row.shape == (ck.CUT_ROW_WIDTH,) and row.dtype == np.float64
    q = row[ck.CUT_ALIGN:ck.CUT_ALIGN + 9].reshape(3, 3)
    assert_close(q @ q.T, np.eye(3), "Q orthonormal")
    assert_close(q[:, 2], spec.axis, "Q z = axis")
    assert_close(np.linalg.det(q), 1.0, "Q proper")
    assert_close(q @ row[ck.CUT_AXIS2:ck.CUT_AXIS2 + 3], spec.axis2, "axis2")
    assert_close(row[ck.CUT_REFERENCE], spec.axis @ spec.axis2, "reference")
    assert_close(row[ck.CUT_A_POS:ck.CUT_A_POS + 3], pa[1] + pa[0] @ spec.parent_origin[:3, 3],
                 "frame A origin")
    assert_close(row[ck.CUT_CHILD_ROT:ck.CUT_CHILD_ROT + 9].reshape(3, 3),
                 pb[0] @ spec.child_origin[:3, :3], "frame B rotation")
    assert_close(ck.aligned_frame([0.0, 0.0, 1.0]), np.eye(3), "Q for z")
    # identity placements by default
    assert_close(ck.cut_row(spec), ck.cut_row(spec, (np.eye(3), np.zeros(3)),
                                              (np.eye(3), np.zeros(3))), "default placements")


def test_distance_at_coincident_points_is_finite():
    spec = read_closures({"closures": [{"name": "d", "type": "distance", "parent": "a",
                                        "child": "b", "length": 0.5}]}, ["a", "b"]).closures[0]
    row = ck.cut_row(spec)
    g, ga, gb, bias = evaluate(ck.CUT_DISTANCE, row, np.eye(4), np.ones(6), np.eye(4), np.ones(6))
    assert_close(g, [-0.5], "residual")
    assert not ga.any() and not gb.any() and not bias.any()


@pytest.mark.parametrize("cut_type", ["fixed", "prismatic"])
def test_orientation_lock_is_the_rotation_vector(cut_type):
    """r = sin(theta) n for a relative rotation Rot(n, theta) of B' in A' (n in A' coordinates):
    zero only at theta = 0 and pi (not, e.g., at the 2 pi / 3 turn about a frame diagonal that
    permutes the axes)."""
    rng = np.random.default_rng(11)
    spec = random_spec(cut_type, rng)
    row = ck.cut_row(spec)
    q = ck.aligned_frame(spec.axis)
    code = ck.cut_type_code(cut_type)
    lock = slice(3, 6) if cut_type == "fixed" else slice(2, 5)
    for n, theta in ((random_unit(rng), 0.7), (np.ones(3) / np.sqrt(3), 2 * np.pi / 3),
                     (random_unit(rng), -2.5)):
        frame_a = spec.parent_origin.copy()
        frame_a[:3, :3] = frame_a[:3, :3] @ q
        motion = np.eye(4)
        motion[:3, :3] = expm(theta * np.cross(np.eye(3), n))     # Rot(n, theta): [n]x
        assert_close(motion[:3, :3] @ n, n, "rotation axis")
        frame_b = spec.child_origin.copy()
        frame_b[:3, :3] = frame_b[:3, :3] @ q
        pose_b = frame_a @ motion @ np.linalg.inv(frame_b)
        assert_close(residual(code, row, np.eye(4), pose_b)[lock], np.sin(theta) * n,
                     f"{cut_type}: orientation lock")


@pytest.mark.parametrize("cut_type", CUT_TYPES)
@pytest.mark.parametrize("universe", [False, True])
def test_common_translation_cancels(cut_type, universe):
    """At any configuration, a common translational acceleration c of both bodies (the kernels'
    gravity offset) contributes G_a [R_a^T c; 0] + G_b [R_b^T c; 0] = 0."""
    rng = np.random.default_rng(17)
    spec = random_spec(cut_type, rng)
    row = ck.cut_row(spec, random_placement(rng), random_placement(rng))
    pose_a = np.eye(4) if universe else random_pose(rng)
    pose_b = random_pose(rng)
    _, ga, gb, _ = evaluate(ck.cut_type_code(cut_type), row, pose_a, np.zeros(6), pose_b,
                            rng.normal(size=6))
    c = np.array([0.0, 0.0, 9.81]) + rng.normal(size=3)
    offset = ga @ np.r_[pose_a[:3, :3].T @ c, 0, 0, 0] + gb @ np.r_[pose_b[:3, :3].T @ c, 0, 0, 0]
    assert_close(offset, np.zeros(ck.CUT_ROWS[ck.cut_type_code(cut_type)]), "common translation")
