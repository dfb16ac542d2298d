"""Caches are code: broken or foreign cache entries are never a permanent failure, and a changed
generated module is never executed (mbd_ros/cache_trust.py, numba_cache.py, codegen/cache.py).

Each scenario runs fresh processes against a temporary codegen cache (MBD_ROS_CACHE_DIR) and, for
the generic kernels, a temporary numba cache (NUMBA_CACHE_DIR), so the shared caches of this tree
are not disturbed. Results are checked against Pinocchio's ABA and CRBA (the robot is a fixed-base
two-link arm of revolute joints: both parse it the same way), warnings by their category and text,
and "the next load is clean" as a process that warns about nothing and regenerates nothing.
"""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import mbd_ros
from conftest import assert_close
from mbd_ros.kernels import cache_trust, numba_cache
from mbd_ros import fastcall
from mbd_ros.codegen import cache as codegen_cache
from oracle import pin_model_from_xml

ARM_URDF = """<?xml version="1.0"?>
<robot name="trust_arm">
  <link name="base"/>
  <link name="upper"><inertial><origin xyz="0 0 -0.2"/><mass value="1.3"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.012" iyz="0" izz="0.003"/></inertial></link>
  <link name="lower"><inertial><origin xyz="0.05 0 -0.15"/><mass value="0.7"/>
    <inertia ixx="0.005" ixy="0" ixz="0" iyy="0.005" iyz="0" izz="0.001"/></inertial></link>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="upper"/>
    <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="10" velocity="5"/></joint>
  <joint name="elbow" type="revolute"><parent link="upper"/><child link="lower"/>
    <origin xyz="0 0 -0.4" rpy="0.3 0 0"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="10" velocity="5"/></joint>
</robot>
"""
Q, V, TAU = [0.4, -0.7], [1.1, -0.3], [0.2, -0.1]

# the child: load, three forward dynamics with out= (the third through the C-level KernelCall when
# the extension is built), then what it saw
CHILD = textwrap.dedent("""
    import json, os, sys, warnings
    os.umask(0o022)   # numba creates its cache folders with the umask: not group-writable
    warnings.simplefilter("always")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        import numpy as np
        import mbd_ros
        from mbd_ros import fastcall
        robot = mbd_ros.load(sys.argv[1], passive_forces=False, codegen=sys.argv[2] == "1")
        q, v, tau = (np.array(x) for x in json.loads(sys.argv[3]))
        out = np.empty(robot.nv)
        results = [robot.forward_dynamics(q, v, tau, out=out).tolist() for _ in range(3)]
        mass = robot.mass_matrix(q).tolist()   # another kernel of the same module
    print("@@" + json.dumps({
        "results": results,
        "mass_matrix": mass,
        "warnings": [f"{w.category.__name__}: {w.message}" for w in seen],
        "generated": getattr(getattr(robot.tree, "kernels", None), "generated", None),
        "path": str(getattr(robot, "codegen_path", "")),
        "kernel_call": fastcall.installed(robot, "forward_dynamics"),
        "fastcall": fastcall.AVAILABLE,
    }))
""")


@pytest.fixture(scope="module")
def expected(pin):
    """Pinocchio's (forward dynamics, mass matrix) at Q, V, TAU."""
    model, _ = pin_model_from_xml(pin, ARM_URDF, False)
    data = model.createData()
    qdd = pin.aba(model, data, np.array(Q), np.array(V), np.array(TAU)).copy()
    mass = np.triu(pin.crba(model, data, np.array(Q)))   # crba fills the upper triangle
    return qdd, mass + np.triu(mass, 1).T


class Child:
    """Runs CHILD in fresh processes with the temporary caches of one test."""

    def __init__(self, tmp_path, codegen, numba_cache_dir=None, **env):
        self.urdf = tmp_path / "arm.urdf"
        self.urdf.write_text(ARM_URDF)
        self.codegen = codegen
        self.cache = tmp_path / "codegen_cache"
        self.env = dict(os.environ, MBD_ROS_CACHE_DIR=str(self.cache),
                        XDG_CACHE_HOME=str(tmp_path / "xdg"), **env)
        self.env.pop("NUMBA_CACHE_DIR", None)
        if numba_cache_dir is not None:
            self.env["NUMBA_CACHE_DIR"] = str(numba_cache_dir)
        self.cwd = tmp_path

    def run(self):
        proc = subprocess.run([sys.executable, "-c", CHILD, str(self.urdf), "1" if self.codegen else "0",
                               json.dumps([Q, V, TAU])], env=self.env, cwd=self.cwd,
                              capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, f"the child failed ({proc.returncode}):\n{proc.stderr[-4000:]}"
        line = [s for s in proc.stdout.splitlines() if s.startswith("@@")][-1]
        return json.loads(line[2:])


def check_results(result, expected, what):
    for i, qdd in enumerate(result["results"]):
        assert_close(qdd, expected[0], f"{what}: forward dynamics, call {i + 1}")
    assert_close(result["mass_matrix"], expected[1], f"{what}: mass matrix")
    if result["fastcall"]:   # the third call ran the C entry, whose cache was broken too
        assert result["kernel_call"], f"{what}: the KernelCall was not installed"


def cache_warnings(result):
    return [w for w in result["warnings"] if w.startswith("CacheWarning")]


def module_file(child):
    [path] = child.cache.glob("mbd_ros_generated_*.py")
    return path


def numba_files(folder, function):
    """The .nbi and .nbc files numba cached for `function` ('module.qualname') under folder."""
    index = sorted(folder.rglob(f"{function}-*.nbi"))
    data = sorted(folder.rglob(f"{function}-*.nbc"))
    assert len(index) == 1 and len(data) == 1, f"{function}: {index} {data}"
    return index[0], data[0]


def truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2])


def garbage(path):
    size = path.stat().st_size
    path.write_bytes(np.random.default_rng(size).bytes(size))


# ---- generated modules ------------------------------------------------------------------------------

def test_an_appended_line_is_never_executed_the_module_is_rebuilt(tmp_path, expected):
    child = Child(tmp_path, codegen=True)
    first = child.run()
    assert first["generated"] and not cache_warnings(first)
    check_results(first, expected, "fresh cache")
    module = module_file(child)
    marker = tmp_path / "executed"
    with open(module, "a") as f:
        f.write(f"\nopen({str(marker)!r}, 'w').write('the appended line ran')\n")
    tampered = child.run()
    assert not marker.exists(), "the appended line was executed"
    [warning] = cache_warnings(tampered)
    assert str(module) in warning and "does not match its signature" in warning
    assert tampered["generated"]                                  # removed and regenerated
    assert str(marker) not in module.read_text()
    check_results(tampered, expected, "after the module was changed")
    clean = child.run()
    assert not clean["warnings"] and not clean["generated"]
    check_results(clean, expected, "the load after the rebuild")
    assert not marker.exists()


def test_a_truncated_module_is_rebuilt(tmp_path, expected):
    child = Child(tmp_path, codegen=True)
    child.run()
    truncate(module_file(child))
    broken = child.run()
    [warning] = cache_warnings(broken)
    assert "does not match its signature" in warning and broken["generated"]
    check_results(broken, expected, "after the module was truncated")
    clean = child.run()
    assert not clean["warnings"] and not clean["generated"]
    check_results(clean, expected, "the load after the rebuild")


def test_a_module_without_signature_is_not_executed(tmp_path, expected):
    """A module of the right name written by someone else (or by an older mbd_ros): refused."""
    child = Child(tmp_path, codegen=True)
    child.run()
    module = module_file(child)
    marker = tmp_path / "executed"
    body = module.read_bytes().partition(b"\n")[2]
    module.write_bytes(body + f"\nopen({str(marker)!r}, 'w').write('ran')\n".encode())
    result = child.run()
    assert not marker.exists()
    [warning] = cache_warnings(result)
    assert "has no signature" in warning and result["generated"]
    check_results(result, expected, "after an unsigned module")


def test_a_broken_signed_code_cache_is_rebuilt(tmp_path, expected):
    child = Child(tmp_path, codegen=True)
    child.run()
    [code] = (child.cache / "__pycache__").glob("*.code")
    truncate(code)
    result = child.run()
    [warning] = cache_warnings(result)
    assert str(code) in warning and not result["generated"]
    check_results(result, expected, "after the code cache was truncated")
    assert not child.run()["warnings"]


@pytest.mark.parametrize("damage", [(garbage, truncate), (truncate, garbage)],
                         ids=["garbage index, truncated data", "truncated index, garbage data"])
def test_broken_numba_cache_of_a_generated_kernel_is_recompiled(tmp_path, expected, damage):
    child = Child(tmp_path, codegen=True)
    child.run()
    for name in ("forward_dynamics", "forward_dynamics_c")[:2 if fastcall.AVAILABLE else 1]:
        for path, how in zip(numba_files(child.cache / "__pycache__", f"{module_file(child).stem}.{name}"),
                             damage):
            how(path)
    broken = child.run()
    warnings_ = cache_warnings(broken)
    assert any(".forward_dynamics in" in w and "recompiling" in w for w in warnings_), warnings_
    assert not broken["generated"]          # the module itself was fine
    check_results(broken, expected, "after numba's cache was broken")
    clean = child.run()
    assert not clean["warnings"]
    check_results(clean, expected, "the load after the recompilation")


# ---- numba's cache of the generic kernels --------------------------------------------------------------

@pytest.mark.parametrize("damage", [(truncate, garbage), (garbage, truncate)],
                         ids=["truncated index, garbage data", "garbage index, truncated data"])
def test_broken_numba_cache_of_the_generic_forward_dynamics_is_recompiled(tmp_path, expected, damage):
    """aba.forward_dynamics (robot.forward_dynamics) and its C entry (the KernelCall of the third
    call): numba raised UnpicklingError at every later load before."""
    numba_dir = tmp_path / "numba"
    child = Child(tmp_path, codegen=False, numba_cache_dir=numba_dir)
    first = child.run()
    check_results(first, expected, "fresh numba cache")
    damage_index, damage_data = damage
    for function in ("aba.forward_dynamics", "rigid_entries.forward_dynamics_c")[:2 if fastcall.AVAILABLE else 1]:
        index, data = numba_files(numba_dir, function)
        damage_index(index)
        damage_data(data)
    broken = child.run()
    warnings_ = cache_warnings(broken)
    for function in ("mbd_ros.kernels.aba.forward_dynamics",
                     "mbd_ros.fastcall.rigid_entries.forward_dynamics_c")[:2 if broken["fastcall"] else 1]:
        assert any(f"numba cache of {function} in" in w and "recompiling" in w for w in warnings_), \
            (function, warnings_)
    check_results(broken, expected, "after numba's cache was broken")
    clean = child.run()
    assert not clean["warnings"]
    check_results(clean, expected, "the load after the recompilation")
    numba_files(numba_dir, "aba.forward_dynamics")   # saved again, one entry


# ---- directories -------------------------------------------------------------------------------------

def test_a_group_writable_cache_dir_is_refused_with_a_fallback(tmp_path, monkeypatch, expected):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o775)
    monkeypatch.setenv(codegen_cache.ENV_CACHE_DIR, str(shared))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    with pytest.warns(cache_trust.CacheWarning, match=r"refused: .*shared is writable by its group"):
        robot = mbd_ros.load(ARM_URDF, passive_forces=False, codegen=True)
    fallback = tmp_path / "xdg" / "mbd_ros"
    assert robot.codegen_path.parent == fallback
    assert stat.S_IMODE(fallback.stat().st_mode) == 0o700
    assert list(shared.iterdir()) == []                       # nothing written to the refused one
    assert_close(robot.forward_dynamics(np.array(Q), np.array(V), np.array(TAU)), expected[0],
                 "kernels generated in the fallback directory")


def test_a_cache_dir_owned_by_another_user_is_refused(tmp_path, monkeypatch):
    other = tmp_path / "other"
    other.mkdir(mode=0o700)
    monkeypatch.setenv(codegen_cache.ENV_CACHE_DIR, str(other))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    if os.geteuid() == 0:
        os.chown(other, 65534, -1)        # root: really another owner (nobody)
        with pytest.warns(cache_trust.CacheWarning, match="owned by uid 65534"):
            assert codegen_cache.cache_dir() == tmp_path / "xdg" / "mbd_ros"
    # as any user: every directory now appears to belong to someone else, the fallbacks included:
    # nowhere to cache, so the generic kernels are used, with warnings
    monkeypatch.setattr(cache_trust, "_euid", lambda: os.geteuid() + 1)
    monkeypatch.setattr(cache_trust.tempfile, "tempdir", str(tmp_path / "tmp"))
    with pytest.warns(cache_trust.CacheWarning, match="not by this user"):
        with pytest.raises(OSError, match="no private writable cache directory"):
            codegen_cache.cache_dir()
    with pytest.warns(UserWarning, match="generic ones"), pytest.warns(cache_trust.CacheWarning):
        robot = mbd_ros.load(ARM_URDF, codegen=True)
    assert type(robot) is mbd_ros.Robot


def test_a_squatted_temp_fallback_is_refused(tmp_path, monkeypatch):
    """The last resort, $TMPDIR/mbd_ros-<uid>, may have been created by another user first (or
    be a symbolic link to their directory)."""
    monkeypatch.setattr(cache_trust.tempfile, "tempdir", str(tmp_path))
    elsewhere = tmp_path / "theirs"
    elsewhere.mkdir(mode=0o700)
    (tmp_path / f"mbd_ros-{os.geteuid()}").symlink_to(elsewhere)
    with pytest.raises(cache_trust.UntrustedDirectory, match="symbolic link"):
        cache_trust.private_temp_directory()


def test_the_default_cache_is_per_user_not_in_the_package(tmp_path, monkeypatch):
    monkeypatch.delenv(codegen_cache.ENV_CACHE_DIR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    path = codegen_cache.cache_dir()
    assert path == tmp_path / "xdg" / "mbd_ros"
    package = Path(mbd_ros.__file__).resolve().parent
    assert package not in path.parents
    for folder in (path, path / "__pycache__"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700


def test_the_signing_key_is_private_and_replaced_when_not(tmp_path):
    key = cache_trust.secret_key(tmp_path)
    path = tmp_path / cache_trust.KEY_NAME
    assert len(key) == cache_trust.KEY_BYTES and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert cache_trust.secret_key(tmp_path) == key
    path.chmod(0o644)                       # readable by others: anyone could sign modules
    with pytest.warns(cache_trust.CacheWarning, match="not a private key file"):
        replaced = cache_trust.secret_key(tmp_path)
    assert replaced != key and stat.S_IMODE(path.stat().st_mode) == 0o600


def test_signatures_bind_content_name_and_kind():
    key = bytes(range(32))
    mac = cache_trust.signature(key, "module", "a", b"x = 1\n")
    assert cache_trust.same_signature(mac, cache_trust.signature(key, "module", "a", b"x = 1\n"))
    for other in (cache_trust.signature(key, "module", "a", b"x = 1\n\n"),
                  cache_trust.signature(key, "module", "b", b"x = 1\n"),
                  cache_trust.signature(key, "code", "a", b"x = 1\n"),
                  cache_trust.signature(bytes(32), "module", "a", b"x = 1\n")):
        assert not cache_trust.same_signature(mac, other)


# ---- numba cache directories -----------------------------------------------------------------------------

def test_numba_in_tree_cache_is_trusted_as_far_as_its_sources(tmp_path):
    source_dir = tmp_path / "pkg"
    pycache = source_dir / "__pycache__"
    pycache.mkdir(parents=True)
    source = source_dir / "kernel.py"
    source.write_text("")
    source_dir.chmod(0o755)
    pycache.chmod(0o755)
    assert numba_cache.cache_directory_problem(pycache, source) is None
    pycache.chmod(0o777)                    # anyone may plant pickles the sources would not allow
    assert "writable by users who cannot write" in numba_cache.cache_directory_problem(pycache, source)
    source_dir.chmod(0o775)                 # umask 002: group-writable sources, same group
    pycache.chmod(0o775)
    assert numba_cache.cache_directory_problem(pycache, source) is None
    elsewhere = tmp_path / "numba_cache_dir"   # NUMBA_CACHE_DIR and the like: must be private
    elsewhere.mkdir(mode=0o775)
    elsewhere.chmod(0o775)
    assert "writable by its group" in numba_cache.cache_directory_problem(elsewhere, source)
    elsewhere.chmod(0o700)
    assert numba_cache.cache_directory_problem(elsewhere, source) is None


def test_a_numba_cache_dir_others_may_write_is_refused_below_it(tmp_path, monkeypatch):
    """NUMBA_CACHE_DIR itself writable by others (numba's subdirectory below it private):
    others could rename that subdirectory away and put theirs there, so it is refused too; a
    private NUMBA_CACHE_DIR is trusted, and so is a sticky shared directory above it."""
    source = tmp_path / "kernel.py"
    source.write_text("")
    root = tmp_path / "numba_cache"
    below = root / "kernels_0123"
    below.mkdir(parents=True)
    below.chmod(0o755)
    root.chmod(0o777)
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(root))
    problem = numba_cache.cache_directory_problem(below, source)
    assert problem is not None and "NUMBA_CACHE_DIR must be private" in problem, problem
    root.chmod(0o1777)                      # sticky, owned by us: others cannot rename our entries
    assert numba_cache.cache_directory_problem(below, source) is None
    root.chmod(0o700)
    assert numba_cache.cache_directory_problem(below, source) is None


def test_an_untrusted_numba_cache_is_neither_read_nor_written(tmp_path):
    """A numba kernel of an mbd_ros-generated module (the guard's scope) whose __pycache__ others
    may write: compiled in memory, with a warning; nothing cached there, and a planted index is
    not read (reading it would raise)."""
    import importlib.util
    source_dir = tmp_path / "src"
    pycache = source_dir / "__pycache__"
    pycache.mkdir(parents=True)
    source_dir.chmod(0o755)
    pycache.chmod(0o777)
    name = "mbd_ros_generated_trust_test"
    path = source_dir / f"{name}.py"
    path.write_text("from numba import njit\n\n@njit(cache=True)\ndef twice(x):\n    return 2 * x\n")
    planted = pycache / f"{name}.twice-3.py{sys.version_info[0]}{sys.version_info[1]}.nbi"
    planted.write_bytes(b"not a pickle")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.warns(cache_trust.CacheWarning, match="compiled in memory"):
        assert module.twice(21) == 42
    assert sorted(p.name for p in pycache.iterdir() if p.suffix in (".nbi", ".nbc")) == [planted.name]
    assert planted.read_bytes() == b"not a pickle"


def _tiny_kernel_module(folder, name):
    """A module of the guard's scope (an mbd_ros-generated name) with one cached numba kernel."""
    import importlib.util
    path = folder / f"{name}.py"
    path.write_text("from numba import njit\n\n@njit(cache=True)\ndef twice(x):\n    return 2 * x\n")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_well_formed_index_of_the_wrong_shape_is_a_miss(tmp_path):
    """Pickles that load but are not numba's (stamp, overloads): dropped, recompiled, warned."""
    import pickle

    import numba
    (tmp_path / "__pycache__").mkdir(mode=0o700)
    first = _tiny_kernel_module(tmp_path, "mbd_ros_generated_shape_test")
    assert first.twice(4) == 8
    [index] = (tmp_path / "__pycache__").glob("*.nbi")
    index.write_bytes(pickle.dumps(numba.__version__) + pickle.dumps(42))
    again = _tiny_kernel_module(tmp_path, "mbd_ros_generated_shape_test")
    with pytest.warns(cache_trust.CacheWarning, match=r"unreadable \(TypeError"):
        assert again.twice(5) == 10
    fresh = _tiny_kernel_module(tmp_path, "mbd_ros_generated_shape_test")
    fresh.twice(6)
    assert fresh.twice.stats.cache_hits and not fresh.twice.stats.cache_misses


def test_a_broken_index_met_while_saving_is_replaced(tmp_path):
    """numba re-reads the index before adding an entry: a broken one no longer fails the save."""
    (tmp_path / "__pycache__").mkdir(mode=0o700)
    module = _tiny_kernel_module(tmp_path, "mbd_ros_generated_save_test")
    assert module.twice(4) == 8
    [index] = (tmp_path / "__pycache__").glob("*.nbi")
    index.write_bytes(b"\x80garbage")
    [(signature, result)] = [(sig, module.twice.overloads[sig]) for sig in module.twice.overloads]
    module.twice._cache.save_overload(signature, result)            # raised UnpicklingError before
    fresh = _tiny_kernel_module(tmp_path, "mbd_ros_generated_save_test")
    assert fresh.twice(7) == 14 and fresh.twice.stats.cache_hits
