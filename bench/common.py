"""Shared helpers of the mbd_ros benchmarks (run by hand, not part of the test suite).

- robot paths (example-robot-data) and URDF text preparation shared by both libraries,
- Pinocchio model building from the same XML text,
- the q/v permutation between our joint order and Pinocchio's (by joint name),
- an interleaved timing helper (each candidate timed in turn, many rounds; min and median),
- a consistency check (ours vs Pinocchio, relative tolerance),
- machine / version information and markdown table formatting.

Nothing here is imported by the library or the tests.
"""
from __future__ import annotations

import datetime
import os
import platform
import re
import site
import subprocess
import sys
import timeit
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
RTOL = 1e-9          # sanity check: max|ours - pin| <= RTOL * max(1, max|pin|)

# name -> (path relative to the example-robot-data robots directory, floating base)
ROBOTS = {
    "ur5": ("ur_description/urdf/ur5_robot.urdf", False),
    "panda": ("panda_description/urdf/panda.urdf", False),
    "solo12": ("solo_description/robots/solo12.urdf", True),
    "anymal": ("anymal_b_simple_description/robots/anymal.urdf", True),
    "talos_reduced": ("talos_data/robots/talos_reduced.urdf", True),
}

# Inertia tensors in example-robot-data that are not those of any rigid body (Pinocchio accepts
# them, mbd_ros rejects them with a ModelError). Both libraries get the same repaired text; the
# links concerned carry 1e-6 kg, so the dynamics are unaffected to the printed precision.
_INERTIA_FIXES = {
    "anymal": [('<inertia ixx="1e-6" ixy="1e-6" ixz="1e-6" iyy="1e-6" iyz="1e-6" izz="1e-6"/>',
                '<inertia ixx="1e-6" ixy="0" ixz="0" iyy="1e-6" iyz="0" izz="1e-6"/>')],
}


# ---------------------------------------------------------------------------- robots and models

def example_robot_data_dir() -> Path:
    """The robots/ directory of the example-robot-data (cmeel) wheel."""
    for d in list(site.getsitepackages()) + [site.getusersitepackages()] + list(sys.path):
        p = Path(d) / "cmeel.prefix" / "share" / "example-robot-data" / "robots"
        if p.is_dir():
            return p
    raise RuntimeError("example-robot-data is not installed (pip install example-robot-data)")


def robot_xml(name: str) -> tuple[str, bool, list[str]]:
    """(URDF text for both libraries, floating_base, notes) of a named example-robot-data robot.

    'continuous' joints become 'revolute' (Pinocchio stores a continuous joint as (cos, sin);
    the mbd_ros contract uses one angle for both), and known-invalid inertias are repaired.
    """
    rel, floating = ROBOTS[name]
    xml = (example_robot_data_dir() / rel).read_text()
    notes = []
    for old, new in _INERTIA_FIXES.get(name, []):
        n = xml.count(old)
        if n:
            xml = xml.replace(old, new)
            notes.append(f"{name}: {n} non-physical inertia tensor(s) "
                         "(all six entries 1e-6, violating I1 + I2 >= I3) replaced by diag(1e-6) "
                         "for both libraries (mbd_ros rejects the original)")
    return xml.replace('type="continuous"', 'type="revolute"'), floating, notes


def pin_model(xml: str, floating_base: bool):
    import pinocchio as pin
    xml = xml.replace('type="continuous"', 'type="revolute"')
    if floating_base:
        return pin.buildModelFromXML(xml, pin.JointModelFreeFlyer())
    return pin.buildModelFromXML(xml)


def load_pair(xml: str, floating_base: bool):
    """(our Robot, pin model, pin data, Permutation) from the same URDF text; URDF damping and
    friction are not applied by mbd_ros (Pinocchio ignores them)."""
    import mbd_ros
    robot = mbd_ros.load(xml, floating_base=floating_base, passive_forces=False)
    model = pin_model(xml, floating_base)
    return robot, model, model.createData(), Permutation(robot, model)


class Permutation:
    """Index maps between our q/v layout and Pinocchio's, by joint name.

    q_pin = q_ours[self.q]      v_pin = v_ours[self.v]
    v_ours = v_pin[self.v_inv]  M_ours = M_pin[np.ix_(self.v_inv, self.v_inv)]
    """

    def __init__(self, robot, model):
        nq_of = {"revolute": 1, "prismatic": 1, "floating": 7, "spherical": 4, "planar": 3}
        nv_of = {"revolute": 1, "prismatic": 1, "floating": 6, "spherical": 3, "planar": 3}
        if robot.nq != model.nq or robot.nv != model.nv:
            raise AssertionError(f"sizes differ: ours nq={robot.nq} nv={robot.nv}, "
                                 f"pin nq={model.nq} nv={model.nv}")
        self.q = np.full(model.nq, -1)
        self.v = np.full(model.nv, -1)
        for name, jtype, iq, iv in zip(robot.joint_names, robot.joint_types, robot.idx_q, robot.idx_v):
            jid = model.getJointId(name)
            if jid >= model.njoints:
                raise AssertionError(f"joint {name!r} is not in the Pinocchio model")
            j = model.joints[jid]
            if (j.nq, j.nv) != (nq_of[jtype], nv_of[jtype]):
                raise AssertionError(f"joint {name!r}: ours {jtype} nq={nq_of[jtype]} "
                                     f"nv={nv_of[jtype]}, pin {j.shortname()} nq={j.nq} nv={j.nv}")
            self.q[j.idx_q:j.idx_q + j.nq] = np.arange(iq, iq + j.nq)
            self.v[j.idx_v:j.idx_v + j.nv] = np.arange(iv, iv + j.nv)
        assert (self.q >= 0).all() and (self.v >= 0).all(), "some Pinocchio coordinates unmapped"
        self.v_inv = np.argsort(self.v)
        self.identity = bool((self.q == np.arange(model.nq)).all()
                             and (self.v == np.arange(model.nv)).all())


def random_state(robot, perm, rng):
    """One random state, C-contiguous float64 arrays in both layouts:
    (q, v, x) ours and (q, v, x) pin, where x is a random tau / qdd."""
    q = np.ascontiguousarray(robot.random_configuration(rng))
    v = rng.standard_normal(robot.nv)
    x = rng.standard_normal(robot.nv) * 5.0
    return (q, v, x), tuple(np.ascontiguousarray(a[p]) for a, p in ((q, perm.q), (v, perm.v), (x, perm.v)))


def rel_err(ours, ref):
    """max|ours - ref| / max(1, max|ref|)."""
    ours, ref = np.asarray(ours, float), np.asarray(ref, float)
    if not np.all(np.isfinite(ours)):
        return float("inf")
    return float(np.max(np.abs(ours - ref)) / max(1.0, float(np.max(np.abs(ref)))))


def check_against_pin(robot, model, data, perm, ours_state, pin_state):
    """Relative errors of FD, ID (qdd := the FD result) and M, ours vs Pinocchio, on one state."""
    import pinocchio as pin
    q, v, tau = ours_state
    qp, vp, taup = pin_state
    qdd = robot.forward_dynamics(q, v, tau)
    qdd_pin = pin.aba(model, data, qp, vp, taup).copy()
    tau_back = robot.inverse_dynamics(q, v, qdd)
    tau_pin = pin.rnea(model, data, qp, vp, np.ascontiguousarray(qdd[perm.v])).copy()
    M = robot.mass_matrix(q)
    M_pin = pin.crba(model, data, qp).copy()
    return {
        "FD": rel_err(qdd, qdd_pin[perm.v_inv]),
        "ID": rel_err(tau_back, tau_pin[perm.v_inv]),
        "M": rel_err(M, M_pin[np.ix_(perm.v_inv, perm.v_inv)]),
    }


# ---------------------------------------------------------------------------- timing

def time_interleaved(stmts: dict, namespace: dict, rounds: int = 200, target_s: float = 2e-3,
                     warmup: int = 3):
    """Per-call time of each statement, measured interleaved.

    stmts: {label: python statement}, evaluated in `namespace` (compiled inline into a loop by
    timeit: no lambda or function-call overhead beyond the statement itself; gc off).
    Each round times `number` calls of every statement in turn (order rotated every round),
    `number` chosen so that one sample of the slowest statement lasts about `target_s`.
    Returns {label: {"min": us, "median": us, "number": n, "rounds": r}}.
    """
    timers = {k: timeit.Timer(s, globals=namespace) for k, s in stmts.items()}
    for t in timers.values():            # warm up (compilation, caches, first-call allocation)
        t.timeit(warmup)
    # calibrate: per-call estimate of the slowest statement
    est = max(min(t.timeit(5) for _ in range(3)) / 5 for t in timers.values())
    number = max(1, int(target_s / max(est, 1e-9)))
    samples = {k: [] for k in timers}
    labels = list(timers)
    for r in range(rounds):
        shift = r % len(labels)
        for k in labels[shift:] + labels[:shift]:
            samples[k].append(timers[k].timeit(number) / number)
    return {k: {"min": 1e6 * min(s), "median": 1e6 * float(np.median(s)), "number": number,
                "rounds": rounds} for k, s in samples.items()}


def time_calls_interleaved(funcs: dict, rounds: int = 30, warmup: int = 2, pause: float = 0.02,
                           seed: int = 0):
    """Like time_interleaved for long calls (batches): {label: zero-argument callable}, one call
    per sample, the candidates in a new random order every round (so that no candidate always
    follows the same one). `pause` seconds of sleep before each sample let the previous
    candidate's worker threads go idle: OpenMP workers keep spinning for a while after a
    parallel region and can steal the CPU from whatever runs next (observed on a 2-core machine:
    with a fixed order and a 2 ms pause, our 2-thread batch timed right after
    pin.abaInParallel came out consistently slower than the same call timed after our own).
    Returns {label: {"min": us, "median": us, "rounds": r}}."""
    import random
    import time
    order_rng = random.Random(seed)
    for f in funcs.values():
        for _ in range(warmup):
            f()
    labels = list(funcs)
    samples = {k: [] for k in labels}
    for _ in range(rounds):
        order_rng.shuffle(labels)
        for k in labels:
            if pause:
                time.sleep(pause)
            t0 = time.perf_counter()
            funcs[k]()
            samples[k].append(time.perf_counter() - t0)
    return {k: {"min": 1e6 * min(s), "median": 1e6 * float(np.median(s)), "rounds": rounds}
            for k, s in samples.items()}


# ---------------------------------------------------------------------------- machine info

def cpu_model() -> str:
    """CPU model name plus family/model, clock, L2 cache, widest SIMD and 'VM' if virtualised."""
    try:
        fields, flags = {}, set()
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if ":" not in line:
                continue
            key, val = (s.strip() for s in line.split(":", 1))
            if key == "flags":
                flags = set(val.split())
            fields.setdefault(key, val)
        simd = next((f for f in ("avx512f", "avx2", "avx", "sse4_2", "asimd") if f in flags), "")
        extra = [f"family {fields['cpu family']} model {fields['model']}" if "cpu family" in fields else "",
                 f"{float(fields['cpu MHz']):.0f} MHz" if "cpu MHz" in fields else "",
                 f"cache {fields['cache size']}" if "cache size" in fields else "", simd,
                 "VM" if "hypervisor" in flags else ""]
        name = fields.get("model name") or platform.processor() or platform.machine()
        return name + " (" + ", ".join(e for e in extra if e) + ")"
    except (OSError, ValueError, KeyError):
        return platform.processor() or platform.machine()


def lscpu_model_name() -> str:
    """`lscpu | grep 'Model name'`: the CPU model as lscpu reports it ('?' without lscpu)."""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return "?"
    for line in out.splitlines():
        if line.strip().startswith("Model name"):
            return line.split(":", 1)[1].strip()
    return "?"


def target_verdict(ratio: float, limit: float) -> str:
    """'0.73 (target <= 0.70: missed)' or '... met'."""
    return f"{ratio:.2f} (target <= {limit:.2f}: {'met' if ratio <= limit else '**missed**'})"


def git_revision() -> str:
    try:
        rev = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", "mbd_ros"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return (rev or "?") + (" + uncommitted changes in mbd_ros/" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "?"


def source_digest() -> str:
    """Short sha256 of the library sources (mbd_ros/**/*.py): identifies the code that was
    measured even when it is not committed."""
    import hashlib
    h = hashlib.sha256()
    for path in sorted((REPO / "mbd_ros").rglob("*.py")):
        h.update(str(path.relative_to(REPO)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:12]


def machine_info() -> dict:
    import numba
    import numpy
    info = {
        "date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
        "cpu (lscpu Model name)": lscpu_model_name(),
        "cpu": cpu_model(),
        "cores": f"{os.cpu_count()} logical"
                 + (f", {len(os.sched_getaffinity(0))} usable" if hasattr(os, "sched_getaffinity") else ""),
        "load average (1/5/15 min, at start)": " / ".join(f"{x:.2f}" for x in os.getloadavg()),
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "numba": numba.__version__,
    }
    try:
        import pinocchio
        info["pinocchio"] = pinocchio.__version__
    except ImportError:
        info["pinocchio"] = "not installed"
    info["mbd_ros revision"] = git_revision()
    info["mbd_ros source digest (sha256 of mbd_ros/**/*.py)"] = source_digest()
    return info


def machine_markdown(command: str) -> str:
    info = machine_info()
    lines = [f"- command: `{command}`"] + [f"- {k}: {v}" for k, v in info.items()]
    return "\n".join(lines)


def end_markdown() -> str:
    return ("- load average (1/5/15 min) at the end: "
            + " / ".join(f"{x:.2f}" for x in os.getloadavg()) + f" ({os.cpu_count()} = all cores busy)")


def finish_report(md: list, notes: list, failures: list, out) -> int:
    """Append the notes, failures and end-of-run line to the markdown lines, print them, write
    them to `out` if given; exit status 1 if a correctness check failed."""
    if notes:
        md += ["### Notes", ""] + [f"- {n}" for n in notes] + [""]
    if failures:
        md += ["### FAILURES", ""] + [f"- {f}" for f in failures] + [""]
    md += [end_markdown(), ""]
    text = "\n".join(md)
    print(text)
    if out:
        Path(out).write_text(text + "\n")
    return 1 if failures else 0


def this_command() -> str:
    return "PYTHONPATH=. python " + " ".join([os.path.relpath(sys.argv[0], REPO)] + sys.argv[1:])


# ---------------------------------------------------------------------------- markdown

def md_table(header: list, rows: list) -> str:
    out = ["| " + " | ".join(header) + " |",
           "|" + "|".join("---:" if i else "---" for i in range(len(header))) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def fmt_us(x: float) -> str:
    return f"{x:.2f}" if x < 10 else (f"{x:.1f}" if x < 1000 else f"{x:.0f}")


def fmt_ratio(x: float) -> str:
    return f"{x:.2f}"


def add_repo_to_path():
    """Make `import mbd_ros` work from a source checkout without installing."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")
