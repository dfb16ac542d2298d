"""Column layout of the flat model and workspace arrays shared by the builder and the kernels.

The Model is two row-per-body arrays, row 0 being the universe (fixed base) and bodies numbered so
that ``parent[i] < i`` (as in Featherstone's spatial_v2 and Pinocchio):

- ``body_int``   (nb + 1, BODY_INT_WIDTH)   int64: topology and index maps.
- ``body_float`` (nb + 1, BODY_FLOAT_WIDTH) float64: constant geometry and inertia.

The Data (workspace) is ``work`` (nb + 1, WORK_WIDTH) float64, overwritten by every kernel call.
Packing everything into three arrays keeps a kernel call at seven array arguments, which matters:
numba's dispatch costs ~0.06 µs per array argument, a sizeable part of a 1–3 µs dynamics call.

Spatial vectors follow Pinocchio: motion = [linear; angular], force = [force; torque], all
expressed in the body's own frame (the frame of the joint that moves it, = its URDF link frame).
Matrices are stored row-major in their slots; a 6 x k motion subspace is stored column by column.
"""

# ---- joint types (body_int[:, JOINT_TYPE]) ------------------------------------------------------
JOINT_FIXED = 0        # only for the universe row; fixed URDF joints are merged, never a body
JOINT_REVOLUTE = 1     # revolute and continuous: one angle about AXIS
JOINT_PRISMATIC = 2    # one displacement along AXIS
JOINT_SPHERICAL = 3    # q = unit quaternion [x y z w], v = body angular velocity
JOINT_FREE = 4         # q = [x y z qx qy qz qw], v = [linear, angular] in the body frame
JOINT_PLANAR = 5       # q = [x, y, theta] in the plane (AXIS2, AXIS3), normal AXIS; v = body [vx vy w]
# ---- joint catalogue extensions (helical, cylindrical) ----
JOINT_HELICAL = 6      # one angle about AXIS with translation pitch * angle along it; S = [h a; a]
                       # (h a is MOTION_SUBSPACE[0:3]: the pose reads the pitch from there)
JOINT_CYLINDRICAL = 7  # q = [angle about AXIS, displacement along AXIS]; S = [[0, a], [a, 0]]
# a URDF universal joint is two JOINT_REVOLUTE bodies (a massless cross, then the child; model.py)

JOINT_TYPE_NAMES = {
    JOINT_REVOLUTE: "revolute",
    JOINT_PRISMATIC: "prismatic",
    JOINT_SPHERICAL: "spherical",
    JOINT_FREE: "floating",
    JOINT_PLANAR: "planar",
    JOINT_HELICAL: "helical",
    JOINT_CYLINDRICAL: "cylindrical",
}
JOINT_NQ = {JOINT_REVOLUTE: 1, JOINT_PRISMATIC: 1, JOINT_SPHERICAL: 4, JOINT_FREE: 7, JOINT_PLANAR: 3,
            JOINT_HELICAL: 1, JOINT_CYLINDRICAL: 2}
JOINT_NV = {JOINT_REVOLUTE: 1, JOINT_PRISMATIC: 1, JOINT_SPHERICAL: 3, JOINT_FREE: 6, JOINT_PLANAR: 3,
            JOINT_HELICAL: 1, JOINT_CYLINDRICAL: 2}

# ---- body_int columns -----------------------------------------------------------------------------
PARENT = 0             # parent body index (-1 for the universe)
JOINT_TYPE = 1
IDX_Q = 2              # first index of the joint in q
IDX_V = 3              # first index of the joint in v
JOINT_NQ_COL = 4       # number of position coordinates of the joint
JOINT_NV_COL = 5       # number of velocity coordinates (columns of the motion subspace)
PARENT_LINK = 6        # the URDF link (index into the link arrays) the body's joint hangs from
SUBTREE_END = 7        # one past the last descendant: bodies are numbered depth-first, so the
                       # subtree of i is the index range [i, SUBTREE_END)
BODY_INT_WIDTH = 8

# ---- body_float columns ---------------------------------------------------------------------------
PLACEMENT_ROT = 0      # 9: rotation of the joint frame in the parent body frame (x_p = R x + p)
PLACEMENT_POS = 9      # 3: origin of the joint frame in the parent body frame
AXIS = 12              # 3: revolute/prismatic axis, planar normal (unit, joint frame)
AXIS2 = 15             # 3: planar in-plane x direction
AXIS3 = 18             # 3: planar in-plane y direction (AXIS3 = AXIS x AXIS2)
SPATIAL_INERTIA = 21   # 36: 6x6 rigid-body inertia about the body origin, body frame (merged links)
MOTION_SUBSPACE = 57   # 36: S (6 x k), column j at [MOTION_SUBSPACE + 6 j, +6)
DAMPING = 93           # 6: viscous damping per joint dof (URDF <dynamics damping>)
FRICTION = 99          # 6: Coulomb friction per joint dof (URDF <dynamics friction>)
MASS = 105             # 1: merged body mass
COM = 106              # 3: merged body centre of mass, body frame
FRICTION_SPEED = 109   # 1: friction smoothing velocity of the joint (model option friction_velocity)
ROT_AXIS_SKEW = 110    # 9: revolute: R_T [a]   (so that R_T R_J = c R_T + s R_T[a] + (1-c) (R_T a) a^T)
ROT_AXIS = 119         # 3: revolute: R_T a
BODY_FLOAT_WIDTH = 122
GRAVITY = 0            # 3: in row 0 (the universe): gravity in the root frame

# ---- work columns (per body, all in the body frame unless said otherwise) ----------------------
ROT = 0                # 9: rotation of body i in its parent frame
POS = 9                # 3: origin of body i in its parent frame
VEL = 12               # 6: spatial velocity v_i
ACC = 18               # 6: spatial acceleration a_i (gravity included as a base acceleration)
BIAS_ACC = 24          # 6: velocity-product acceleration c_i (seed: a_rel,i)
FORCE = 30             # 6: joint wrench f^p_i (RNEA) / articulated bias force p^A_i (ABA)
ART_INERTIA = 36       # 36: articulated inertia M*_i (ABA) / composite inertia (CRBA: 10 rigid-body parameters)
U_MAT = 72             # 36: U_i = M*_i S_i (6 x k, column-major like S)
D_INV = 108            # 36: N_i^-1 = (S_i^T M*_i S_i)^-1 (k x k, row-major)
U_TAU = 144            # 6: u_i = tau_i - S_i^T p^A_i (k)
WORLD_ROT = 150        # 9: rotation of body i in the root frame
WORLD_POS = 159        # 3: origin of body i in the root frame
FEXT = 162             # 6: external wrench on body i, body frame (sum over its links)
SCRATCH = 168          # 36: per-body scratch (CRBA's F = Ic S)
TRANSFORM_SCRATCH = 204  # 36: scratch of the inertia transform to the parent frame
UNIT_LOAD = 240        # 6: closed loops: articulated load of a unit multiplier (seed: [G_s^T]*_i)
UNIT_U = 246           # 6: closed loops: -C_i^T [G_s^T]*_i (k)
UNIT_ACC = 252         # 6: closed loops: body acceleration due to a unit multiplier (seed: A_i)
UNIT_ON_PATH = 258     # 1: closed loops: 1 while the body is on a unit load's path to the root
WORK_WIDTH = 259

# ---- link arrays (for fixed-joint wrenches, link poses and external forces) -------------------------
LINK_BODY = 0          # body the link is merged into
LINK_PARENT = 1        # parent link (-1 for the root link)
LINK_FIXED = 2         # 1 if the link hangs from its parent link by a fixed joint (merged), else 0
LINK_INT_WIDTH = 3
LINK_ROT = 0           # 9: rotation of the link frame in its body frame
LINK_POS = 9           # 3: origin of the link frame in its body frame
LINK_INERTIA = 12      # 36: the link's own spatial inertia about the body origin, body frame
LINK_FLOAT_WIDTH = 48

# ---- kernel status codes (kernels never raise; wrappers turn these into ValueErrors) -----------
STATUS_OK = 0
STATUS_BAD_Q = 1           # non-finite q
STATUS_BAD_V = 2           # non-finite v
STATUS_BAD_INPUT = 3       # non-finite tau / qdd
STATUS_BAD_QUATERNION = 4  # quaternion not of unit norm
STATUS_SHAPE_Q = 5         # q is not (nq,)
STATUS_SHAPE_V = 6         # v is not (nv,)
STATUS_SHAPE_INPUT = 7     # tau / qdd is not (nv,)
STATUS_SHAPE_OUT = 8       # the output array has the wrong shape
STATUS_SINGULAR = 1000     # + body index: articulated joint inertia not positive definite

QUATERNION_NORM_TOL = 1e-6

# ---- closed loops: cut_int columns (one row per cut joint) ---------------------------------------
CUT_TYPE = 0           # closure_kinematics type code
CUT_BODY_A = 1         # body of the parent-side link (0 = universe)
CUT_BODY_B = 2         # body of the child-side link
CUT_ROW0 = 3           # first row of the cut in the stacked constraint rows
CUT_ROWS = 4           # number of constraint rows b_s
CUT_INT_WIDTH = 5

# ---- closed loops: loop_float (one row per constraint row; b = sum of b_s rows) -------------------
LOOP_RESIDUAL = 0      # g_s (position residual)
LOOP_BIAS = 1          # gamma''_s
LOOP_JAC_A = 2         # 6: G^s_a (acting on body a's body-frame twist)
LOOP_JAC_B = 8         # 6: G^s_b
LOOP_RHS = 14
LOOP_LAMBDA = 15       # multipliers lambda_s
LOOP_EIGENVALUE = 16
LOOP_MATRIX = 17       # b columns: G_s A (the cuts' inverse operational-space inertia)
# then b columns of factor/eigen scratch, b columns of eigenvectors, nv columns of L (unit qdd)
LOOP_FIXED_WIDTH = 17

