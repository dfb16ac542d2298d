"""Welded flexible links and links welded to a flexible link against Exudyn's
ObjectFFRFreducedOrder (floating frame of reference, the same lumped modal data read by both).

1. A cantilever clamped to the ground by a fixed joint (mbd_ros: a body with a 0-dof joint and its
   modes; Exudyn: the FFRF reference node fixed by a GenericJoint on all six axes): static
   deflection under gravity, and the tip's vibration when released undeformed (path and
   frequency).
2. A tool welded to the tip of a flexible pendulum with its centre of mass 5 cm back over the
   beam and 2 cm off its axis (Exudyn: a rigid body joined on all six axes to a
   MarkerSuperElementRigid on a cross-section of four nodes at the tip; its rotation is the
   exponential map of the section's small rotation). mbd_ros attaches the tool at its joint origin
   (docs/flexible.md, "Links welded to a flexible link"); the paths agree and the difference
   shrinks with Exudyn's step. (Attaching the tool at the deformed point of its centre of mass, as
   before, left a difference of 2.2e-6 m that did not shrink with the step.)

Gravity is applied in Exudyn as nodal forces m_j g (test_flexible_exudyn.py says why).
"""
import warnings

import numpy as np
import pytest
import scipy.linalg

import mbd_ros
from conftest import _missing_oracle
from flexible_models import ALUMINIUM, lumped_modal_data
from mbd_ros.model.flexible.beam import BeamFE
from mbd_ros.inputs.flexible import BeamSpec

G = 9.81


@pytest.fixture(scope="module")
def exu():
    try:
        import exudyn
    except ImportError:
        _missing_oracle("Exudyn (pip install exudyn) is the flexible-body oracle; it is in the "
                        "test extra")
    return exudyn


def _settings(exu, t_end, dt):
    settings = exu.SimulationSettings()
    settings.timeIntegration.numberOfSteps = int(round(t_end / dt))
    settings.timeIntegration.endTime = t_end
    settings.timeIntegration.generalizedAlpha.spectralRadius = 1.0   # no numerical damping
    settings.timeIntegration.newton.relativeTolerance = 1e-10
    settings.timeIntegration.newton.absoluteTolerance = 1e-8
    settings.timeIntegration.verboseMode = 0
    settings.staticSolver.newton.relativeTolerance = 1e-12
    settings.staticSolver.verboseMode = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        settings.solutionSettings.writeSolutionToFile = False
        settings.solutionSettings.sensorsWritePeriod = 1e-3
        settings.displayStatistics = False
        settings.displayComputationTime = False
    return settings


def _ffrf_body(exu, mbs, positions, masses, shapes, K, omega0=0.0):
    """The FFRF body of the lumped modal data, with nodal gravity loads (nodes with mass)."""
    import scipy.sparse
    from exudyn.FEM import FEMinterface, ObjectFFRFreducedOrderInterface
    from exudyn.itemInterface import LoadForceVector, MarkerSuperElementPosition
    n = len(masses)
    fem = FEMinterface()
    fem.nodes = {"Position": positions}
    fem.massMatrix = scipy.sparse.csr_matrix(np.diag(np.repeat(masses, 3)))
    fem.stiffnessMatrix = scipy.sparse.csr_matrix(np.eye(3 * n))   # replaced by K_ff below
    fem.modeBasis = {"matrix": shapes[:, :, :3].reshape(len(shapes), 3 * n).T.copy(),
                     "type": "NormalModes"}
    cms = ObjectFFRFreducedOrderInterface(fem)
    cms.stiffnessMatrixReduced = K
    body = cms.AddObjectFFRFreducedOrder(mbs, positionRef=[0, 0, 0], gravity=[0, 0, 0],
                                         initialAngularVelocity=[0, omega0, 0])
    for j in range(n):
        if masses[j] > 0:
            marker = mbs.AddMarker(MarkerSuperElementPosition(
                bodyNumber=body["oFFRFreducedOrder"], meshNodeNumbers=[j], weightingFactors=[1.0]))
            mbs.AddLoad(LoadForceVector(markerNumber=marker, loadVector=[0, 0, -G * masses[j]]))
    return body


# ------------------------------------------------------------------------- clamped cantilever
C_LENGTH, C_AREA, C_IY, C_NODES, C_MODES = 0.5, 2e-4, 2e-10, 11, 3
C_END, C_DT = 0.3, 1e-4

CANTILEVER_URDF = """<?xml version="1.0"?>
<robot name="cantilever"><link name="base"/><link name="beam"/><link name="tip"/>
  <joint name="clamp" type="fixed"><parent link="base"/><child link="beam"/></joint>
  <joint name="tip_mount" type="fixed"><parent link="beam"/><child link="tip"/>
    <origin xyz="0.5 0 0"/></joint>
</robot>"""


def _exudyn_cantilever(exu, data, static):
    from exudyn.itemInterface import (GenericJoint, MarkerBodyRigid, MarkerNodeRigid,
                                      MarkerSuperElementPosition, ObjectGround, SensorMarker)
    positions, masses, shapes, K = data
    SC = exu.SystemContainer()
    mbs = SC.AddSystem()
    body = _ffrf_body(exu, mbs, positions, masses, shapes, K)
    ground = mbs.AddObject(ObjectGround())
    m_ground = mbs.AddMarker(MarkerBodyRigid(bodyNumber=ground, localPosition=[0, 0, 0]))
    m_frame = mbs.AddMarker(MarkerNodeRigid(nodeNumber=body["nRigidBody"]))
    mbs.AddObject(GenericJoint(markerNumbers=[m_ground, m_frame], constrainedAxes=[1] * 6))
    m_tip = mbs.AddMarker(MarkerSuperElementPosition(bodyNumber=body["oFFRFreducedOrder"],
                                                     meshNodeNumbers=[len(masses) - 1],
                                                     weightingFactors=[1.0]))
    sensor = mbs.AddSensor(SensorMarker(markerNumber=m_tip, storeInternal=True,
                                        outputVariableType=exu.OutputVariableType.Position))
    mbs.Assemble()
    settings = _settings(exu, C_END, C_DT)
    if static:
        exu.SolveStatic(mbs, settings)
        return mbs.GetSensorValues(sensor)
    exu.SolveDynamic(mbs, settings)
    return mbs.GetSensorStoredData(sensor)          # rows: t, x, y, z


def _cantilever(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return mbd_ros.load(CANTILEVER_URDF, gravity=(0, 0, -G),
                            flexible={"flexible_links": [{"link": "beam",
                                                          "modal_data": str(path)}]})


def _frequency(t, z):
    """Mean frequency (Hz) of z(t) from its upward crossings of its mean (linear interpolation)."""
    z = z - 0.5 * (z.max() + z.min())
    k = np.flatnonzero((z[:-1] < 0) & (z[1:] >= 0))
    crossings = t[k] - z[k] * (t[k + 1] - t[k]) / (z[k + 1] - z[k])
    return (len(crossings) - 1) / (crossings[-1] - crossings[0])


def test_clamped_cantilever_matches_exudyn(exu, tmp_path):
    """A 0.5 m aluminium strip welded to the ground (3 modes, 11 lumped nodes): the static tip
    deflection under gravity equals Exudyn's static solution (relative 1e-6: both solve the same
    linear modal statics, Exudyn's Newton to 1e-12), and, released undeformed, the tip path over
    0.3 s equals Exudyn's within 5e-6 m (0.1 % of the 5.5 mm swing; Exudyn's step error: its
    trapezoidal rule at dt = 1e-4 s lags a mode by omega t (omega dt)^2 / 12 rad, i.e. 9e-5 rad
    of the first mode (71.6 rad/s, 3 mm: 3e-7 m) and 0.023 rad of the second (449 rad/s, ~6e-5 m
    of the released response: 1.4e-6 m); measured 2.2e-6 m) with the same vibration frequency
    (0.1 %), that of the first clamped mode (1 %, the frequency of the swing's mean crossings)."""
    from mbd_ros.robot.integrators import Simulator
    path = tmp_path / "strip.npz"
    data = lumped_modal_data(path, C_LENGTH, C_AREA, C_IY, C_NODES, C_MODES)
    robot = _cantilever(path)
    assert robot.joint_names == [] and robot.nv == C_MODES
    # static: the elastic rows of gravity_forces (affine in q_f) vanish
    e = robot.elastic_q_indices
    q0 = robot.neutral()
    r0 = robot.gravity_forces(q0)
    J = np.column_stack([robot.gravity_forces(q0 + np.eye(robot.nq)[k]) - r0 for k in e])
    q = q0.copy()
    q[e] = np.linalg.solve(J, -r0)
    ours = robot.link_pose(q, "tip")[:3, 3]
    theirs = _exudyn_cantilever(exu, data, static=True)
    sag = ALUMINIUM["density"] * C_AREA * G * C_LENGTH ** 4 / (8 * ALUMINIUM["E"] * C_IY)
    assert ours[2] == pytest.approx(-sag, rel=0.02)      # the lumped nodes' sag: ~1 % off
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-6 * sag)
    # dynamic: released undeformed at rest
    sim = Simulator(robot, C_DT, "rk4", q=robot.neutral(), v=np.zeros(robot.nv))
    tau = np.zeros(robot.nv)
    rows = []
    for k in range(int(round(C_END / C_DT)) + 1):
        if k % 10 == 0:
            rows.append([sim.time, *robot.link_pose(sim.q, "tip")[:3, 3]])
        if k < int(round(C_END / C_DT)):
            sim.step(tau)
    ours = np.array(rows)
    theirs = _exudyn_cantilever(exu, data, static=False)
    n = min(len(ours), len(theirs))
    assert n == 301
    np.testing.assert_allclose(ours[:n, 0], theirs[:n, 0], atol=1e-9)
    assert np.abs(ours[:n, 1:] - theirs[:n, 1:]).max() < 5e-6
    assert ours[:, 3].min() < -1.8 * sag                 # it swings down to twice the sag
    f_ours, f_theirs = _frequency(ours[:, 0], ours[:, 3]), _frequency(theirs[:n, 0], theirs[:n, 3])
    assert f_ours == pytest.approx(f_theirs, rel=1e-3)
    assert f_ours == pytest.approx(robot.flexible.bodies[0].frequencies[0], rel=1e-2)


# ------------------------------------------------------------------------- welded tool
T_LENGTH, T_AREA, T_IY, T_NODES, T_MODES = 0.6, 2e-4, 6.667e-9, 13, 3
TOOL_MASS, TOOL_COM = 0.2, np.array([-0.05, 0.0, 0.02])      # com back over the beam
TOOL_INERTIA = np.diag([1e-4, 3e-4, 2e-4])
SECTION = 0.01      # half width of the tip cross-section of Exudyn's rigid marker
T_END = 1.0


def _skew(p):
    return np.array([[0.0, -p[2], p[1]], [p[2], 0.0, -p[0]], [-p[1], p[0], 0.0]])


def _tool_modal_data(path):
    """Lumped modal data of the forearm strip (x-z bending) whose modes are computed with the tool
    at the tip (FE mass matrix plus the tool's rigid-body mass at the tip node), sampled at 13
    axis nodes and at four massless nodes of the tip cross-section (moving rigidly with it)."""
    spec = BeamSpec(length=T_LENGTH, density=ALUMINIUM["density"], area=T_AREA, E=ALUMINIUM["E"],
                    Iy=T_IY, Iz=1e4 * T_IY, G=None, J=None, elements=T_NODES - 1)
    fe = BeamFE(spec)
    N, Psi = fe.axis_shapes(T_LENGTH)
    Nc = N - _skew(TOOL_COM) @ Psi
    M = fe.points.mass_matrix() + TOOL_MASS * Nc.T @ Nc + Psi.T @ TOOL_INERTIA @ Psi
    _, phi = scipy.linalg.eigh(fe.K, M, subset_by_index=[0, T_MODES - 1])
    x = np.linspace(0.0, T_LENGTH, T_NODES)
    positions = [np.array([xj, 0.0, 0.0]) for xj in x]
    masses = list(np.full(T_NODES, ALUMINIUM["density"] * T_AREA * T_LENGTH / (T_NODES - 1)))
    masses[0] *= 0.5
    masses[-1] *= 0.5
    shapes = [np.vstack([fe.axis_shapes(xj)[0] @ phi, fe.axis_shapes(xj)[1] @ phi]).T for xj in x]
    tip_t, tip_r = N @ phi, Psi @ phi
    for offset in ([0, SECTION, 0], [0, -SECTION, 0], [0, 0, SECTION], [0, 0, -SECTION]):
        offset = np.array(offset, float)
        positions.append(np.array([T_LENGTH, 0.0, 0.0]) + offset)
        masses.append(0.0)
        shapes.append(np.vstack([tip_t - _skew(offset) @ tip_r, tip_r]).T)
    positions, masses = np.array(positions), np.array(masses)
    shapes = np.transpose(np.array(shapes), (1, 0, 2))      # (modes, nodes, 6)
    K = phi.T @ fe.K @ phi
    K = 0.5 * (K + K.T)
    np.savez(path, node_positions=positions, node_masses=masses, mode_shapes=shapes, K_ff=K)
    return positions, masses, shapes, K


def _tool_urdf():
    c, J = TOOL_COM, TOOL_INERTIA
    return f"""<?xml version="1.0"?>
<robot name="tool_pendulum"><link name="base"/>
  <link name="beam"><inertial><origin xyz="0.3 0 0"/><mass value="1.0"/>
    <inertia ixx="1e-6" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
  <link name="tool"><inertial><origin xyz="{c[0]} {c[1]} {c[2]}"/><mass value="{TOOL_MASS}"/>
    <inertia ixx="{J[0, 0]}" ixy="0" ixz="0" iyy="{J[1, 1]}" iyz="0" izz="{J[2, 2]}"/>
    </inertial></link>
  <joint name="joint" type="continuous"><parent link="base"/><child link="beam"/>
    <axis xyz="0 1 0"/></joint>
  <joint name="tool_mount" type="fixed"><parent link="beam"/><child link="tool"/>
    <origin xyz="{T_LENGTH} 0 0"/></joint>
</robot>"""


def _mbd_tool_path(path, omega0, dt=1e-4):
    """(t, tool angle about y, tool com xyz) every 1 ms of RK4 at dt."""
    from mbd_ros.robot.integrators import Simulator
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        robot = mbd_ros.load(_tool_urdf(), gravity=(0, 0, -G),
                             flexible={"flexible_links": [{"link": "beam",
                                                           "modal_data": str(path)}]})
    v = np.zeros(robot.nv)
    v[0] = omega0
    sim = Simulator(robot, dt, "rk4", q=robot.neutral(), v=v)
    tau = np.zeros(robot.nv)
    every, steps = int(round(1e-3 / dt)), int(round(T_END / dt))
    rows = []
    for k in range(steps + 1):
        if k % every == 0:
            pose = robot.link_pose(sim.q, "tool")
            rows.append([sim.time, np.arctan2(pose[0, 2], pose[0, 0]),
                         *(pose[:3, 3] + pose[:3, :3] @ TOOL_COM), sim.q[0]])
        if k < steps:
            sim.step(tau)
    rows = np.array(rows)
    rows[:, 1] = np.unwrap(rows[:, 1])
    return rows


def _exudyn_tool_path(exu, data, omega0, dt):
    import exudyn.utilities as eu
    from exudyn.itemInterface import (GenericJoint, MarkerBodyRigid, MarkerNodeRigid,
                                      MarkerSuperElementRigid, ObjectGround, SensorBody)
    positions, masses, shapes, K = data
    SC = exu.SystemContainer()
    mbs = SC.AddSystem()
    body = _ffrf_body(exu, mbs, positions, masses, shapes, K, omega0)
    ground = mbs.AddObject(ObjectGround())
    m_ground = mbs.AddMarker(MarkerBodyRigid(bodyNumber=ground, localPosition=[0, 0, 0]))
    m_frame = mbs.AddMarker(MarkerNodeRigid(nodeNumber=body["nRigidBody"]))
    mbs.AddObject(GenericJoint(markerNumbers=[m_ground, m_frame],
                               constrainedAxes=[1, 1, 1, 1, 0, 1]))
    section = list(range(T_NODES, len(masses)))
    m_tip = mbs.AddMarker(MarkerSuperElementRigid(
        bodyNumber=body["oFFRFreducedOrder"], meshNodeNumbers=section,
        weightingFactors=[1.0 / len(section)] * len(section)))
    com0 = np.array([T_LENGTH, 0.0, 0.0]) + TOOL_COM
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        tool = eu.AddRigidBody(mainSys=mbs, inertia=eu.RigidBodyInertia(TOOL_MASS, TOOL_INERTIA),
                               nodeType=exu.NodeType.RotationEulerParameters, position=com0,
                               velocity=np.cross([0, omega0, 0], com0),
                               angularVelocity=[0, omega0, 0], gravity=[0, 0, -G])[1]
    m_tool = mbs.AddMarker(MarkerBodyRigid(bodyNumber=tool, localPosition=list(-TOOL_COM)))
    mbs.AddObject(GenericJoint(markerNumbers=[m_tip, m_tool], constrainedAxes=[1] * 6))
    s_rot = mbs.AddSensor(SensorBody(bodyNumber=tool, storeInternal=True,
                                     outputVariableType=exu.OutputVariableType.RotationMatrix))
    s_pos = mbs.AddSensor(SensorBody(bodyNumber=tool, storeInternal=True,
                                     outputVariableType=exu.OutputVariableType.Position))
    mbs.Assemble()
    exu.SolveDynamic(mbs, _settings(exu, T_END, dt))
    rot, pos = mbs.GetSensorStoredData(s_rot), mbs.GetSensorStoredData(s_pos)
    angle = np.unwrap(np.arctan2(rot[:, 3], rot[:, 1]))     # R[0, 2], R[0, 0]
    return np.column_stack([rot[:, 0], angle, pos[:, 1:4]])


def test_welded_tool_matches_exudyn_and_converges_with_the_step(exu, tmp_path):
    """Flexible pendulum (the sample forearm's strip, 3 modes computed with the tool) thrown at
    3 rad/s, a 0.2 kg tool welded at its tip, centre of mass 5 cm back over the beam: over 1 s
    the tool's centre of mass and angle from mbd_ros (RK4, dt = 1e-4 s) and Exudyn
    (generalized-alpha without damping) agree within 1.5e-6 m and 5e-5 rad at Exudyn's
    dt = 5e-5 s (its phase error ~(omega dt)^2 / 12 on the modes), and both differences shrink by
    at least a quarter when Exudyn's step halves (they are Exudyn's step error, not a model
    difference; measured: 5.8e-7 -> 3.1e-7 m, 2.5e-5 -> 1.3e-5 rad)."""
    path = tmp_path / "strip_tool.npz"
    data = _tool_modal_data(path)
    ours = _mbd_tool_path(path, 3.0)
    elastic = np.abs(ours[:, 1] - ours[:, 5]).max()      # tool angle minus the joint angle
    assert elastic > 1e-4                                # the tip does bend (rad)
    diffs = []
    for dt in (5e-5, 2.5e-5):
        theirs = _exudyn_tool_path(exu, data, 3.0, dt)
        n = min(len(ours), len(theirs))
        assert n == 1001
        np.testing.assert_allclose(ours[:n, 0], theirs[:n, 0], atol=1e-9)
        diffs.append((np.abs(ours[:n, 2:5] - theirs[:n, 2:5]).max(),
                      np.abs(ours[:n, 1] - theirs[:n, 1]).max()))
    (com_coarse, angle_coarse), (com_fine, angle_fine) = diffs
    assert com_coarse < 1.5e-6 and angle_coarse < 5e-5
    assert com_fine < 0.75 * com_coarse and angle_fine < 0.75 * angle_coarse
