"""Random branched URDF trees for the identity tests (a helper module, not a test).

``random_tree_xml(seed)`` returns URDF text of a tree with 5-15 links:

- branching: each link hangs from one of the three links created just before it;
- joint types revolute, continuous, prismatic, fixed, and occasionally the extension type
  ``spherical`` and ``floating`` / ``planar`` joints in the middle of the tree;
- random joint origins (xyz, rpy), random unit axes (sometimes a signed coordinate axis),
  planar joints with normal z (Pinocchio's planar joint; the plane itself is random through the
  origin's rpy);
- physically valid random inertias: mass in [0.5, 2], principal moments of a random box (so the
  triangle inequality holds strictly), random principal axes, written either as an inertial
  <origin rpy> with a diagonal tensor or as a full tensor with products of inertia;
- massless leaf links hung by fixed joints (sensor frames), which must be accepted;
- <dynamics damping friction> on some one-dof joints;
- links and joints written in shuffled document order, with <visual>, <material>, <gazebo>,
  <transmission> (whose inner <joint> is not a kinematic joint) and comments mixed in.
"""

from __future__ import annotations

import numpy as np

ALL_TYPES = ("revolute", "continuous", "prismatic", "fixed", "spherical", "floating", "planar")
WEIGHTS = {"revolute": 0.26, "continuous": 0.14, "prismatic": 0.18, "fixed": 0.16,
           "spherical": 0.10, "floating": 0.06, "planar": 0.10}


def _f(x):
    return " ".join(f"{float(v):.17g}" for v in np.atleast_1d(x))


def _rotation(rng):
    x = rng.standard_normal(4)
    x /= np.linalg.norm(x)
    a, b, c, d = x  # w, x, y, z
    return np.array([
        [1 - 2 * (c * c + d * d), 2 * (b * c - a * d), 2 * (b * d + a * c)],
        [2 * (b * c + a * d), 1 - 2 * (b * b + d * d), 2 * (c * d - a * b)],
        [2 * (b * d - a * c), 2 * (c * d + a * b), 1 - 2 * (b * b + c * c)]])


def random_tree_xml(seed, types=ALL_TYPES, n_links=None, planar_normal="z"):
    """planar_normal: "z" (Pinocchio's planar joint) or "random" (a random unit normal: the
    in-plane x, y directions are then the library's choice; only basis-free checks apply)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 16)) if n_links is None else n_links
    names = [f"link_{i}_{rng.integers(100)}" for i in range(n)]
    parent = [None] + [int(rng.integers(max(0, i - 3), i)) for i in range(1, n)]
    children = {i: [k for k in range(1, n) if parent[k] == i] for i in range(n)}
    w = np.array([WEIGHTS[t] for t in types])
    jtype = [None] + [str(rng.choice(types, p=w / w.sum())) for _ in range(1, n)]

    links = []
    for i in range(n):
        massless = i > 0 and jtype[i] == "fixed" and not children[i] and rng.random() < 0.5
        body = [f'  <link name="{names[i]}">']
        if rng.random() < 0.5:
            body.append('    <visual><geometry><box size="0.1 0.1 0.1"/></geometry>'
                        '<material name="grey"><color rgba="0.5 0.5 0.5 1"/></material></visual>')
        if not massless:
            m = rng.uniform(0.5, 2.0)
            a, b, c = rng.uniform(0.05, 0.5, 3)
            principal = m / 12 * np.array([b * b + c * c, a * a + c * c, a * a + b * b])
            com = rng.uniform(-0.2, 0.2, 3)
            if rng.random() < 0.5:   # principal axes through the inertial origin's rpy
                rpy, I = rng.uniform(-np.pi, np.pi, 3), np.diag(principal)
            else:                    # full tensor with products of inertia
                R = _rotation(rng)
                rpy, I = np.zeros(3), R @ np.diag(principal) @ R.T
            body.append(f'    <inertial><origin xyz="{_f(com)}" rpy="{_f(rpy)}"/><mass value="{_f(m)}"/>'
                        f'<inertia ixx="{_f(I[0, 0])}" ixy="{_f(I[0, 1])}" ixz="{_f(I[0, 2])}" '
                        f'iyy="{_f(I[1, 1])}" iyz="{_f(I[1, 2])}" izz="{_f(I[2, 2])}"/></inertial>')
        body.append("  </link>")
        links.append("\n".join(body))

    joints = []
    for i in range(1, n):
        t = jtype[i]
        lines = [f'  <joint name="joint_{i}_{names[i][-2:].strip("_")}" type="{t}">',
                 f'    <origin xyz="{_f(rng.uniform(-0.4, 0.4, 3))}" rpy="{_f(rng.uniform(-np.pi, np.pi, 3))}"/>',
                 f'    <parent link="{names[parent[i]]}"/>',
                 f'    <child link="{names[i]}"/>']
        if t in ("revolute", "continuous", "prismatic"):
            if rng.random() < 0.3:
                ax = np.zeros(3)
                ax[rng.integers(3)] = rng.choice([-1.0, 1.0])
            else:
                ax = rng.standard_normal(3)
                ax /= np.linalg.norm(ax)
            lines.append(f'    <axis xyz="{_f(ax)}"/>')
            if t == "revolute":
                lines.append('    <limit lower="-3.2" upper="3.2" effort="100" velocity="10"/>')
            elif t == "prismatic":
                lines.append('    <limit lower="-1" upper="1" effort="100" velocity="10"/>')
            if rng.random() < 0.5:
                lines.append(f'    <dynamics damping="{_f(rng.uniform(0, 0.5))}" friction="{_f(rng.uniform(0, 0.3))}"/>')
        elif t == "planar":
            if planar_normal == "z":
                lines.append('    <axis xyz="0 0 1"/>')
            else:
                ax = rng.standard_normal(3)
                lines.append(f'    <axis xyz="{_f(ax / np.linalg.norm(ax))}"/>')
        lines.append("  </joint>")
        joints.append("\n".join(lines))

    joint_names = [j.split('"')[1] for j in joints]
    extras = ['  <!-- a comment between elements -->',
              '  <gazebo reference="%s"><material>Gazebo/Grey</material></gazebo>' % names[0],
              f'  <transmission name="tr"><type>transmission_interface/SimpleTransmission</type>'
              f'<joint name="{joint_names[0]}"><hardwareInterface>EffortJointInterface</hardwareInterface>'
              f'</joint><actuator name="m"><mechanicalReduction>1</mechanicalReduction></actuator></transmission>']
    elements = links + joints + extras
    order = rng.permutation(len(elements))
    return ('<?xml version="1.0"?>\n<robot name="random_%d">\n' % seed
            + "\n".join(elements[k] for k in order) + "\n</robot>\n")
