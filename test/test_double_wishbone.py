"""The lecture's double-wishbone suspension (urdf/double_wishbone.urdf, config/double_wishbone.yaml)
against two independent references:

1. the Lagrange equations of mixed type for the lecture's own coordinates phi1, phi2, phi3 with
   multipliers lambda1, lambda2: the 5x5 system [M Phi^T; Phi 0] [s''; -lambda] = [p1; p2] is
   derived here symbolically (sympy) from the kinetic energy T, the potential V (gravity and the
   strut spring), the Rayleigh function D (strut damper) and the closure f(s) = 0 written in the
   lecture's variables, with the link data read from the URDF and YAML by the tests' own parser.
   All three formalisms (recursive, minimal, descriptor) must give the same accelerations, and
   the closure wrench must be the lambdas' force;
2. Exudyn: a planar rigid multibody model (three 2-D rigid bodies, revolute joints, a
   spring-damper connector with preload, gravity) simulated by Exudyn's own solver.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import _missing_oracle, assert_close
from oracle import parse_urdf

import mbd_ros

ROOT = Path(__file__).resolve().parent.parent
URDF = ROOT / "urdf" / "double_wishbone.urdf"
CONFIG = ROOT / "config" / "double_wishbone.yaml"
G = 9.81


@pytest.fixture(scope="module")
def robot():
    return mbd_ros.load(str(URDF), closures=str(CONFIG), forces=str(CONFIG))


def data():
    """The mechanism's parameters in the lecture's notation, from the URDF and YAML files."""
    tree = parse_urdf(URDF.read_text())
    config = yaml.safe_load(CONFIG.read_text())
    cut = config["closures"][0]
    strut = config["forces"][0]
    joint = {j.name: j for j in tree.joints_dfs()}
    link = tree.links
    b_knuckle = np.array(cut["parent_origin"]["xyz"])       # B in the knuckle frame (x, z used)
    b_upper = np.array(cut["child_origin"]["xyz"])          # B in the upper arm frame
    chassis_point = np.array(strut["parent_point"])
    d = float(np.linalg.norm(strut["child_point"]))
    radius = float(np.linalg.norm(chassis_point))
    par = dict(
        l0=float(joint["upper_arm_joint"].origin[2, 3]),
        l1=float(joint["knuckle_joint"].origin[0, 3]),
        l2=float(np.linalg.norm(b_knuckle)), l3=float(np.linalg.norm(b_upper)),
        m1=link["lower_arm"].mass, m2=link["knuckle"].mass, m3=link["upper_arm"].mass,
        c1=float(np.linalg.norm(link["lower_arm"].com)), p=float(np.linalg.norm(link["knuckle"].com)),
        c3=float(np.linalg.norm(link["upper_arm"].com)),
        I2T=link["knuckle"].inertia[1, 1],
        d=d, beta=math.atan2(chassis_point[0], chassis_point[2]),
        l=math.sqrt(radius ** 2 - d ** 2),
        k=strut["stiffness"], c=strut["damping"], F0=strut.get("preload", 0.0),
        phi2_0=math.atan2(-b_knuckle[0], b_knuckle[2]), phi3_0=math.atan2(b_upper[0], -b_upper[2]))
    # moments of inertia of the arms about their pivots (parallel axes), rods on their lines
    par["I1"] = link["lower_arm"].inertia[1, 1] + par["m1"] * par["c1"] ** 2
    par["I3"] = link["upper_arm"].inertia[1, 1] + par["m3"] * par["c3"] ** 2
    # the lecture's model: the strut's rest length is the geometry's l, centres of mass on the links
    assert abs(par["l"] - strut["rest_length"]) < 1e-12
    assert np.allclose(np.cross(link["knuckle"].com, b_knuckle), 0.0, atol=1e-12)
    return par


@pytest.fixture(scope="module")
def lagrange():
    """A function (phi, dphi) -> (phi'', lambda) solving the lecture's 5x5 system."""
    try:
        import sympy as sp
    except ImportError:
        _missing_oracle("sympy (pip install sympy) derives the reference equations; it is in the "
                        "test extra")
    par = data()
    s = sp.symbols("phi1:4")
    sd = sp.symbols("dphi1:4")
    P = {k: sp.Float(v) for k, v in par.items()}
    phi1, phi2, phi3 = s
    # knuckle centre of mass (the lecture's x2, y2) and its velocity by the chain rule
    x2 = P["l1"] * sp.sin(phi1) - P["p"] * sp.sin(phi2)
    y2 = P["l1"] * sp.cos(phi1) + P["p"] * sp.cos(phi2)
    dot = lambda e: sum(sp.diff(e, si) * di for si, di in zip(s, sd))   # noqa: E731
    T = (P["I1"] * sd[0] ** 2 + P["I2T"] * sd[1] ** 2 + P["m2"] * (dot(x2) ** 2 + dot(y2) ** 2)
         + P["I3"] * sd[2] ** 2) / 2
    # strut: length l + xi from the law of cosines, tension F = k xi + c xi' + F0
    a, b = P["l"] ** 2 + 2 * P["d"] ** 2, P["d"] * sp.sqrt(P["l"] ** 2 + P["d"] ** 2)
    xi = sp.sqrt(a - 2 * b * sp.cos(phi1 - P["beta"])) - P["l"]
    V = (G * (P["m1"] * P["c1"] * sp.cos(phi1) + P["m2"] * y2
              + P["m3"] * (P["l0"] - P["c3"] * sp.cos(phi3)))
         + P["k"] * xi ** 2 / 2 + P["F0"] * xi)
    D = P["c"] * dot(xi) ** 2 / 2
    f = [P["l1"] * sp.sin(phi1) - P["l2"] * sp.sin(phi2) - P["l3"] * sp.sin(phi3),
         P["l1"] * sp.cos(phi1) + P["l2"] * sp.cos(phi2) + P["l3"] * sp.cos(phi3) - P["l0"]]
    M = sp.Matrix(3, 3, lambda i, j: sp.diff(T, sd[i], sd[j]))
    Phi = sp.Matrix(2, 3, lambda k, j: sp.diff(f[k], s[j]))
    p1 = sp.Matrix([sp.diff(T, s[j]) - sum(sp.diff(T, s[a_], sd[j]) * sd[a_] for a_ in range(3))
                    - sp.diff(V, s[j]) - sp.diff(D, sd[j]) for j in range(3)])
    p2 = sp.Matrix([-sum(sp.diff(f[k], s[j], s[a_]) * sd[j] * sd[a_] for j in range(3) for a_ in range(3))
                    for k in range(2)])
    system = sp.lambdify([s, sd], [M, Phi, p1, p2], "numpy")

    def solve(phi, dphi):
        Mn, Phin, p1n, p2n = (np.array(x, dtype=float) for x in system(phi, dphi))
        kkt = np.block([[Mn, Phin.T], [Phin, np.zeros((2, 2))]])
        x = np.linalg.solve(kkt, np.concatenate([p1n.ravel(), p2n.ravel()]))
        return x[:3], -x[3:]
    return solve


def to_lecture(q, v, par):
    """URDF joint angles (about +y) -> the lecture's phi and dphi."""
    phi = np.array([math.pi / 2 + q[0], par["phi2_0"] - (q[0] + q[1]), par["phi3_0"] - q[2]])
    dphi = np.array([v[0], -(v[0] + v[1]), -v[2]])
    return phi, dphi


def qdd_from_lecture(ddphi):
    return np.array([ddphi[0], -ddphi[1] - ddphi[0], -ddphi[2]])


@pytest.mark.parametrize("q1, rate", [(0.0, 0.0), (0.12, 0.8), (-0.2, -1.5)])
def test_three_formalisms_agree_with_the_lagrange_equations_of_mixed_type(robot, lagrange, q1, rate):
    par = data()
    q = robot.assemble(np.array([q1, 0.0, 0.0]))
    v = robot.project_velocity(q, np.array([rate, 0.0, 0.0]))
    phi, dphi = to_lecture(q, v, par)
    # the state satisfies the lecture's closure
    assert abs(par["l1"] * math.sin(phi[0]) - par["l2"] * math.sin(phi[1]) - par["l3"] * math.sin(phi[2])) < 1e-12
    ddphi, lam = lagrange(phi, dphi)
    expected = qdd_from_lecture(ddphi)
    tau = np.zeros(3)
    for method in ("recursive", "minimal", "descriptor"):
        assert_close(robot.forward_dynamics(q, v, tau, method=method), expected, f"qdd ({method})",
                     rtol=1e-8)
    # the closure wrench on the upper arm is -(lambda1, lambda2) at B (the lecture's x, y = our
    # x, z), in the upper arm's frame; the other components are zero (minimum norm, planar)
    wrench = robot.closure_wrenches(q, v, tau)[0]
    theta = q[2]
    rot = np.array([[math.cos(theta), 0, math.sin(theta)], [0, 1, 0], [-math.sin(theta), 0, math.cos(theta)]])
    force = rot.T @ np.array([-lam[0], 0.0, -lam[1]])
    assert_close(wrench, np.concatenate([force, np.zeros(3)]), "closure wrench vs lambda", rtol=1e-8)


def test_strut_values_and_inverse_dynamics_round_trip(robot):
    par = data()
    q = robot.assemble(np.array([0.1, 0.0, 0.0]))
    v = robot.project_velocity(q, np.array([0.5, 0.0, 0.0]))
    values = robot.force_element_values(q, v)
    phi, dphi = to_lecture(q, v, par)
    a, b = par["l"] ** 2 + 2 * par["d"] ** 2, par["d"] * math.sqrt(par["l"] ** 2 + par["d"] ** 2)
    length = math.sqrt(a - 2 * b * math.cos(phi[0] - par["beta"]))
    rate = b * math.sin(phi[0] - par["beta"]) / length * dphi[0]
    assert values.length[0] == pytest.approx(length, abs=1e-14)
    assert values.rate[0] == pytest.approx(rate, abs=1e-13)
    assert values.force[0] == pytest.approx(par["k"] * (length - par["l"]) + par["c"] * rate + par["F0"], rel=1e-13)
    # a passive suspension: no actuated joint; the motion forward dynamics returns needs no drive
    qdd = robot.forward_dynamics(q, v, np.zeros(3))
    np.testing.assert_allclose(robot.inverse_dynamics(q, v, qdd), 0.0, atol=1e-9)


@pytest.fixture(scope="module")
def exudyn():
    try:
        import exudyn
    except ImportError:
        _missing_oracle("Exudyn (pip install exudyn) is the multibody reference; it is in the test extra")
    return exudyn


def exudyn_simulation(exu, par, q0, v0, t_end, steps):
    """Planar Exudyn model: bodies at their centres of mass, angles psi counter-clockwise in the
    (x, z) plane (psi = -theta for a URDF angle theta about +y); returns the final link angles."""
    from exudyn.itemInterface import (LoadMassProportional, MarkerBodyMass, MarkerBodyPosition,
                                      NodeRigidBody2D, ObjectConnectorSpringDamper, ObjectGround,
                                      ObjectJointRevolute2D, ObjectRigidBody2D)
    tree = parse_urdf(URDF.read_text())
    config = yaml.safe_load(CONFIG.read_text())
    sc = exu.SystemContainer()
    mbs = sc.AddSystem()
    ground = mbs.AddObject(ObjectGround(referencePosition=[0, 0, 0]))

    def rot(psi):
        return np.array([[math.cos(psi), -math.sin(psi)], [math.sin(psi), math.cos(psi)]])

    # absolute angles theta (about +y) and rates of the three links
    theta = {"lower_arm": q0[0], "knuckle": q0[0] + q0[1], "upper_arm": q0[2]}
    omega = {"lower_arm": v0[0], "knuckle": v0[0] + v0[1], "upper_arm": v0[2]}
    origin = {"lower_arm": np.zeros(2)}
    origin["knuckle"] = origin["lower_arm"] + rot(-theta["lower_arm"]) @ np.array([par["l1"], 0.0])
    origin["upper_arm"] = np.array([0.0, par["l0"]])
    bodies = {}
    for name in ("lower_arm", "knuckle", "upper_arm"):
        L = tree.links[name]
        com_local = L.com[[0, 2]]
        com = origin[name] + rot(-theta[name]) @ com_local
        # velocity of the centre of mass: v_origin + omega x r (planar, psi' = -theta')
        w = -omega[name]
        r = rot(-theta[name]) @ com_local
        if name == "knuckle":
            ra = rot(-theta["lower_arm"]) @ np.array([par["l1"], 0.0])
            v_origin = -omega["lower_arm"] * np.array([-ra[1], ra[0]])
        else:
            v_origin = np.zeros(2)
        vel = v_origin + w * np.array([-r[1], r[0]])
        node = mbs.AddNode(NodeRigidBody2D(referenceCoordinates=[com[0], com[1], -theta[name]],
                                           initialVelocities=[vel[0], vel[1], w]))
        body = mbs.AddObject(ObjectRigidBody2D(mass=L.mass, inertia=L.inertia[1, 1], nodeNumber=node))
        mbs.AddLoad(LoadMassProportional(markerNumber=mbs.AddMarker(MarkerBodyMass(bodyNumber=body)),
                                         loadVector=[0.0, -G, 0.0]))
        bodies[name] = (body, com_local)

    def marker(name, point_xz):
        if name == "chassis":
            return mbs.AddMarker(MarkerBodyPosition(bodyNumber=ground, localPosition=[point_xz[0], point_xz[1], 0.0]))
        body, com_local = bodies[name]
        p = np.asarray(point_xz) - com_local
        return mbs.AddMarker(MarkerBodyPosition(bodyNumber=body, localPosition=[p[0], p[1], 0.0]))

    cut = config["closures"][0]
    for a, pa, b, pb in (("chassis", [0, 0], "lower_arm", [0, 0]),
                         ("lower_arm", [par["l1"], 0], "knuckle", [0, 0]),
                         ("chassis", [0, par["l0"]], "upper_arm", [0, 0]),
                         ("knuckle", np.array(cut["parent_origin"]["xyz"])[[0, 2]],
                          "upper_arm", np.array(cut["child_origin"]["xyz"])[[0, 2]])):
        mbs.AddObject(ObjectJointRevolute2D(markerNumbers=[marker(a, pa), marker(b, pb)]))
    strut = config["forces"][0]
    mbs.AddObject(ObjectConnectorSpringDamper(
        markerNumbers=[marker("chassis", np.array(strut["parent_point"])[[0, 2]]),
                       marker("lower_arm", np.array(strut["child_point"])[[0, 2]])],
        referenceLength=strut["rest_length"], stiffness=strut["stiffness"],
        damping=strut["damping"], force=strut["preload"]))
    mbs.Assemble()
    settings = exu.SimulationSettings()
    settings.timeIntegration.endTime = t_end
    settings.timeIntegration.numberOfSteps = steps
    settings.timeIntegration.newton.relativeTolerance = 1e-12
    settings.timeIntegration.newton.absoluteTolerance = 1e-12
    settings.timeIntegration.generalizedAlpha.spectralRadius = 1.0
    settings.timeIntegration.verboseMode = 0
    if hasattr(settings, "show"):    # Exudyn's current names (the older ones warn: deprecated)
        settings.solution.file.write = False
        settings.show.computationTime = False
        settings.show.statistics = False
    else:
        settings.solutionSettings.writeSolutionToFile = False
        settings.displayComputationTime = False
        settings.displayStatistics = False
    exu.SolveDynamic(mbs, settings)
    coords = mbs.systemData.GetODE2Coordinates()
    refs = mbs.systemData.GetODE2Coordinates(configuration=exu.ConfigurationType.Reference)
    psi = {name: refs[3 * i + 2] + coords[3 * i + 2] for i, name in enumerate(("lower_arm", "knuckle", "upper_arm"))}
    return np.array([-psi["lower_arm"], -psi["knuckle"] + psi["lower_arm"], -psi["upper_arm"]])


def test_simulation_agrees_with_exudyn(robot, exudyn):
    """0.3 s of the suspension released from q_lower = 0.12 rad moving at 0.8 rad/s (the strut's
    spring and damper and gravity acting): robot.step with the default integrator (rk4, 1 ms)
    and Exudyn's generalized-alpha solver (spectral radius 1, 3000 steps) end at the same joint
    angles within 1e-8 rad (measured: 5.6e-9, 1.4e-9, 3.6e-10 rad with 1500, 3000, 6000 Exudyn
    steps: Exudyn's second-order error converging onto our result)."""
    par = data()
    q = robot.assemble(np.array([0.12, 0.0, 0.0]))
    v = robot.project_velocity(q, np.array([0.8, 0.0, 0.0]))
    expected = exudyn_simulation(exudyn, par, q, v, 0.3, 3000)
    robot.time = 0.0
    for _ in range(300):
        q, v = robot.step(q, v, np.zeros(3), 1e-3)
    assert abs(q[0] - 0.12) > 0.01                          # it moved
    assert_close(q, expected, "joint angles vs Exudyn", rtol=1e-8)


def test_joint_wrenches_with_the_strut_equal_the_descriptor_multipliers(robot):
    """The joint wrenches of the closed loop with the strut acting (recursive formalism, loop
    multipliers from the inverse dynamics, the strut's wrenches as link loads) equal the
    descriptor formalism's joint multipliers (body coordinates, every joint a constraint)."""
    q = robot.assemble(np.array([0.1, 0.0, 0.0]))
    v = robot.project_velocity(q, np.array([0.7, 0.0, 0.0]))
    tau = np.zeros(3)
    qdd = robot.forward_dynamics(q, v, tau)
    # the descriptor formalism with the strut's loads (the hook applies the force elements)
    qdd_d, wrenches_d, _ = robot._forward_dynamics_descriptor(q, v, tau)
    assert_close(qdd_d, qdd, "descriptor qdd")
    wrenches = robot.joint_wrenches(q, v, qdd)
    for b, name in enumerate(robot.joint_names):
        assert_close(wrenches[robot.wrench_joint_names.index(name)], wrenches_d[b],
                     f"joint wrench {name}", rtol=1e-9)
    assert np.abs(wrenches_d).max() > 100.0
