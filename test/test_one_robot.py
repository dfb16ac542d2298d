"""One Robot class for every kind of robot, and every capability combined on one model.

The combined model is a four-bar whose rocker is a flexible aluminium beam (4 modes), closed by a
spherical cut at the beam's deformed tip, with a pointer on the crank whose joint mimics the
coupler joint, a joint spring on the pointer and a spring-damper from the ground to the beam's
deformed mid-point; the crank is prescribed in the simulations.

References: (1) the forward dynamics equal a dense model assembled from scratch around the plain
flexible tree (the same URDF loaded without loops, mimic couplings or force elements, whose mass
matrix and bias are checked against Exudyn and oracles elsewhere): the loop constraint and the
spring's point written from link poses of massless marker links by central differences, the
mimic row by hand, one KKT solve; (2) the simulations keep the invariants the parts promise (loop
closed, mimic exact, prescribed joint on its trajectory, robot.time advancing); (3) undamped,
the mechanical energy error of every integrator converges with its order as the step halves.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import mbd_ros
from mbd_ros.robot.integrators import INTEGRATORS, default_max_step

from conftest import RTOL, assert_close
from flexible_models import beam_entry

COMBINED = """<?xml version="1.0"?>
<robot name="combined">
  <link name="ground"/>
  <link name="crank"><inertial><origin xyz="0.1 0 0"/><mass value="0.5"/>
    <inertia ixx="1e-4" ixy="0" ixz="0" iyy="2e-3" iyz="0" izz="2e-3"/></inertial></link>
  <link name="coupler"><inertial><origin xyz="0.3 0 0"/><mass value="0.8"/>
    <inertia ixx="1e-4" ixy="0" ixz="0" iyy="2.4e-2" iyz="0" izz="2.4e-2"/></inertial></link>
  <link name="coupler_end"/>
  <link name="beam"><inertial><origin xyz="0.25 0 0"/><mass value="0.27"/>
    <inertia ixx="1e-6" ixy="0" ixz="0" iyy="5.6e-3" iyz="0" izz="5.6e-3"/></inertial></link>
  <link name="beam_mid"/>
  <link name="beam_tip"/>
  <link name="pointer"><inertial><origin xyz="0.04 0 0"/><mass value="0.1"/>
    <inertia ixx="1e-5" ixy="0" ixz="0" iyy="1e-4" iyz="0" izz="1e-4"/></inertial></link>
  <joint name="crank_joint" type="continuous"><parent link="ground"/><child link="crank"/>
    <origin xyz="0 0 0"/><axis xyz="0 1 0"/></joint>
  <joint name="coupler_joint" type="continuous"><parent link="crank"/><child link="coupler"/>
    <origin xyz="0.2 0 0"/><axis xyz="0 1 0"/></joint>
  <joint name="coupler_end_joint" type="fixed"><parent link="coupler"/><child link="coupler_end"/>
    <origin xyz="0.6 0 0"/></joint>
  <joint name="pointer_joint" type="continuous"><parent link="crank"/><child link="pointer"/>
    <origin xyz="0.1 0 0.05"/><axis xyz="0 1 0"/>
    <mimic joint="coupler_joint" multiplier="0.5" offset="0.1"/></joint>
  <joint name="rocker_joint" type="continuous"><parent link="ground"/><child link="beam"/>
    <origin xyz="0.5 0 0"/><axis xyz="0 1 0"/></joint>
  <joint name="beam_mid_joint" type="fixed"><parent link="beam"/><child link="beam_mid"/>
    <origin xyz="0.25 0 0"/></joint>
  <joint name="beam_tip_joint" type="fixed"><parent link="beam"/><child link="beam_tip"/>
    <origin xyz="0.5 0 0"/></joint>
</robot>"""

CLOSURES = [{"name": "tip", "type": "spherical", "parent": "coupler", "child": "beam",
             "parent_origin": {"xyz": [0.6, 0.0, 0.0]}, "child_origin": {"xyz": [0.5, 0.0, 0.0]}}]
GROUND_POINT = np.array([0.75, 0.0, 0.3])
SPRING = dict(stiffness=300.0, rest=0.25)
POINTER_SPRING = dict(stiffness=2.0, rest=0.3)
FORCES = [{"name": "pointer_spring", "type": "joint_spring", "joint": "pointer_joint",
           "stiffness": POINTER_SPRING["stiffness"], "rest_position": POINTER_SPRING["rest"]},
          {"name": "strut", "type": "spring_damper", "parent": "ground",
           "parent_point": GROUND_POINT.tolist(), "child": "beam",
           "child_point": [0.25, 0.0, 0.0], "stiffness": SPRING["stiffness"],
           "rest_length": SPRING["rest"]}]
CRANK = 0.7


def flexible():
    return beam_entry(0.5, 2e-4, 2e-9, 1e-9, modes=4, torsion=True)


def combined():
    data = {"closures": CLOSURES, "actuated": ["crank_joint"], "forces": FORCES,
            **flexible()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)     # the beam's mass replaces the URDF's
        return mbd_ros.load(COMBINED, closures=data, forces=data, flexible=data, mimic=True)


def plain_flexible_tree():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return mbd_ros.load(COMBINED, flexible=flexible())


def initial_state(robot, seed, bend=1e-3):
    """An assembled configuration near the crank angle CRANK with the beam slightly bent, and
    admissible velocities."""
    rng = np.random.default_rng(seed)
    q = robot.neutral()
    j = {name: robot.idx_q[i] for i, name in enumerate(robot.joint_names)}
    q[j["crank_joint"]] = CRANK
    q[j["coupler_joint"]] = -2.04         # near the closed configuration (-2.0366, -1.9994)
    q[j["rocker_joint"]] = -2.0
    q[robot.elastic_q_indices] = rng.normal(size=len(robot.elastic_q_indices)) * bend
    q = robot.assemble(q, elastic=bend > 0.0)   # a random bend is out of the joints' reach
    v = robot.constraint_basis(q) @ rng.normal(size=robot.nv - robot.constraint_jacobian(q)
                                               .shape[0])
    return q, robot.project_velocity(q, v)


def closed_configuration(robot):
    """An assembled configuration of a closed-loop robot from random guesses (a neutral q can be
    a degenerate one the loops cannot close from)."""
    rng = np.random.default_rng(0)
    for _ in range(20):
        try:
            return robot.assemble(robot.random_configuration(rng))
        except ValueError:
            continue
    raise AssertionError("no random configuration of the mechanism assembles")


# ---- the reference: a dense model around the plain tree ------------------------------------------

def _point(tree, q, link):
    return tree.link_pose(q, link)[:3, 3]


def _tangent_jacobian(tree, q, fn, h=1e-6):
    """d fn(q (+) h e_k) / dh, central differences on the tangent space (columns k)."""
    columns = []
    for k in range(tree.nv):
        e = np.zeros(tree.nv)
        e[k] = 1.0
        columns.append((fn(tree.integrate(q, e, h)) - fn(tree.integrate(q, e, -h))) / (2 * h))
    return np.array(columns).T


def reference_dynamics(tree, q, v, tau, prescribed=None):
    """qdd of the combined model from the plain tree's M and bias plus constraint rows and
    spring forces written from scratch. prescribed: (v index, acceleration) or None."""
    idx = {name: int(tree.idx_v[i]) for i, name in enumerate(tree.joint_names)}
    mass = tree.mass_matrix(q)
    bias = tree.inverse_dynamics(q, v, np.zeros(tree.nv))
    force = np.array(tau, dtype=float)
    # joint spring on the pointer: -k (q - q0)
    iq_pointer = tree.idx_q[tree.joint_names.index("pointer_joint")]
    force[idx["pointer_joint"]] -= POINTER_SPRING["stiffness"] * (q[iq_pointer] -
                                                                  POINTER_SPRING["rest"])
    # the strut: tension k (l - l0) pulls the beam's deformed mid-point to the ground point
    mid = _point(tree, q, "beam_mid")
    d = mid - GROUND_POINT
    length = np.linalg.norm(d)
    pull = -SPRING["stiffness"] * (length - SPRING["rest"]) * d / length
    force += _tangent_jacobian(tree, q, lambda x: _point(tree, x, "beam_mid")).T @ pull
    # rows: the spherical cut (tip points coincide), then the mimic coupling
    gap = lambda x: _point(tree, x, "coupler_end") - _point(tree, x, "beam_tip")  # noqa: E731
    jac = _tangent_jacobian(tree, q, gap)
    h = 1e-4     # gamma = d/ds (G(q (+) s v) v): error ~h^2 |v|^3, round-off ~eps / h^2 ... 1e-8
    gamma = ((_tangent_jacobian(tree, tree.integrate(q, v, h), gap) @ v
              - _tangent_jacobian(tree, tree.integrate(q, v, -h), gap) @ v) / (2 * h))
    mimic = np.zeros((1, tree.nv))
    mimic[0, idx["pointer_joint"]] = 1.0
    mimic[0, idx["coupler_joint"]] = -0.5
    rows = [jac, mimic]
    rhs_rows = [-gamma, np.zeros(1)]
    if prescribed is not None:
        row = np.zeros((1, tree.nv))
        row[0, prescribed[0]] = 1.0
        rows.append(row)
        rhs_rows.append(np.array([prescribed[1]]))
    G = np.vstack(rows)
    kkt = np.block([[mass, -G.T], [G, np.zeros((G.shape[0], G.shape[0]))]])
    solution = np.linalg.lstsq(kkt, np.concatenate([force - bias, *rhs_rows]), rcond=None)[0]
    return solution[:tree.nv]


# ---- one class ----------------------------------------------------------------------------------

def test_every_kind_of_robot_is_one_class():
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent
    kinds = {
        "tree": lambda: mbd_ros.load(str(root / "urdf" / "arm7.urdf")),
        "floating": lambda: mbd_ros.load(str(root / "urdf" / "branching.urdf"), floating_base=True),
        "closed loop": lambda: mbd_ros.load(str(root / "urdf" / "fourbar.urdf"),
                                            closures=str(root / "config" / "fourbar_closures.yaml")),
        "flexible": lambda: mbd_ros.load(str(root / "urdf" / "flexible_arm.urdf"),
                                         flexible=str(root / "config" / "flexible_arm.yaml")),
        "combined": combined,
    }
    for kind, make in kinds.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            robot = make()
        assert type(robot) is mbd_ros.Robot, kind
        assert isinstance(robot, mbd_ros.Robot), kind


# the public names of the Robot (docs/design.md's contract and the former robot classes'): every
# robot has all of them, whatever its parts
PUBLIC_NAMES = """nq nv joint_names joint_types idx_q idx_v link_names wrench_joint_names wrench_frames
effort_limits velocity_limits position_limits damping friction total_mass time batch_threads
closure_names closure_types closure_set actuated_joints n_constraints elastic_names
elastic_q_indices elastic_v_indices flexible flexible_links mimic_joints mimic_coupling
mimic_independent force_element_names last_prescribed_torques last_rank last_step baumgarte model
default_integrator GENERATED codegen_path neutral random_configuration integrate forward_dynamics
inverse_dynamics mass_matrix bias_forces gravity_forces damping_forces joint_wrenches
closure_wrenches forward_dynamics_batch inverse_dynamics_batch link_pose kinetic_energy
potential_energy elastic_energy highest_frequency add_force force_element_values step summary
compile_c_calls drop_c_calls compile_all call_paths loop_state loop_jacobian constraint_jacobian
closure_residual partition assemble project_velocity project_acceleration project_state analyze
multipliers apply_mimic couple_in_place body_names inertial_parameters regressor with_inertial_parameters
inverse_dynamics_derivatives forward_dynamics_derivatives link_velocity link_acceleration link_jacobian
center_of_mass com_jacobian centroidal_momentum_matrix mass_matrix_inverse
operational_space_inertia rollout""".split()


def test_every_robot_has_every_public_name():
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        robots = [mbd_ros.load(str(root / "urdf" / "arm7.urdf")), combined()]
    for robot in robots:
        missing = [name for name in PUBLIC_NAMES if not hasattr(robot, name)]
        assert not missing, (robot, missing)


def test_combined_forward_dynamics_equal_the_dense_reference():
    """Loop, mimic coupling, both springs and the elastic coordinates in one model: qdd equals
    the dense reference; with the crank prescribed too. Tolerance 1e-5 of max |qdd| + the
    reference's own error: its constraint rows and gamma come from central differences (h = 1e-6
    and 1e-4: truncation ~h^2 |q'''|, round-off ~eps / h^2 = 1e-8 relative)."""
    robot, tree = combined(), plain_flexible_tree()
    rng = np.random.default_rng(5)
    crank = int(robot.idx_v[robot.joint_names.index("crank_joint")])
    for seed in (1, 2):
        q, v = initial_state(robot, seed)
        tau = np.zeros(robot.nv)
        tau[crank] = rng.uniform(-1.0, 1.0)
        qdd = robot.forward_dynamics(q, v, tau)
        expected = reference_dynamics(tree, q, v, tau)
        np.testing.assert_allclose(qdd, expected, rtol=0, atol=1e-5 * np.abs(expected).max())
        prescribed = robot.forward_dynamics(q, v, tau, prescribed={"crank_joint": 0.4})
        expected = reference_dynamics(tree, q, v, tau, prescribed=(crank, 0.4))
        np.testing.assert_allclose(prescribed, expected, rtol=0,
                                   atol=1e-5 * np.abs(expected).max())
        assert prescribed[crank] == 0.4


def crank_trajectory(t):
    """(q, qd, qdd) of the prescribed crank."""
    w = 2.0 * np.pi
    return CRANK + 0.2 * np.sin(w * t), 0.2 * w * np.cos(w * t), -0.2 * w * w * np.sin(w * t)


@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_combined_model_steps_with_every_integrator(integrator):
    """robot.step with the crank prescribed: robot.time advances by dt per step, the loop stays
    closed (residual below the step's projection tolerance, 1e-10 plus the Newton tolerance), the
    mimic joint on its leader (exactly: the coupling is linear and projected), the crank on its
    trajectory, the state finite. dt resolves the highest elastic frequency (omega dt = 0.5, over
    sampled configurations: it varies with q)."""
    robot = combined()
    q, v = initial_state(robot, 3, bend=0.0)
    crank = robot.joint_names.index("crank_joint")
    iq, iv = robot.idx_q[crank], robot.idx_v[crank]
    q[iq], v[iv] = crank_trajectory(0.0)[:2]
    q = robot.assemble(q)
    v = robot.project_velocity(q, v)
    dt = 0.5 * default_max_step(robot)     # omega dt = 0.5 at the highest elastic frequency
    tau = np.zeros(robot.nv)
    robot.time = 0.0
    for k in range(1, 11):
        q, v = robot.step(q, v, tau, dt, integrator=integrator,
                          prescribed={"crank_joint": crank_trajectory})
        assert robot.time == pytest.approx(k * dt, rel=1e-12, abs=0.0)
        assert np.isfinite(q).all() and np.isfinite(v).all()
        position, velocity = robot.closure_residual(q, v)
        assert position < 1e-9 and velocity < 1e-9, (k, position, velocity)
        pointer = robot.joint_names.index("pointer_joint")
        coupler = robot.joint_names.index("coupler_joint")
        assert q[robot.idx_q[pointer]] == pytest.approx(0.5 * q[robot.idx_q[coupler]] + 0.1,
                                                        abs=1e-9)
        assert q[iq] == pytest.approx(crank_trajectory(k * dt)[0], abs=1e-12)


@pytest.mark.parametrize("integrator, order", [("rk4", 4), ("semi_implicit_euler", 1),
                                               ("implicit_euler", 1), ("symplectic_euler", 1)])
def test_combined_model_energy_error_converges_with_the_integrators_order(integrator, order):
    """Undamped and unforced (no prescribed joint), released from rest, the combined model
    conserves its mechanical energy (kinetic + gravity + elastic + springs). Over the same 10 ms,
    the energy error of each
    integrator falls by at least 2^order / 2 when the step halves (its order, with a factor 2 of
    margin), unless it is already at round-off (1e-11 of the energy scale)."""
    robot = combined()
    q0, _ = initial_state(robot, 4, bend=1e-4)
    v0 = np.zeros(robot.nv)          # released from rest: gravity and the springs drive it
    energy = lambda q, v: robot.kinetic_energy(q, v) + robot.potential_energy(q)  # noqa: E731
    e0 = energy(q0, v0)
    scale = max(1.0, abs(e0), robot.kinetic_energy(q0, v0))
    base = 0.5 * default_max_step(robot)    # omega dt = 0.5 at the highest elastic frequency
    errors = []
    for dt in (base, base / 2):
        steps = int(round(0.01 / dt))
        q, v = q0, v0
        for _ in range(steps):
            q, v = robot.step(q, v, np.zeros(robot.nv), 0.01 / steps, integrator=integrator)
        errors.append(abs(energy(q, v) - e0))
    floor = 1e-11 * scale
    assert errors[1] <= max(errors[0] / (2 ** order / 2), floor), errors


def test_every_integrator_steps_every_kind_and_advances_the_clock():
    """Each integrator takes a step on a tree, a floating base, a closed loop, a flexible arm and
    a robot with a mimic joint: a finite state, and robot.time advanced by dt."""
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent
    robots = [mbd_ros.load(str(root / "urdf" / "arm7.urdf")),
              mbd_ros.load(str(root / "urdf" / "branching.urdf"), floating_base=True),
              mbd_ros.load(str(root / "urdf" / "fourbar.urdf"),
                           closures=str(root / "config" / "fourbar_closures.yaml"))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        robots.append(mbd_ros.load(str(root / "urdf" / "flexible_arm.urdf"),
                                   flexible=str(root / "config" / "flexible_arm.yaml")))
    robots.append(combined())
    for robot in robots:
        q = robot.neutral()
        if robot.flexible_links and robot.closure_names:   # the neutral four-bar is degenerate
            q = initial_state(robot, 3, bend=0.0)[0]
        elif robot.closure_names:
            q = closed_configuration(robot)
        v = np.zeros(robot.nv)
        dt = 0.5 * default_max_step(robot)
        for integrator in INTEGRATORS:
            start = robot.time
            q1, v1 = robot.step(q, v, np.zeros(robot.nv), dt, integrator=integrator)
            assert np.isfinite(q1).all() and np.isfinite(v1).all(), (robot, integrator)
            assert robot.time == start + dt, (robot, integrator)


def test_default_step_of_the_flexible_arm_does_not_diverge():
    """robot.step(q, v, tau, 1e-3) with the default integrator on the sample flexible arm (highest
    free frequency ~835 Hz: one RK4 step of 1 ms is unstable, omega dt = 5.2 > 2.83) takes
    substeps of omega h <= 1 and agrees with RK4 at a tenth of that step: the difference is RK4's
    truncation error, (omega h)^5 / 120 ~ 1 % per substep of the highest mode's share of the motion,
    below 1e-3 of the motion over 20 ms."""
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        robot = mbd_ros.load(str(root / "urdf" / "flexible_arm.urdf"),
                             flexible=str(root / "config" / "flexible_arm.yaml"))
    q0 = robot.neutral()
    v0 = np.zeros(robot.nv)
    tau = np.zeros(robot.nv)
    tau[0] = 2.0
    q, v = q0, v0
    for _ in range(20):
        q, v = robot.step(q, v, tau, 1e-3)
    n = int(np.ceil(0.02 / (0.1 * default_max_step(robot))))   # omega h = 0.1
    qr, vr = q0, v0
    for _ in range(n):
        qr, vr = robot.step(qr, vr, tau, 0.02 / n, integrator="rk4")
    motion = np.abs(qr - q0).max()
    assert motion > 1e-4
    assert_close(q, qr, "default step vs fine RK4", rtol=max(RTOL, 1e-3 * motion))


def test_a_named_explicit_integrator_past_its_stability_is_warned():
    """robot.step(..., dt, integrator=X) on the sample flexible arm: past X's stability boundary
    for the highest elastic mode (omega dt > 2 sqrt(2) for RK4, > 2 for the Euler variants) an
    UnstableStepWarning says so, naming omega dt and the default's substeps, at the caller's
    line; and the step does grow (a state far beyond the default step's); inside the boundary,
    with implicit Euler and with the default integrator, no warning."""
    from pathlib import Path
    from mbd_ros.simulation import UnstableStepWarning
    root = Path(__file__).resolve().parent.parent
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        robot = mbd_ros.load(str(root / "urdf" / "flexible_arm.urdf"),
                             flexible=str(root / "config" / "flexible_arm.yaml"))
    q0, v0, tau = robot.neutral(), np.zeros(robot.nv), np.zeros(robot.nv)
    tau[0] = 2.0
    omega_dt = lambda dt: 2 * np.pi * max(robot.highest_frequency(), 1.0) * dt  # noqa: E731
    assert omega_dt(1e-3) > 2 * np.sqrt(2)       # 835 Hz: 5.2 at 1 ms
    for integrator in ("rk4", "semi_implicit_euler", "symplectic_euler"):
        with pytest.warns(UnstableStepWarning, match=rf"integrator='{integrator}'.*omega dt") \
                as caught:
            robot.step(q0, v0, tau, 1e-3, integrator=integrator)
        assert caught[0].filename == __file__
    from mbd_ros.simulation import SimulationDiverged
    q, v = q0, v0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnstableStepWarning)
        try:
            for _ in range(3):
                q, v = robot.step(q, v, tau, 1e-3, integrator="rk4")
        except SimulationDiverged:      # past max_velocity: grown, certainly
            v = np.full(robot.nv, np.inf)
    q_default, v_default = q0, v0
    for _ in range(3):
        q_default, v_default = robot.step(q_default, v_default, tau, 1e-3)
    assert np.abs(v).max() > 10 * np.abs(v_default).max()
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnstableStepWarning)
        robot.step(q0, v0, tau, 1e-3)                               # the default substeps
        robot.step(q0, v0, tau, 1e-3, integrator="implicit_euler")
        robot.step(q0, v0, tau, 2.5 / omega_dt(1.0), integrator="rk4")   # omega dt = 2.5
