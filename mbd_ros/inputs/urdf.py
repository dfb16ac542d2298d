"""URDF -> a validated kinematic tree description (no numerics beyond parsing).

XML is parsed by lxml with entity resolution, DTD loading and network access off (a URDF may come
from an untrusted topic), then each <link>/<joint> element is read by mbd_ros.urdf_elements (with
yourdfpy's defaults; no meshes are touched). Every error is a ModelError naming the source and the link or joint.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from lxml import etree

from ..errors import ModelError, excerpt, missing_file
from .urdf_elements import parse_joint, parse_link, xml_float

JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar", "spherical",
               "helical", "cylindrical", "universal")   # the last three: mbd_ros extensions (docs/formats.md)

# Caps on hostile inputs. A URDF of a large robot is a few MB (meshes are separate files) and a
# few hundred links; the load is linear in links, ~1 ms each (10 000 links: ~10-20 s on a
# loaded 2-core machine). No robot has a mass, length,
# inertia, damping or pitch beyond MAX_MAGNITUDE in SI units, and products of a few such numbers
# (m l^2, ...) must not overflow inside the dynamics.
MAX_URDF_BYTES = 32 << 20
MAX_LINKS = 10_000                # links, and joints
MAX_MAGNITUDE = 1e100

# Relative tolerance for the physical-consistency checks of inertias: URDFs exported from CAD
# round their moments to a few digits, so a principal moment may break the triangle inequality
# by round-off without being wrong.
INERTIA_TOLERANCE = 1e-6


@dataclass(frozen=True)
class LinkSpec:
    name: str
    mass: float
    com: np.ndarray           # (3,) centre of mass in the link frame
    inertia: np.ndarray       # (3, 3) rotational inertia about the centre of mass, link frame axes


@dataclass(frozen=True)
class JointSpec:
    name: str
    type: str                 # one of JOINT_TYPES
    parent: str
    child: str
    origin: np.ndarray        # (4, 4) pose of the joint frame (= child link frame at q = 0) in the parent link
    axis: np.ndarray          # (3,) unit axis in the joint frame (planar: the plane's normal)
    damping: float = 0.0
    friction: float = 0.0
    lower: float = -np.inf
    upper: float = np.inf
    effort: float = np.inf
    velocity: float = np.inf
    pitch: float = 0.0        # helical: translation along the axis per radian (m/rad)
    axis2: np.ndarray | None = None   # universal: second axis (unit, joint frame at q = 0)


@dataclass(frozen=True)
class TreeSpec:
    """A URDF robot as a rooted tree: links and joints in document order, validated."""
    name: str
    source: str               # file path or '<xml text>', for error messages
    links: dict = field(default_factory=dict)      # name -> LinkSpec, document order
    joints: list = field(default_factory=list)     # JointSpec, document order
    root: str = ""
    strict_inertia: bool = False   # model building: refuse (True) or warn about (False) links
                                   # and merged bodies whose inertia no rigid body has
    mimics: tuple = ()        # (joint, leader, multiplier, offset) of each <mimic>, the attribute
                              # texts as written (None when absent); checked by mimic.py when used
    _children: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self):
        children = {}
        for joint in self.joints:   # one pass: child_joints is O(children), building O(links)
            children.setdefault(joint.parent, []).append(joint)
        object.__setattr__(self, "_children", children)

    def child_joints(self, link_name):
        """Joints whose parent is `link_name`, in document order."""
        return list(self._children.get(link_name, ()))


def read_urdf(urdf, strict_inertia=False) -> TreeSpec:
    """Parse and validate a URDF given as a file path (str or Path) or as XML text (str or
    UTF-8 bytes; a byte-order mark is allowed).

    Always errors (ModelError naming the link or joint): malformed XML, negative or non-finite
    mass, non-finite or non-symmetric inertia, partially specified <inertia>, duplicate
    sub-elements (<axis>, <inertial>, <origin>, ...), vectors with the wrong number of
    components, negative or NaN effort/velocity limits.
    strict_inertia: physical consistency of inertias (positive semi-definite, triangle
    inequality, no rotational inertia without mass) is checked when the model is built
    (model.build_model), on each link and on each merged body: with True an inconsistent one is
    an error, with False (the default, as Pinocchio) a warning naming the link and saying the
    inertia is used as written (and whether the merged body absorbs the defect)."""
    text, source = _read_source(urdf)
    root = _parse_xml(text, source)
    links, joints = _parse_elements(root, source)
    tree = TreeSpec(name=root.get("name", "robot"), source=source, links=links, joints=joints,
                    strict_inertia=bool(strict_inertia), mimics=mimic_tags(root))
    object.__setattr__(tree, "root", _validate_tree(tree))
    return tree


def _read_source(urdf):
    if isinstance(urdf, Path):
        urdf = str(urdf)
    if isinstance(urdf, (bytes, bytearray)):
        try:
            urdf = bytes(urdf).decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise ModelError(f"<urdf text>: not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
    if not isinstance(urdf, str):
        raise ModelError(f"urdf must be a file path or XML text, got {type(urdf).__name__}")
    stripped = urdf.lstrip().lstrip("\ufeff").lstrip()
    if stripped.startswith("<"):
        _check_size(len(stripped), "<urdf text>", "characters")
        return stripped, "<urdf text>"
    if not urdf.strip():
        raise ModelError("the URDF is empty (expected a file path or XML text)")
    from .xacro import expand_xacro, is_xacro_path   # a .xacro path: expanded
    if is_xacro_path(urdf):
        text = expand_xacro(urdf.strip())
        _check_size(len(text), urdf, "characters once expanded")
        return text, urdf
    if "\x00" in urdf or not os.path.isfile(urdf):
        raise ModelError(f"URDF file {missing_file(urdf)}: {excerpt(urdf)}")
    try:
        _check_size(os.path.getsize(urdf), urdf, "bytes")
        with open(urdf, encoding="utf-8-sig") as stream:
            return stream.read(), urdf
    except UnicodeDecodeError as exc:
        raise ModelError(f"{urdf}: not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise ModelError(f"{urdf}: cannot read URDF: {exc}") from exc


def _check_size(size, source, unit):
    if size > MAX_URDF_BYTES:
        raise ModelError(f"{source}: {size} {unit}, more than the {MAX_URDF_BYTES} a URDF may "
                         "have")


def _parse_xml(text, source):
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False,
                             dtd_validation=False, huge_tree=False, remove_comments=True,
                             remove_pis=True)
    try:
        root = etree.fromstring(text.encode("utf-8"), parser=parser)
    except etree.XMLSyntaxError as exc:
        raise ModelError(f"{source}: malformed XML: {excerpt(str(exc), 300)}") from None
    except ValueError as exc:   # e.g. an XML declaration with an encoding in a str
        raise ModelError(f"{source}: malformed XML: {excerpt(str(exc), 300)}") from None
    docinfo = root.getroottree().docinfo
    if docinfo.internalDTD is not None or any(isinstance(node, etree._Entity) for node in root.iter()):
        raise ModelError(f"{source}: DOCTYPE and entity declarations are not allowed in a URDF "
                         "(entities are never expanded)")
    if root.tag != "robot":
        raise ModelError(f"{source}: the root element is <{root.tag}>, expected <robot>")
    return root


# sub-elements URDF allows at most once, and the attributes each must carry
_SINGLE_CHILDREN = {
    "link": ("inertial",),
    "inertial": ("origin", "mass", "inertia"),
    "joint": ("parent", "child", "origin", "axis", "limit", "dynamics", "mimic", "calibration",
              "safety_controller", "axis2"),
}
INERTIA_ATTRIBUTES = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
# attributes that hold a fixed number of numbers
_VECTOR_ATTRIBUTES = (("origin", "xyz", 3), ("origin", "rpy", 3), ("axis", "xyz", 3),
                      ("axis2", "xyz", 3))


def _check_structure(element, where):
    """Duplicate sub-elements, vectors of the wrong size and partial <inertia> -> ModelError.
    One pass over the element's children."""
    single = _SINGLE_CHILDREN.get(element.tag, ())
    seen = {}
    for child in element:
        tag = child.tag
        if tag in seen and tag in single:
            raise ModelError(f"{where}: <{tag}> appears more than once (lines {seen[tag].sourceline} "
                             f"and {child.sourceline}); URDF allows one")
        seen[tag] = child
        for vector_tag, attribute, n in _VECTOR_ATTRIBUTES:
            if tag == vector_tag:
                text = child.get(attribute)
                if text is not None and len(text.split()) != n:
                    raise ModelError(f"{where}: <{tag} {attribute}=\"{excerpt(text, 60)}\">: "
                                     f"expected {n} numbers, got {len(text.split())}")
    inertial = seen.get("inertial") if element.tag == "link" else None
    if inertial is not None:
        _check_structure(inertial, f"{where}: <inertial>")
        mass = inertial.find("mass")
        if mass is None or mass.get("value") is None:
            raise ModelError(f"{where}: <inertial> needs <mass value=\"...\"/>")
        inertia = inertial.find("inertia")
        if inertia is None:
            raise ModelError(f"{where}: <inertial> needs <inertia ixx ixy ixz iyy iyz izz/>")
        missing = [a for a in INERTIA_ATTRIBUTES if inertia.get(a) is None]
        if missing:
            raise ModelError(f"{where}: <inertia> is partially specified: missing "
                             f"{', '.join(missing)} (all of {', '.join(INERTIA_ATTRIBUTES)} are required)")


def read_xml(urdf):
    """(root <robot> element, source name) of a URDF file path, XML text or .xacro path, with
    the checks of read_urdf on the text and the XML (not on the links and joints)."""
    text, source = _read_source(urdf)
    return _parse_xml(text, source), source


def mimic_tags(root):
    """(joint, leader, multiplier, offset) of each <joint><mimic joint multiplier offset/>, in
    document order: the attribute texts as written, None when absent."""
    return tuple((joint.get("name"), tag.get("joint"), tag.get("multiplier"), tag.get("offset"))
                 for joint in root.findall("joint") for tag in joint.findall("mimic"))


def _parse_elements(root, source):
    links = {}
    elements = root.findall("link")
    if len(elements) > MAX_LINKS:
        raise ModelError(f"{source}: {len(elements)} links, more than the {MAX_LINKS} a robot "
                         "may have")
    for element in elements:
        name = element.get("name")
        if not name:
            raise ModelError(f"{source}: a <link> has no name attribute (line {element.sourceline})")
        if name in links:
            raise ModelError(f"{source}: duplicate link name '{excerpt(name)}'")
        _check_structure(element, f"{source}: link '{excerpt(name)}'")
        try:
            parsed = parse_link(element)
        except Exception as exc:  # bare ValueError/KeyError/AttributeError on bad numbers
            raise ModelError(f"{source}: link '{excerpt(name)}': cannot parse: "
                             f"{excerpt(str(exc))}") from None
        links[name] = _link_spec(parsed, source)
    if not links:
        raise ModelError(f"{source}: the robot has no <link>")
    joints = []
    names = set()
    elements = root.findall("joint")
    if len(elements) > MAX_LINKS:
        raise ModelError(f"{source}: {len(elements)} joints, more than the {MAX_LINKS} a robot "
                         "may have")
    for element in elements:
        name = element.get("name")
        if not name:
            raise ModelError(f"{source}: a <joint> has no name attribute (line {element.sourceline})")
        if name in names:
            raise ModelError(f"{source}: duplicate joint name '{excerpt(name)}'")
        names.add(name)
        joint_type = element.get("type")
        if joint_type not in JOINT_TYPES:
            raise ModelError(f"{source}: joint '{excerpt(name)}': unknown type '{excerpt(joint_type)}' "
                             f"(expected one of {', '.join(JOINT_TYPES)})")
        for tag in ("parent", "child"):
            sub = element.find(tag)
            if sub is None or not sub.get("link"):
                raise ModelError(f"{source}: joint '{name}': missing <{tag} link=\"...\"/>")
        _check_structure(element, f"{source}: joint '{excerpt(name)}'")
        try:
            parsed = parse_joint(element)
        except Exception as exc:
            raise ModelError(f"{source}: joint '{excerpt(name)}': cannot parse: "
                             f"{excerpt(str(exc))}") from None
        joints.append(_joint_spec(parsed, source))
    return links, joints


def _link_spec(link, source):
    inertial = link.inertial
    if inertial is None:
        return LinkSpec(link.name, 0.0, np.zeros(3), np.zeros((3, 3)))
    mass = float(inertial.mass) if inertial.mass is not None else 0.0
    origin = np.eye(4) if inertial.origin is None else np.asarray(inertial.origin, dtype=float)
    inertia = np.zeros((3, 3)) if inertial.inertia is None else np.asarray(inertial.inertia, dtype=float)
    where = f"{source}: link '{link.name}'"
    if not np.isfinite(mass) or not np.all(np.isfinite(origin)) or not np.all(np.isfinite(inertia)):
        raise ModelError(f"{where}: <inertial> has a non-finite value")
    if mass < 0.0:
        raise ModelError(f"{where}: <mass>: negative mass {mass}")
    for what, values in (("<mass>", [mass]), ("<origin xyz>", origin[:3, 3]),
                         ("<inertia>", inertia.ravel())):
        _check_magnitude(values, where, what)
    # (<inertia> gives each product once, so the tensor is symmetric by construction)
    rotation = origin[:3, :3]
    return LinkSpec(link.name, mass, origin[:3, 3].copy(), rotation @ inertia @ rotation.T)


def _norm(vector):
    """Euclidean norm without overflow (components up to 1e308), NaN if not finite."""
    if not np.all(np.isfinite(vector)):
        return np.nan
    scale = np.abs(vector).max()
    return float(scale * np.linalg.norm(vector / scale)) if scale > 0 else 0.0


def _check_magnitude(values, where, what):
    """|every value| <= MAX_MAGNITUDE (finite values), else a ModelError naming the field."""
    values = np.asarray(values, dtype=float)
    if values.size and np.abs(values).max() > MAX_MAGNITUDE:
        raise ModelError(f"{where}: {what}: {np.abs(values).max():.3g} is beyond "
                         f"{MAX_MAGNITUDE:g}: no robot has such a value (check the units)")


def inertia_problem(mass, inertia_com):
    """None if (mass, 3x3 rotational inertia about the centre of mass) is physically consistent
    (within INERTIA_TOLERANCE), else a short description of what is wrong."""
    moments = np.linalg.eigvalsh(0.5 * (inertia_com + inertia_com.T))
    scale = max(float(moments.max(initial=0.0)), 1e-12)
    if moments.min() < -INERTIA_TOLERANCE * scale:
        return (f"its inertia tensor is not positive semi-definite (principal moments "
                f"{moments.tolist()})")
    if moments[0] + moments[1] < moments[2] * (1.0 - INERTIA_TOLERANCE) - 1e-12:
        return (f"its principal moments {moments.tolist()} violate the triangle inequality "
                "I1 + I2 >= I3 (no rigid body has them)")
    if mass == 0.0 and moments.max() > 1e-12:
        return "it has zero mass but a non-zero inertia tensor"
    return None


def _joint_spec(joint, source):
    where = f"{source}: joint '{joint.name}'"
    origin = np.eye(4) if joint.origin is None else np.asarray(joint.origin, dtype=float)
    axis = np.array([1.0, 0.0, 0.0]) if joint.axis is None else np.asarray(joint.axis, dtype=float)
    if not np.all(np.isfinite(origin)):
        raise ModelError(f"{where}: <origin> has a non-finite value")
    if axis.shape != (3,):
        raise ModelError(f"{where}: <axis xyz> must have 3 components, got {axis.size}")
    norm = _norm(axis)
    if joint.type not in ("fixed", "floating", "spherical") and not norm > 1e-9:
        raise ModelError(f"{where}: <axis xyz> must be a finite non-zero vector, got {axis.tolist()}")
    axis = axis / norm if norm > 1e-9 else np.array([1.0, 0.0, 0.0])
    damping = friction = 0.0
    _check_magnitude(origin[:3, 3], where, "<origin xyz>")
    if joint.dynamics is not None:
        try:
            damping = xml_float(joint.dynamics.damping or "0")
            friction = xml_float(joint.dynamics.friction or "0")
        except ValueError:
            raise ModelError(f"{where}: <dynamics> damping and friction must be numbers, got "
                             f"'{excerpt(joint.dynamics.damping, 40)}' and "
                             f"'{excerpt(joint.dynamics.friction, 40)}'") from None
        if not (np.isfinite(damping) and np.isfinite(friction)) or damping < 0 or friction < 0:
            raise ModelError(f"{where}: <dynamics> damping and friction must be finite and >= 0")
        _check_magnitude([damping, friction], where, "<dynamics>")
    limits = dict(lower=-np.inf, upper=np.inf, effort=np.inf, velocity=np.inf)
    if joint.limit is not None:
        given = {key: float(getattr(joint.limit, key)) for key in limits
                 if getattr(joint.limit, key, None) is not None}
        for key in ("effort", "velocity"):
            if key in given and not given[key] >= 0.0:   # NaN too
                raise ModelError(f"{where}: <limit {key}=\"{given[key]}\">: must be a number >= 0 "
                                 "(omit the attribute for no limit)")
        for key in ("lower", "upper"):
            if key in given and np.isnan(given[key]):
                raise ModelError(f"{where}: <limit {key}=\"nan\">: must be a number")
        if joint.type in ("revolute", "prismatic", "helical"):
            limits.update(given)
            if limits["lower"] > limits["upper"]:
                raise ModelError(f"{where}: <limit> lower {limits['lower']} > upper {limits['upper']}")
        elif joint.type == "continuous":   # no position limits; its effort and velocity limits
            # hold (urdfdom and Pinocchio keep them: a wheel's motor saturates all the same)
            limits.update({key: given[key] for key in ("effort", "velocity") if key in given})
    # the extension fields are refused where they mean nothing (as unused closure fields are):
    # an <axis2> on a cylindrical joint or a pitch on a revolute one is a mistaken type
    if joint.axis2 is not None and joint.type != "universal":
        raise ModelError(f"{where}: <axis2>: not used by a {joint.type} joint (only by universal "
                         "joints); remove it or fix the type")
    if joint.pitch is not None and joint.type != "helical":
        raise ModelError(f"{where}: <axis pitch>: not used by a {joint.type} joint (only by "
                         "helical joints); remove it or fix the type")
    pitch = 0.0
    if joint.type == "helical":
        if joint.pitch is None:
            raise ModelError(f"{where}: a helical joint needs <axis xyz=\"...\" pitch=\"...\"/> "
                             "(translation along the axis per radian, m/rad)")
        pitch = joint.pitch
        if not np.isfinite(pitch):
            raise ModelError(f"{where}: <axis pitch=\"{pitch}\">: must be a finite number")
        _check_magnitude([pitch], where, "<axis pitch>")
    axis2 = None
    if joint.type == "universal":
        if joint.axis2 is None:
            raise ModelError(f"{where}: a universal joint needs <axis2 xyz=\"...\"/> (the second "
                             "rotation axis, in the joint frame)")
        axis2 = np.asarray(joint.axis2, dtype=float)
        norm2 = _norm(axis2)
        if not norm2 > 1e-9:
            raise ModelError(f"{where}: <axis2 xyz> must be a finite non-zero vector, got {axis2.tolist()}")
        axis2 = axis2 / norm2
        if np.linalg.norm(np.cross(axis, axis2)) < 1e-6:
            raise ModelError(f"{where}: <axis2 xyz> {axis2.tolist()} is parallel to <axis> "
                             f"{axis.tolist()}; a universal joint needs two different axes")
    return JointSpec(joint.name, joint.type, joint.parent, joint.child, origin, axis,
                     damping, friction, **limits, pitch=pitch, axis2=axis2)


def _validate_tree(tree):
    """Check that links and joints form one rooted tree; return the root link's name."""
    parent_joint = {}
    for joint in tree.joints:
        for role, link in (("parent", joint.parent), ("child", joint.child)):
            if link not in tree.links:
                raise ModelError(f"{tree.source}: joint '{joint.name}': {role} link '{link}' "
                                 "is not defined")
        if joint.parent == joint.child:
            raise ModelError(f"{tree.source}: joint '{joint.name}' connects link '{joint.child}' "
                             "to itself")
        if joint.child in parent_joint:
            raise ModelError(f"{tree.source}: link '{joint.child}' is the child of two joints "
                             f"('{parent_joint[joint.child]}' and '{joint.name}'); URDF describes "
                             "trees only: declare kinematic loops as closures")
        parent_joint[joint.child] = joint.name
    roots = [name for name in tree.links if name not in parent_joint]
    if not roots:
        raise ModelError(f"{tree.source}: the joints form a cycle ({_cycle(tree, parent_joint, next(iter(tree.links)))}): "
                         "every link has a parent joint")
    if len(roots) > 1:
        raise ModelError(f"{tree.source}: the links do not form one tree: {len(roots)} links have "
                         f"no parent joint ({', '.join(roots[:5])})")
    reached = {roots[0]}
    stack = [roots[0]]
    while stack:
        link = stack.pop()
        for joint in tree.child_joints(link):
            reached.add(joint.child)
            stack.append(joint.child)
    unreached = [name for name in tree.links if name not in reached]
    if unreached:
        raise ModelError(f"{tree.source}: links {', '.join(unreached[:5])} are not connected to the "
                         f"root '{roots[0]}': their joints form a cycle "
                         f"({_cycle(tree, parent_joint, unreached[0])})")
    return roots[0]


def _cycle(tree, parent_joint, start):
    """'link -[joint]-> link ...' along the parent joints from `start` until a link repeats."""
    joints = {joint.name: joint for joint in tree.joints}
    seen = []
    link = start
    while link not in seen:
        seen.append(link)
        link = joints[parent_joint[link]].parent
    loop = seen[seen.index(link):]
    return " <- ".join(f"{name} [{parent_joint[name]}]" for name in loop)
