"""The sweep file (docs/sweeps.md): read with the package's capped safe YAML reader, checked
key by key, turned into a frozen SweepSpec. Every mistake is a SweepSpecError (a ModelError, so
a ValueError) naming the file and the YAML key, e.g. "sweep.yaml: variations[1].values[3]: ...".

A sweep file never runs code: the robot files it names (relative to the sweep file) are read as
data (URDF XML, closures / forces YAML); a `.xacro` robot is refused (xacro is code). Their
texts go into the spec, so workers on another machine need no shared file system, and their
hash keys the workers' robot cache (runner.py).

Caps (bounded cost of any sweep file): at most MAX_RUNS runs, MAX_STEPS_PER_RUN steps per run,
MAX_TOTAL_STEPS steps in all, MAX_VARIATIONS varied quantities.
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from ..errors import ModelError
from ..inputs import fields as F
from ..inputs.yaml_input import read_yaml

MAX_RUNS = 100_000
MAX_STEPS_PER_RUN = 1_000_000
MAX_TOTAL_STEPS = 2_000_000_000      # 10 000 runs of 1 s at 1 kHz are 1e7
MAX_VARIATIONS = 16
MAX_ROBOT_FILE_BYTES = 32 * 1024 * 1024   # as a URDF (docs/formats.md "Limits")
MAX_BATCH_SIZE = 10_000
DEFAULT_BATCH_SIZE = 20

TOP_KEYS = ("name", "robot", "variations", "combine", "scenario", "metrics", "batch_size")
ROBOT_KEYS = ("urdf", "closures", "forces", "floating_base", "passive_forces")
VARIATION_KEYS = ("name", "quantity", "link", "joint", "element", "axis", "offset", "values",
                  "distribution")
SCENARIO_KEYS = ("duration", "dt", "integrator", "substeps", "limits", "max_speed",
                 "initial_positions", "initial_velocities", "drives", "reference", "torque")
DRIVE_KEYS = ("joints", "kp", "kd", "model")
DRIVE_MODELS = ("ideal", "pd")    # the Plant's drive models (robot.rollout drives["model"])
REFERENCE_KEYS = ("type", "joints", "center", "amplitude", "frequency_hz")
TORQUE_KEYS = ("type", "values")
DISTRIBUTION_KEYS = ("type", "low", "high", "mean", "std", "count", "seed")

# quantity -> (the key naming what it acts on, or None; unit, for messages and docs)
QUANTITIES = {
    "mass": ("link", "kg"),               # the body's mass; its ten parameters scaled alike
    "inertia_scale": ("link", "1"),       # rotational inertia about the centre of mass times this
    "com_offset": ("link", "m"),          # centre of mass moved along `axis` of the body frame
    "payload": ("link", "kg"),            # a point mass at `offset` in the link's frame
    "stiffness": ("element", "N/m or N m/rad"),   # a force element's stiffness (a rebuild)
    "kp": ("joint", "1/s^2"),             # drive gain (one joint, or every drive when no joint)
    "kd": ("joint", "1/s"),
    "initial_position": ("joint", "rad or m"),
    "initial_velocity": ("joint", "rad/s or m/s"),
}
DISTRIBUTIONS = ("uniform", "normal", "linspace")
COMBINES = ("grid", "zip")
REFERENCE_TYPES = ("swing",)
TORQUE_TYPES = ("constant", "inverse_dynamics")
METRICS = ("tracking_rms", "tracking_max", "peak_torque", "limit_hits", "diverged",
           "final_state")
AXES = ("x", "y", "z")
# result columns a variation's name may not take (docs/sweeps.md "Results")
RESERVED_COLUMNS = ("run_id", "status", "error", "steps", "seconds") + METRICS
RESERVED_PREFIXES = ("q_final", "v_final", "peak_torque")


class SweepSpecError(ModelError):
    """A sweep file that cannot be run; the message names the file and the YAML key."""


@dataclass(frozen=True)
class Distribution:
    """`count` values: uniform on [low, high) or normal(mean, std) drawn from
    numpy.random.default_rng(seed) (deterministic), or `count` evenly spaced in [low, high]."""
    type: str
    count: int
    low: float = 0.0
    high: float = 0.0
    mean: float = 0.0
    std: float = 0.0
    seed: int = 0


@dataclass(frozen=True)
class Variation:
    """One varied quantity: `name` (its column in the results), `quantity` (QUANTITIES), what it
    acts on (`target`: a link, joint or force element name; '' for kp / kd on every drive),
    `axis` (com_offset), `offset` (payload, (3,) m in the link frame) and its values: a tuple
    (`values`) or a Distribution."""
    name: str
    quantity: str
    target: str
    values: tuple | None
    distribution: Distribution | None
    axis: str = ""
    offset: tuple = (0.0, 0.0, 0.0)


@dataclass(frozen=True)
class RobotFiles:
    """The robot's files as read: texts (URDF XML, closures / forces YAML or None) and names."""
    urdf_name: str
    urdf_text: str
    closures_text: str | None = None
    forces_text: str | None = None
    floating_base: bool = False
    passive_forces: bool = True

    def key(self):
        """sha256 of everything that defines the base robot: the workers' cache key."""
        digest = hashlib.sha256()
        for part in (self.urdf_text, self.closures_text or "", self.forces_text or "",
                     str(self.floating_base), str(self.passive_forces)):
            digest.update(part.encode("utf-8"))
            digest.update(b"\0")
        return digest.hexdigest()


@dataclass(frozen=True)
class Scenario:
    """What each run simulates: `steps` steps of `dt` s (duration / dt), the integrator
    (None: robot.step's default), substeps, URDF position stops (`limits`), the divergence bound,
    the initial state (None: the reference at t = 0 on the neutral configuration, at rest), the
    drives (joint names, kp, kd; None: no drives), the reference (type, joints, center,
    amplitude, frequency_hz; None: none) and the open-loop torque (type, values; None: zero)."""
    duration: float
    dt: float
    steps: int
    integrator: str | None = "rk4"
    substeps: int = 1
    limits: bool = False
    max_speed: float = 1.0e3
    initial_positions: tuple | None = None
    initial_velocities: tuple | None = None
    drive_joints: tuple | None = None      # None: no drives; () : every scalar dof
    drive_kp: tuple = (400.0,)
    drive_kd: tuple = (40.0,)
    reference: dict | None = None
    torque: dict | None = None
    drive_model: str = "ideal"             # "ideal" (kp 1/s^2, kd 1/s) or "pd" (N m/rad, N m s/rad)


@dataclass(frozen=True)
class SweepSpec:
    """A checked sweep: where it came from, the robot files, the variations, how they combine
    ('grid': every combination; 'zip': the i-th value of each), the scenario, the metrics and
    the runs per task (batch_size)."""
    name: str
    source: str
    robot: RobotFiles
    variations: tuple
    combine: str
    scenario: Scenario
    metrics: tuple
    batch_size: int = DEFAULT_BATCH_SIZE

    @cached_property
    def fingerprint(self):
        """sha256 of what decides the runs' results (robot, variations, scenario, metrics):
        a resumed sweep must have the same."""
        digest = hashlib.sha256(self.robot.key().encode())
        digest.update(repr((self.variations, self.combine, self.scenario,
                            self.metrics)).encode())
        return digest.hexdigest()


# ------------------------------------------------------------------------------------------------
def load_sweep(source):
    """The SweepSpec of a sweep file (path) or of a dict (robot paths then relative to the
    current directory). Raises SweepSpecError naming the file and the key at fault."""
    if isinstance(source, dict):
        data, where, base = source, "<sweep dict>", Path.cwd()
    else:
        path = Path(source)
        data, where = read_yaml(path, "sweep", "sweep file")
        base = path.resolve().parent
    if not isinstance(data, dict):
        raise SweepSpecError(f"{where}: a sweep file is a mapping with the keys "
                             f"{', '.join(TOP_KEYS)}; got {F.kind(data)}")
    _check_keys(data, TOP_KEYS, f"{where}: unknown key")
    for key in ("robot", "variations", "scenario"):
        if key not in data:
            raise SweepSpecError(f"{where}: missing key '{key}'")
    name = data.get("name", Path(where).stem)
    if not isinstance(name, str) or not name.strip():
        raise SweepSpecError(f"{where}: name: must be a non-empty string, got {F.kind(name)}")
    robot = _robot_files(data["robot"], where, base)
    variations = _variations(data["variations"], where)
    combine = data.get("combine", "grid")
    if combine not in COMBINES:
        raise SweepSpecError(f"{where}: combine: must be one of {', '.join(COMBINES)}, got "
                             f"{F.kind(combine)}")
    scenario = _scenario(data["scenario"], where)
    metrics = _metrics(data.get("metrics", list(METRICS)), where)
    batch_size = _positive_int(data.get("batch_size", DEFAULT_BATCH_SIZE), f"{where}: batch_size")
    if batch_size > MAX_BATCH_SIZE:
        raise SweepSpecError(f"{where}: batch_size: {batch_size} is more than {MAX_BATCH_SIZE}")
    spec = SweepSpec(name.strip(), where, robot, variations, combine, scenario, metrics,
                     batch_size)
    _check_consistency(spec, where)
    n_runs = run_count(spec)
    if n_runs * scenario.steps > MAX_TOTAL_STEPS:
        raise SweepSpecError(f"{where}: {n_runs} runs of {scenario.steps} steps are more than "
                             f"the {MAX_TOTAL_STEPS} steps a sweep may take")
    return spec


def variation_values(variation):
    """(n,) float64 values of one Variation: its list, or its distribution's draws
    (numpy.random.default_rng(seed): the same numbers on every machine and every call). Here,
    not in variations.py, so that the spec's checks draw them as the runs will."""
    import numpy as np
    if variation.values is not None:
        return np.array(variation.values, dtype=float)
    d = variation.distribution
    if d.type == "linspace":
        return np.linspace(d.low, d.high, d.count)
    rng = np.random.default_rng(d.seed)
    if d.type == "uniform":
        return rng.uniform(d.low, d.high, d.count)
    return rng.normal(d.mean, d.std, d.count)


def run_count(spec):
    """Number of runs of the spec (checked against MAX_RUNS)."""
    counts = [len(v.values) if v.values is not None else v.distribution.count
              for v in spec.variations]
    if spec.combine == "zip":
        if len(set(counts)) > 1:
            listing = ", ".join(f"{v.name}: {n}" for v, n in zip(spec.variations, counts))
            raise SweepSpecError(f"{spec.source}: combine: zip needs the same number of values "
                                 f"in every variation ({listing})")
        total = counts[0]
    else:
        total = math.prod(counts)
    if total > MAX_RUNS:
        raise SweepSpecError(f"{spec.source}: variations: {total} runs, more than the "
                             f"{MAX_RUNS} a sweep may have")
    return total


# ------------------------------------------------------------------------------------------------
def _robot_files(entry, where, base):
    what = f"{where}: robot"
    if isinstance(entry, str):
        entry = {"urdf": entry}
    if not isinstance(entry, dict):
        raise SweepSpecError(f"{what}: must be a mapping with 'urdf' (and optionally "
                             f"'closures', 'forces'), got {F.kind(entry)}")
    _check_keys(entry, ROBOT_KEYS, f"{what}: unknown key")
    if "urdf" not in entry:
        raise SweepSpecError(f"{what}: missing key 'urdf' (the robot's URDF file, relative to "
                             "the sweep file)")
    texts = {}
    for key in ("urdf", "closures", "forces"):
        value = entry.get(key)
        if value is None:
            texts[key] = None
            continue
        texts[key] = _read_text(value, f"{what}.{key}", base, key)
    return RobotFiles(str(entry["urdf"]), texts["urdf"], texts["closures"], texts["forces"],
                      _flag(entry.get("floating_base", False), f"{what}.floating_base"),
                      _flag(entry.get("passive_forces", True), f"{what}.passive_forces"))


def _read_text(value, what, base, key):
    if not isinstance(value, str) or not value.strip():
        raise SweepSpecError(f"{what}: must be a file name, got {F.kind(value)}")
    path = (base / value).resolve()
    if key == "urdf" and path.suffix == ".xacro":
        raise SweepSpecError(f"{what}: {F.quoted(value)} is a .xacro file: xacro is code, and "
                             "a sweep file never runs code; expand it first "
                             "(xacro FILE > FILE.urdf)")
    if not path.is_file():
        raise SweepSpecError(f"{what}: file not found: {F.quoted(str(path))} (names are "
                             "relative to the sweep file)")
    size = path.stat().st_size
    if size > MAX_ROBOT_FILE_BYTES:
        raise SweepSpecError(f"{what}: {path} has {size} bytes, more than {MAX_ROBOT_FILE_BYTES}")
    try:
        return path.read_bytes().decode("utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise SweepSpecError(f"{what}: cannot read {path}: {exc}") from None


def _variations(entries, where):
    if not isinstance(entries, list) or not entries:
        raise SweepSpecError(f"{where}: variations: must be a non-empty list, got "
                             f"{F.kind(entries)}")
    if len(entries) > MAX_VARIATIONS:
        raise SweepSpecError(f"{where}: variations: {len(entries)} entries, more than the "
                             f"{MAX_VARIATIONS} a sweep may vary")
    out, names = [], {}
    for index, entry in enumerate(entries):
        variation = _variation(entry, f"{where}: variations[{index}]")
        if variation.name in names:
            raise SweepSpecError(f"{where}: variations[{index}].name: {variation.name!r} is "
                                 f"already the name of variations[{names[variation.name]}]")
        names[variation.name] = index
        out.append(variation)
    return tuple(out)


def _variation(entry, what):
    if not isinstance(entry, dict):
        raise SweepSpecError(f"{what}: must be a mapping, got {F.kind(entry)}")
    _check_keys(entry, VARIATION_KEYS, f"{what}: unknown key")
    quantity = entry.get("quantity")
    if quantity not in QUANTITIES:
        raise SweepSpecError(f"{what}.quantity: must be one of {', '.join(QUANTITIES)}, got "
                             f"{F.kind(quantity)}")
    target_key = QUANTITIES[quantity][0]
    for key in ("link", "joint", "element"):
        if key in entry and key != target_key:
            raise SweepSpecError(f"{what}.{key}: a '{quantity}' variation names its "
                                 f"{target_key}, not a {key}")
    target = entry.get(target_key, "")
    if not isinstance(target, str) or (not target and quantity not in ("kp", "kd")):
        raise SweepSpecError(f"{what}.{target_key}: a '{quantity}' variation needs the name of "
                             f"its {target_key}, got {F.kind(target or None)}")
    axis = ""
    if quantity == "com_offset":
        axis = entry.get("axis")
        if axis not in AXES:
            raise SweepSpecError(f"{what}.axis: com_offset moves the centre of mass along x, y "
                                 f"or z of the body frame, got {F.kind(axis)}")
    elif "axis" in entry:
        raise SweepSpecError(f"{what}.axis: only a com_offset variation has an axis")
    offset = (0.0, 0.0, 0.0)
    if quantity == "payload":
        offset = tuple(_numbers(entry.get("offset", [0.0, 0.0, 0.0]), 3, f"{what}.offset"))
    elif "offset" in entry:
        raise SweepSpecError(f"{what}.offset: only a payload variation has an offset")
    name = entry.get("name", f"{quantity}:{target}" if target else quantity)
    if not isinstance(name, str) or not name.strip() or len(name) > 100:
        raise SweepSpecError(f"{what}.name: must be a string of 1 to 100 characters, got "
                             f"{F.kind(name)}")
    if name in RESERVED_COLUMNS or name.startswith(RESERVED_PREFIXES):
        raise SweepSpecError(f"{what}.name: {name!r} is the name of a result column")
    has_values, has_distribution = "values" in entry, "distribution" in entry
    if has_values == has_distribution:
        raise SweepSpecError(f"{what}: give either 'values' (a list) or 'distribution'")
    values = distribution = None
    if has_values:
        raw = entry["values"]
        if not isinstance(raw, list) or not raw:
            raise SweepSpecError(f"{what}.values: must be a non-empty list of numbers, got "
                                 f"{F.kind(raw)}")
        if len(raw) > MAX_RUNS:
            raise SweepSpecError(f"{what}.values: {len(raw)} values, more than {MAX_RUNS}")
        values = tuple(_number(x, f"{what}.values[{i}]") for i, x in enumerate(raw))
    else:
        distribution = _distribution(entry["distribution"], f"{what}.distribution")
    return Variation(name.strip(), quantity, target, values, distribution, axis, offset)


def _distribution(entry, what):
    if not isinstance(entry, dict):
        raise SweepSpecError(f"{what}: must be a mapping {{type: uniform, low, high, count, "
                             f"seed}}, got {F.kind(entry)}")
    _check_keys(entry, DISTRIBUTION_KEYS, f"{what}: unknown key")
    kind = entry.get("type")
    if kind not in DISTRIBUTIONS:
        raise SweepSpecError(f"{what}.type: must be one of {', '.join(DISTRIBUTIONS)}, got "
                             f"{F.kind(kind)}")
    if "count" not in entry:
        raise SweepSpecError(f"{what}: missing key 'count' (the number of values)")
    count = _positive_int(entry["count"], f"{what}.count")
    if count > MAX_RUNS:
        raise SweepSpecError(f"{what}.count: {count} values, more than {MAX_RUNS}")
    needed = {"uniform": ("low", "high", "seed"), "normal": ("mean", "std", "seed"),
              "linspace": ("low", "high")}[kind]
    for key in needed:
        if key not in entry:
            raise SweepSpecError(f"{what}: a {kind} distribution needs '{key}'")
    for key in set(DISTRIBUTION_KEYS) - set(needed) - {"type", "count"}:
        if key in entry:
            raise SweepSpecError(f"{what}.{key}: not a parameter of a {kind} distribution "
                                 f"(it takes {', '.join(needed)})")
    numbers = {k: _number(entry[k], f"{what}.{k}") for k in needed if k != "seed"}
    seed = 0
    if "seed" in needed:
        seed = entry["seed"]
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2 ** 63:
            raise SweepSpecError(f"{what}.seed: must be an integer in [0, 2^63), got "
                                 f"{F.kind(seed)}")
    if kind in ("uniform", "linspace") and not numbers["low"] <= numbers["high"]:
        raise SweepSpecError(f"{what}: low ({numbers['low']:g}) must not exceed high "
                             f"({numbers['high']:g})")
    if kind == "normal" and numbers["std"] < 0.0:
        raise SweepSpecError(f"{what}.std: must be >= 0, got {numbers['std']:g}")
    return Distribution(kind, count, seed=seed, **numbers)


def _scenario(entry, where):
    what = f"{where}: scenario"
    if not isinstance(entry, dict):
        raise SweepSpecError(f"{what}: must be a mapping, got {F.kind(entry)}")
    _check_keys(entry, SCENARIO_KEYS, f"{what}: unknown key")
    for key in ("duration", "dt"):
        if key not in entry:
            raise SweepSpecError(f"{what}: missing key '{key}' (s)")
    duration = _number(entry["duration"], f"{what}.duration")
    dt = _number(entry["dt"], f"{what}.dt")
    if not duration > 0.0 or not dt > 0.0:
        raise SweepSpecError(f"{what}: duration and dt must be > 0 s, got {duration:g}, {dt:g}")
    steps = round(duration / dt)
    if steps > MAX_STEPS_PER_RUN:
        raise SweepSpecError(f"{what}: duration / dt = {duration / dt:.3g} steps, more than the "
                             f"{MAX_STEPS_PER_RUN} a run may take")
    if steps < 1 or abs(steps * dt - duration) > 1e-9 * max(duration, 1.0):
        raise SweepSpecError(f"{what}: duration ({duration:g} s) must be a whole number of "
                             f"steps dt ({dt:g} s)")
    integrator = entry.get("integrator", "rk4")
    from ..robot.integrators import INTEGRATORS
    if integrator is not None and integrator not in INTEGRATORS:
        raise SweepSpecError(f"{what}.integrator: must be one of {', '.join(INTEGRATORS)} or "
                             f"null (robot.step's default), got {F.kind(integrator)}")
    substeps = _positive_int(entry.get("substeps", 1), f"{what}.substeps")
    if steps * substeps > MAX_STEPS_PER_RUN:
        raise SweepSpecError(f"{what}.substeps: {steps} steps of {substeps} substeps are more "
                             f"than the {MAX_STEPS_PER_RUN} a run may take")
    max_speed = _number(entry.get("max_speed", 1.0e3), f"{what}.max_speed")
    if not max_speed > 0.0:
        raise SweepSpecError(f"{what}.max_speed: must be > 0, got {max_speed:g}")
    q0 = entry.get("initial_positions")
    v0 = entry.get("initial_velocities")
    q0 = None if q0 is None else tuple(_number_list(q0, f"{what}.initial_positions"))
    v0 = None if v0 is None else tuple(_number_list(v0, f"{what}.initial_velocities"))
    drive_joints, kp, kd, model = None, (400.0,), (40.0,), "ideal"
    drives = entry.get("drives")
    if drives is not None:
        if not isinstance(drives, dict):
            raise SweepSpecError(f"{what}.drives: must be a mapping {{joints, kp, kd, model}}, "
                                 f"got {F.kind(drives)}")
        _check_keys(drives, DRIVE_KEYS, f"{what}.drives: unknown key")
        drive_joints = tuple(_names(drives.get("joints", []), f"{what}.drives.joints"))
        model = drives.get("model", "ideal")
        if model not in DRIVE_MODELS:
            raise SweepSpecError(f"{what}.drives.model: must be one of "
                                 f"{', '.join(DRIVE_MODELS)}, got {F.kind(model)}")
        if model == "pd":   # a servo's gains have no robot-independent default
            for key in ("kp", "kd"):
                if key not in drives:
                    raise SweepSpecError(f"{what}.drives: missing key '{key}' (model pd: the "
                                         "servo's gains in N m/rad and N m s/rad)")
        kp = tuple(_gains(drives.get("kp", 400.0), f"{what}.drives.kp"))
        kd = tuple(_gains(drives.get("kd", 40.0), f"{what}.drives.kd"))
    reference = _reference(entry.get("reference"), f"{what}.reference")
    torque = _torque(entry.get("torque"), f"{what}.torque")
    return Scenario(duration, dt, steps, integrator, substeps,
                    _flag(entry.get("limits", False), f"{what}.limits"), max_speed, q0, v0,
                    drive_joints, kp, kd, reference, torque, model)


def _reference(entry, what):
    if entry is None:
        return None
    if not isinstance(entry, dict):
        raise SweepSpecError(f"{what}: must be a mapping, got {F.kind(entry)}")
    _check_keys(entry, REFERENCE_KEYS, f"{what}: unknown key")
    kind = entry.get("type", "swing")
    if kind not in REFERENCE_TYPES:
        raise SweepSpecError(f"{what}.type: must be one of {', '.join(REFERENCE_TYPES)}, got "
                             f"{F.kind(kind)}")
    out = {"type": kind, "joints": tuple(_names(entry.get("joints", []), f"{what}.joints"))}
    for key in ("center", "amplitude", "frequency_hz"):
        if key not in entry:
            raise SweepSpecError(f"{what}: missing key '{key}' (a swing is center + amplitude "
                                 "(1 - cos(2 pi frequency_hz t)))")
        value = entry[key]   # one number (every joint) or one per joint, as drives' gains
        out[key] = tuple(_number_list(value if isinstance(value, list) else [value],
                                      f"{what}.{key}"))
    return out


def _torque(entry, what):
    if entry is None:
        return None
    if not isinstance(entry, dict):
        raise SweepSpecError(f"{what}: must be a mapping, got {F.kind(entry)}")
    _check_keys(entry, TORQUE_KEYS, f"{what}: unknown key")
    kind = entry.get("type")
    if kind not in TORQUE_TYPES:
        raise SweepSpecError(f"{what}.type: must be one of {', '.join(TORQUE_TYPES)}, got "
                             f"{F.kind(kind)}")
    if kind == "constant":
        if "values" not in entry:
            raise SweepSpecError(f"{what}: a constant torque needs 'values' (one per dof, N m "
                                 "or N)")
        return {"type": kind, "values": tuple(_number_list(entry["values"], f"{what}.values"))}
    if "values" in entry:
        raise SweepSpecError(f"{what}.values: an inverse_dynamics torque is computed from the "
                             "reference; it takes no values")
    return {"type": kind}


def _metrics(entry, where):
    if not isinstance(entry, list) or not entry:
        raise SweepSpecError(f"{where}: metrics: must be a non-empty list of "
                             f"{', '.join(METRICS)}, got {F.kind(entry)}")
    for index, name in enumerate(entry):
        if not isinstance(name, str) or name not in METRICS:
            raise SweepSpecError(f"{where}: metrics[{index}]: unknown metric {F.kind(name)} "
                                 f"(metrics are {', '.join(METRICS)})")
    return tuple(dict.fromkeys(entry))


def _check_consistency(spec, where):
    """What needs what: tracking metrics a reference, kp / kd variations drives, an
    inverse_dynamics torque a reference and no drives with model compensation (ideal drives'
    b(q, v) would count gravity twice; pd drives have none: PD + the nominal feed-forward)."""
    scenario = spec.scenario
    tracking = {"tracking_rms", "tracking_max"} & set(spec.metrics)
    if tracking and scenario.reference is None:
        raise SweepSpecError(f"{where}: metrics: {', '.join(sorted(tracking))} need "
                             "scenario.reference (the trajectory to track)")
    for index, variation in enumerate(spec.variations):
        if variation.quantity in ("kp", "kd") and scenario.drive_joints is None:
            raise SweepSpecError(f"{where}: variations[{index}]: a {variation.quantity} "
                                 "variation needs scenario.drives")
        if variation.quantity in ("kp", "kd"):   # drive gains are >= 0, as scenario.drives'
            negative = [(k, float(x)) for k, x in enumerate(variation_values(variation))
                        if x < 0.0]
            if negative:
                key = "values" if variation.values is not None else "distribution"
                raise SweepSpecError(f"{where}: variations[{index}].{key}: gains must be >= 0, "
                                     f"got {negative[0][1]:g} (value {negative[0][0]})")
        if variation.quantity == "stiffness" and spec.robot.forces_text is None:
            raise SweepSpecError(f"{where}: variations[{index}]: a stiffness variation needs "
                                 "robot.forces (the force elements' file)")
    torque = scenario.torque
    if torque is not None and torque["type"] == "inverse_dynamics":
        if scenario.reference is None:
            raise SweepSpecError(f"{where}: scenario.torque: inverse_dynamics needs "
                                 "scenario.reference")
        if scenario.drive_joints is not None and scenario.drive_model != "pd":
            raise SweepSpecError(f"{where}: scenario.torque: inverse_dynamics is an open-loop "
                                 "torque profile; with ideal scenario.drives the drives' own "
                                 "model compensation would count gravity twice (use drives "
                                 "with model: pd, or no drives)")
    if scenario.drive_joints is not None and scenario.reference is None:
        raise SweepSpecError(f"{where}: scenario.drives: drives need scenario.reference (the "
                             "positions they track)")


# ------------------------------------------------------------------------------------------------
def _check_keys(mapping, allowed, prefix):
    try:
        F.check_keys(mapping, allowed, prefix)
    except ModelError as exc:
        raise SweepSpecError(str(exc)) from None


def _number(value, what):
    try:
        return F.number(value, what)
    except ModelError as exc:
        raise SweepSpecError(str(exc)) from None


def _numbers(value, n, what):
    try:
        return [float(x) for x in F.numbers(value, n, what)]
    except ModelError as exc:
        raise SweepSpecError(str(exc)) from None


def _number_list(value, what):
    if not isinstance(value, list) or not value or len(value) > 10_000:
        raise SweepSpecError(f"{what}: must be a list of 1 to 10000 numbers, got {F.kind(value)}")
    return [_number(x, f"{what}[{i}]") for i, x in enumerate(value)]


def _gains(value, what):
    values = [value] if not isinstance(value, list) else value
    gains = _number_list(values, what)
    if any(g < 0.0 for g in gains):
        raise SweepSpecError(f"{what}: gains must be >= 0, got {gains}")
    return gains


def _names(value, what):
    if not isinstance(value, list) or len(value) > 10_000 or \
            not all(isinstance(x, str) and 0 < len(x) <= 200 for x in value):
        raise SweepSpecError(f"{what}: must be a list of joint names, got {F.kind(value)}")
    return value


def _positive_int(value, what):
    try:
        return F.positive_int(value, what)
    except ModelError as exc:
        raise SweepSpecError(str(exc)) from None


def _flag(value, what):
    if not isinstance(value, bool):
        raise SweepSpecError(f"{what}: must be true or false, got {F.kind(value)}")
    return value
