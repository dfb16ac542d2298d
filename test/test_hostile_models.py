"""Hostile YAML model files (closures, forces, flexible links), modal data and force callbacks:
each ends in a ModelError (or, for a callback's result, a ValueError) naming the source and the
field, in bounded time and memory, with a short message. Cases that an unbounded reader would
turn into minutes or gigabytes run in a child Python with an outer time limit and an
address-space limit, so a regression fails instead of taking the test run down."""
from __future__ import annotations

import subprocess
import sys
import textwrap
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest
import yaml

import mbd_ros
from flexible_models import lumped_modal_data, pendulum_urdf

REPO = Path(__file__).resolve().parent.parent
FOURBAR = str(REPO / "urdf" / "fourbar.urdf")
ARM_URDF = str(REPO / "urdf" / "flexible_arm.urdf")
ARM_YAML = REPO / "config" / "flexible_arm.yaml"
MESSAGE_LIMIT = 2000          # ModelError's cap; a message quotes inputs in excerpts


def alias_bomb(section, entry_field, levels=9, fan=10):
    """A 'billion laughs': `levels` anchors of `fan` aliases each (10^9 'lol's in ~600 bytes),
    the last one used as `entry_field` of the section's first entry."""
    lines = ["x0: &x0 [" + ", ".join(["lol"] * fan) + "]"]
    lines += [f"x{i}: &x{i} [" + ", ".join([f"*x{i - 1}"] * fan) + "]" for i in range(1, levels)]
    entry = (f"{{name: c, type: spherical, parent: coupler, child: rocker, "
             f"{entry_field}: *x{levels - 1}}}")
    if entry_field == "type":
        entry = f"{{name: c, type: *x{levels - 1}, parent: coupler, child: rocker}}"
    return "\n".join(lines) + f"\n{section}:\n  - {entry}\n"


def run_python(script, timeout=120, memory=3 << 30):
    """stdout of `script` run in a child Python limited to `memory` bytes of address space;
    a child still running after `timeout` s is killed and fails the test."""
    prelude = (f"import resource, sys\n"
               f"resource.setrlimit(resource.RLIMIT_AS, ({memory}, {memory}))\n"
               f"sys.path.insert(0, {str(REPO / 'test')!r})\n")
    try:
        proc = subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(script)],
                              capture_output=True, text=True, timeout=timeout, cwd=str(REPO))
    except subprocess.TimeoutExpired:
        pytest.fail(f"the reader did not end within {timeout} s (unbounded)")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def check(exc, *fragments):
    message = str(exc)
    assert isinstance(exc, mbd_ros.ModelError), type(exc)
    for fragment in fragments:
        assert fragment in message, f"the message does not say {fragment!r}: {message[:500]}"
    assert len(message) <= MESSAGE_LIMIT, len(message)


# ---- YAML alias bombs ----------------------------------------------------------------------------

@pytest.mark.parametrize("option, section, field, source", [
    ("forces", "forces", "type", "<forces text>"),
    ("closures", "closures", "type", "<closures text>"),
    ("closures", "closures", "axis", "<closures text>"),
    ("flexible", "flexible_links", "type", "<flexible text>"),
])
def test_alias_bombs_are_refused_before_expansion(option, section, field, source):
    text = alias_bomb(section, field)
    urdf = ARM_URDF if option == "flexible" else FOURBAR
    out = run_python(f"""
        import time, resource
        import mbd_ros
        t0 = time.monotonic()
        try:
            mbd_ros.load({urdf!r}, **{{{option!r}: {text!r}}})
        except mbd_ros.ModelError as exc:
            print("MODEL_ERROR", round(time.monotonic() - t0, 2), len(str(exc)), str(exc)[:300])
        except Exception as exc:
            print("OTHER", type(exc).__name__, str(exc)[:300])
        else:
            print("LOADED")
    """)
    assert out.startswith("MODEL_ERROR"), out
    _, elapsed, length, message = out.split(" ", 3)
    assert source in message and "alias" in message, message
    assert int(length) <= MESSAGE_LIMIT
    # ~600 bytes of YAML: parsed in milliseconds; 30 s is the loaded machine's margin
    assert float(elapsed) < 30.0, elapsed


def test_alias_bomb_in_a_file_names_the_file(tmp_path):
    path = tmp_path / "bomb.yaml"
    path.write_text(alias_bomb("forces", "type"))
    out = run_python(f"""
        import mbd_ros
        try:
            mbd_ros.load({FOURBAR!r}, forces={str(path)!r})
        except mbd_ros.ModelError as exc:
            print("MODEL_ERROR", str(exc)[:300])
    """)
    assert out.startswith("MODEL_ERROR") and str(path) in out and "alias" in out, out


def test_a_recursive_alias_is_refused():
    with pytest.raises(mbd_ros.ModelError) as info:
        mbd_ros.load(FOURBAR, closures="closures: &a [*a]\n")
    check(info.value, "<closures text>", "recursive")


def test_aliases_below_the_cap_still_work():
    """Guard: anchors and merge keys of a real file are read (two forces sharing parameters)."""
    text = textwrap.dedent("""
        spring: &spring {type: joint_spring, stiffness: 3.0, damping: 0.1}
        forces:
          - {<<: *spring, name: a, joint: crank_joint}
          - {<<: *spring, name: b, joint: rocker_joint, stiffness: 5.0}
    """)
    robot = mbd_ros.load(FOURBAR, forces={"forces": yaml.safe_load(text)["forces"]})
    from_text = mbd_ros.load(FOURBAR, forces="\n".join(l for l in text.splitlines()))
    assert from_text.force_element_names == robot.force_element_names == ["a", "b"]
    values = from_text.force_element_values(from_text.neutral(), np.zeros(from_text.nv))
    assert np.allclose(-values.force, [3.0, 5.0] * values.length)   # joint springs at q0 = 0


def test_a_dict_with_shared_references_is_quoted_in_bounded_time():
    """A Python dict source with a 10^9-item shared-reference structure: the message quotes an
    excerpt (the readers never stringify the value whole)."""
    out = run_python(f"""
        import time
        import mbd_ros
        bomb = ["lol"] * 10
        for _ in range(8):
            bomb = [bomb] * 10
        cases = [("forces", {{"forces": [{{"name": "c", "type": bomb}}]}}),
                 ("forces", {{"forces": [{{"name": "c", "type": "joint_spring", "joint": bomb,
                                          "stiffness": 1.0}}]}}),
                 ("forces", {{"forces": [{{"name": "c", "type": "spring_damper", "parent": bomb,
                                          "parent_point": [0, 0, 0], "child": "rocker",
                                          "child_point": [0, 0, 0], "stiffness": 1.0,
                                          "rest_length": 0.1}}]}}),
                 ("closures", {{"closures": [{{"name": "c", "type": bomb, "parent": "coupler",
                                              "child": "rocker"}}]}}),
                 ("flexible", {{"flexible_links": [{{"link": bomb}}]}})]
        for option, source in cases:
            urdf = {ARM_URDF!r} if option == "flexible" else {FOURBAR!r}
            t0 = time.monotonic()
            try:
                mbd_ros.load(urdf, **{{option: source}})
            except mbd_ros.ModelError as exc:
                print("MODEL_ERROR", round(time.monotonic() - t0, 2), len(str(exc)),
                      str(exc)[:200].replace(chr(10), " "))
    """)
    lines = out.splitlines()
    fields = ["field 'type'", "field 'joint'", "field 'parent'", "field 'type'", "field 'link'"]
    sources = ["<forces dict>"] * 3 + ["<closures dict>", "<flexible dict>"]
    assert len(lines) == len(fields), out
    for line, field, source in zip(lines, fields, sources):
        _, elapsed, length, message = line.split(" ", 3)
        assert field in message and source in message, message
        assert int(length) <= MESSAGE_LIMIT
        assert float(elapsed) < 10.0     # milliseconds; stringifying it took minutes


@pytest.mark.parametrize("option", ["closures", "forces", "flexible"])
def test_huge_integer_keys_and_values_in_a_dict(option):
    """Integers beyond Python's 4300-digit str() limit: described by their size (str() of one
    raises ValueError)."""
    huge = 10 ** 5000
    source = {"closures": {"closures": [{"name": "c", "type": "spherical", "parent": "coupler",
                                         "child": "rocker", huge: 1}]},
              "forces": {"forces": [{"name": "c", "type": "joint_spring", "joint": "crank_joint",
                                     "stiffness": 1.0, huge: 1}]},
              "flexible": {huge: 1}}[option]
    with pytest.raises(mbd_ros.ModelError) as info:
        mbd_ros.load(ARM_URDF if option == "flexible" else FOURBAR, **{option: source})
    check(info.value, f"<{option} dict>", "digits")


# ---- the flexible_links reader goes through the capped YAML reader -------------------------------

@pytest.mark.parametrize("text, fragments", [
    ("flexible_links: " + "[" * 100_000 + "]" * 100_000, ["<flexible text>", "nesting"]),
    ("flexible_links: []\nflexible_links: []\n",
     ["<flexible text>", "duplicate key 'flexible_links'"]),
    (b"flexible_links:\n  - link: \xff\xfe\n", ["<flexible text>", "UTF-8"]),
])
def test_flexible_yaml_text_is_read_with_the_caps(text, fragments):
    with pytest.raises(mbd_ros.ModelError) as info:
        mbd_ros.load(ARM_URDF, flexible=text)
    check(info.value, *fragments)


def test_flexible_yaml_file_with_invalid_utf8_or_duplicates(tmp_path):
    data = ARM_YAML.read_text()
    path = tmp_path / "arm.yaml"
    path.write_text(data + "\nclosures: []\nclosures: []\n")
    with pytest.raises(mbd_ros.ModelError) as info:
        mbd_ros.load(ARM_URDF, flexible=str(path))
    check(info.value, str(path), "duplicate key 'closures'")
    path.write_bytes(data.encode() + b"\n# \xc3\x28\n")
    with pytest.raises(mbd_ros.ModelError) as info:
        mbd_ros.load(ARM_URDF, flexible=str(path))
    check(info.value, str(path), "UTF-8")


# ---- beam data -----------------------------------------------------------------------------------

def arm_data():
    return yaml.safe_load(ARM_YAML.read_text())


def test_beam_elements_are_capped():
    from mbd_ros.inputs.flexible import MAX_BEAM_ELEMENTS
    out = run_python(f"""
        import time, yaml
        import mbd_ros
        data = yaml.safe_load(open({str(ARM_YAML)!r}).read())
        for elements in ({MAX_BEAM_ELEMENTS + 1}, 10 ** 9):
            data["flexible_links"][0]["beam"]["elements"] = elements
            t0 = time.monotonic()
            try:
                mbd_ros.load({ARM_URDF!r}, flexible=data)
            except mbd_ros.ModelError as exc:
                print("MODEL_ERROR", round(time.monotonic() - t0, 2), str(exc)[:300])
            else:
                print("LOADED")
    """)
    for line in out.splitlines():
        assert line.startswith("MODEL_ERROR"), out
        _, elapsed, message = line.split(" ", 2)
        assert "field 'beam.elements'" in message and str(MAX_BEAM_ELEMENTS) in message, message
        assert float(elapsed) < 30.0     # refused before any FE work


def test_absurd_mode_counts_name_the_field():
    """modes: 10**5000 (a YAML integer of 5000 digits is a dict value here): str() of it raised
    ValueError inside the message."""
    for modes in (10 ** 5000, 10_001):
        data = arm_data()
        data["flexible_links"][0]["modes"] = modes
        with pytest.raises(mbd_ros.ModelError) as info:
            mbd_ros.load(ARM_URDF, flexible=data)
        check(info.value, "<flexible dict>: flexible link 0 ('forearm'): field 'modes'")


@pytest.mark.parametrize("field, value, named", [
    ("length", 1e-300, "'beam.length'"),
    ("density", 1e-300, "'beam.density'"),
    ("length", 1e300, "'beam.length'"),
    ("area", 1e300, "'beam.area'"),
    ("Iy", 1e-300, "'beam.Iy'"),
    ("J", 1e300, "'beam.J'"),
])
def test_degenerate_beam_data_name_the_field(field, value, named):
    data = arm_data()
    data["flexible_links"][0]["beam"][field] = value
    with pytest.raises(mbd_ros.ModelError) as info:
        mbd_ros.load(ARM_URDF, flexible=data)
    check(info.value, "<flexible dict>: flexible link 0 ('forearm')", named)


# ---- modal data (.npz) ---------------------------------------------------------------------------

def modal_arrays(tmp_path):
    positions, masses, shapes, K = lumped_modal_data(tmp_path / "unused.npz", 0.5, 2e-4, 2e-10,
                                                     6, 3)
    return dict(node_positions=positions, node_masses=masses, mode_shapes=shapes, K_ff=K)


def write_npz(path, arrays, raw=()):
    """np.savez of `arrays`, plus members written by hand: (name, .npy header dict, number of
    zero bytes of data streamed after it) (a huge array without holding it in memory)."""
    np.savez(path, **arrays)
    with zipfile.ZipFile(path, "a", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, header, size in raw:
            with archive.open(name + ".npy", "w", force_zip64=True) as stream:
                np.lib.format.write_array_header_1_0(stream, header)
                chunk = bytes(1 << 24)
                for start in range(0, size, len(chunk)):
                    stream.write(chunk[:min(len(chunk), size - start)])
    return path


def flexible_modal(path, modes=None):
    entry = {"link": "beam", "modal_data": str(path)}
    if modes is not None:
        entry["modes"] = modes
    return {"flexible_links": [entry]}


def test_an_unused_huge_member_is_never_read(tmp_path):
    """A ~1 MB .npz holding an unused 1 GiB array: the load reads only the arrays it uses. The
    second load runs with its address space capped 512 MiB above what the process already
    uses: reading the unused member cannot fit in it (the same file without that member is
    loaded first, so nothing else is left to compile or import)."""
    arrays = modal_arrays(tmp_path)
    small = write_npz(tmp_path / "small.npz", arrays)
    big = write_npz(tmp_path / "big.npz", arrays,
                    raw=[("unused", {"descr": "<f8", "fortran_order": False, "shape": (1 << 27,)},
                          1 << 30)])
    assert big.stat().st_size < 5 << 20
    out = run_python(f"""
        import resource, warnings
        warnings.simplefilter("ignore")
        import mbd_ros
        from flexible_models import pendulum_urdf
        urdf = pendulum_urdf(0.5)
        mbd_ros.load(urdf, flexible={flexible_modal(small)!r})
        with open("/proc/self/status") as status:
            used = [int(l.split()[1]) * 1024 for l in status if l.startswith("VmSize:")][0]
        resource.setrlimit(resource.RLIMIT_AS, (used + (512 << 20), used + (512 << 20)))
        try:
            robot = mbd_ros.load(urdf, flexible={flexible_modal(big)!r})
        except (mbd_ros.ModelError, MemoryError) as exc:
            print("FAILED", type(exc).__name__, str(exc)[:200])
        else:
            print("LOADED", robot.elastic_names)
    """, memory=6 << 30)
    assert out.startswith("LOADED"), f"the unused 1 GiB member was read: {out}"


@pytest.mark.parametrize("member, header, words", [
    ("node_masses", {"descr": "<f8", "fortran_order": False, "shape": (1 << 30,)},
     ["node_masses", "must have shape (6,)"]),
    ("mode_shapes", {"descr": "<f8", "fortran_order": False, "shape": (10 ** 6, 6, 6)},
     ["mode_shapes", "modes"]),
    ("node_positions", {"descr": "<f8", "fortran_order": False, "shape": (10 ** 9, 3)},
     ["node_positions", "nodes"]),
    ("K_ff", {"descr": "|O", "fortran_order": False, "shape": (3, 3)}, ["K_ff", "numeric"]),
])
def test_member_headers_are_checked_before_reading(tmp_path, member, header, words):
    """A member whose header announces a huge shape (its data never written) or pickled
    objects: refused from the header, naming the array."""
    arrays = modal_arrays(tmp_path)
    arrays.pop(member)
    path = write_npz(tmp_path / "lie.npz", arrays, raw=[(member, header, 64)])
    t0 = time.perf_counter()
    with pytest.raises(mbd_ros.ModelError) as info:
        mbd_ros.load(pendulum_urdf(0.5), flexible=flexible_modal(path))
    check(info.value, "flexible link 0 ('beam')", str(path), *words)
    assert time.perf_counter() - t0 < 30.0


def test_modal_data_without_modes(tmp_path):
    arrays = modal_arrays(tmp_path)
    arrays["mode_shapes"] = np.zeros((0, 6, 6))
    arrays["K_ff"] = np.zeros((0, 0))
    path = write_npz(tmp_path / "none.npz", arrays)
    with pytest.raises(mbd_ros.ModelError) as info:
        mbd_ros.load(pendulum_urdf(0.5), flexible=flexible_modal(path))
    check(info.value, "flexible link 0 ('beam')", "mode_shapes", "no modes")


def test_modal_data_with_a_pickled_member(tmp_path):
    arrays = modal_arrays(tmp_path)
    arrays["K_ff"] = np.array([{"a": 1}], dtype=object)
    path = tmp_path / "pickled.npz"
    np.savez(path, **arrays)
    with pytest.raises(mbd_ros.ModelError) as info:
        mbd_ros.load(pendulum_urdf(0.5), flexible=flexible_modal(path))
    check(info.value, "K_ff", "numeric")


# ---- forces: the source is named; callbacks' results are quoted in excerpts ----------------------

@pytest.mark.parametrize("source, named", [
    ("forces: [\n", "<forces text>: malformed YAML"),
    ("forces:\n  - {name: s, type: joint_spring, joint: crank_joint, stiffness: 1}\n  - {a: 1, a: 2}\n",
     "<forces text>: duplicate key 'a'"),
    (b"forces: [\xff]\n", "<forces text>: not valid UTF-8"),
    ("/nonexistent/forces.yaml", "forces file not found: /nonexistent/forces.yaml"),
])
def test_forces_errors_name_the_forces_source(source, named):
    with pytest.raises(mbd_ros.ModelError) as info:
        mbd_ros.load(FOURBAR, forces=source)
    check(info.value, named)
    assert "closure" not in str(info.value)


def test_forces_errors_name_the_forces_file(tmp_path):
    path = tmp_path / "springs.yaml"
    path.write_text("forces: [\n")
    with pytest.raises(mbd_ros.ModelError) as info:
        mbd_ros.load(FOURBAR, forces=str(path))
    check(info.value, f"{path}: malformed YAML")


def test_too_many_force_elements():
    from mbd_ros.inputs.forces import MAX_FORCES
    entries = [{"name": f"s{i}", "type": "joint_spring", "joint": "crank_joint", "stiffness": 1.0}
               for i in range(MAX_FORCES + 1)]
    with pytest.raises(mbd_ros.ModelError) as info:
        mbd_ros.load(FOURBAR, forces={"forces": entries})
    check(info.value, "<forces dict>", f"{MAX_FORCES + 1} entries")


@pytest.mark.parametrize("result", [
    list(range(10 ** 7)),                               # a 10^7-entry list: ~80 MB of repr
    "x" * 10 ** 7,                                      # not numbers at all
    {"coupler": list(range(10 ** 7))},                  # a wrench of the wrong size
])
def test_a_callbacks_wrong_result_is_quoted_in_an_excerpt(result):
    robot = mbd_ros.load(FOURBAR)
    robot.add_force(lambda t, q, v: result)
    t0 = time.perf_counter()
    with pytest.raises(ValueError) as info:
        robot.forward_dynamics(np.zeros(robot.nq), np.zeros(robot.nv), np.zeros(robot.nv))
    message = str(info.value)
    assert "force callback <lambda>" in message and len(message) < MESSAGE_LIMIT, len(message)
    assert time.perf_counter() - t0 < 30.0


# ---- unused fields of the extension joints -------------------------------------------------------

def two_links(joint_type, extra):
    return (f'<robot name="r"><link name="a"/><link name="b"><inertial><mass value="1"/>'
            f'<inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>'
            f'<joint name="sleeve" type="{joint_type}"><parent link="a"/><child link="b"/>'
            f'{extra}</joint></robot>')


@pytest.mark.parametrize("joint_type, extra, field", [
    ("cylindrical", '<axis xyz="0 0 1"/><axis2 xyz="1 0 0"/>', "<axis2>"),
    ("helical", '<axis xyz="0 0 1" pitch="0.01"/><axis2 xyz="1 0 0"/>', "<axis2>"),
    ("revolute", '<axis xyz="0 0 1"/><axis2 xyz="1 0 0"/>', "<axis2>"),
    ("spherical", '<axis2 xyz="1 0 0"/>', "<axis2>"),
    ("cylindrical", '<axis xyz="0 0 1" pitch="0.01"/>', "pitch"),
    ("universal", '<axis xyz="0 0 1" pitch="0.01"/><axis2 xyz="1 0 0"/>', "pitch"),
    ("revolute", '<axis xyz="0 0 1" pitch="0.01"/>', "pitch"),
])
def test_unused_extension_fields_are_refused(joint_type, extra, field):
    with pytest.raises(mbd_ros.ModelError) as info:
        mbd_ros.load(two_links(joint_type, extra))
    check(info.value, "<urdf text>: joint 'sleeve'", field, f"not used by a {joint_type} joint")


def test_used_extension_fields_still_load():
    """Guard: the same fields where they are used."""
    assert mbd_ros.load(two_links("universal", '<axis xyz="0 0 1"/><axis2 xyz="1 0 0"/>')).nv == 2
    assert mbd_ros.load(two_links("helical", '<axis xyz="0 0 1" pitch="0.01"/>')).nv == 1
    assert mbd_ros.load(two_links("cylindrical", '<axis xyz="0 0 1"/>')).nv == 2


# ---- URDF numbers and sizes ----------------------------------------------------------------------

INERTIAL = '<inertial><mass value="{m}"/><inertia ixx="{i}" ixy="0" ixz="0" iyy="{i}" iyz="0" izz="{i}"/></inertial>'


def urdf(mass="1", inertia="0.1", joint_extra='<axis xyz="0 0 1"/>', joint_type="revolute"):
    return (f'<robot name="r"><link name="a"/><link name="b">{INERTIAL.format(m=mass, i=inertia)}</link>'
            f'<joint name="j" type="{joint_type}"><parent link="a"/><child link="b"/>{joint_extra}</joint>'
            '</robot>')


@pytest.mark.parametrize("text, fragments", [
    (urdf(inertia="1e308"), ["link 'b'", "<inertia>", "1e+100"]),           # was LinAlgError
    (urdf(mass="1e308"), ["link 'b'", "<mass>"]),
    (urdf(joint_extra='<origin xyz="1e300 0 0"/><axis xyz="0 0 1"/>'), ["joint 'j'", "<origin xyz>"]),
    (urdf(joint_extra='<axis xyz="0 0 1" pitch="1e300"/>', joint_type="helical"),
     ["joint 'j'", "<axis pitch>"]),
    (urdf(joint_extra='<axis xyz="0 0 1"/><dynamics damping="0.1" friction="sticky"/>'),
     ["joint 'j'", "<dynamics>", "numbers", "sticky"]),                       # was a bare ValueError
    (urdf(joint_extra='<axis xyz="0 0 1"/><dynamics damping="1e200"/>'), ["joint 'j'", "<dynamics>"]),
])
def test_absurd_urdf_numbers_name_the_element(text, fragments):
    with pytest.raises(mbd_ros.ModelError) as info:
        mbd_ros.load(text)
    check(info.value, "<urdf text>", *fragments)


def test_an_axis_of_huge_components_keeps_its_direction():
    """<axis xyz="1e308 1e308 0">: its norm overflowed to inf and the axis became zero (a
    silently singular joint); it is the unit axis (1, 1, 0)/sqrt(2)."""
    robot = mbd_ros.load(urdf(joint_extra='<axis xyz="1e308 1e308 0"/>'))
    reference = mbd_ros.load(urdf(joint_extra='<axis xyz="1 1 0"/>'))
    q, v, tau = np.array([0.3]), np.array([0.2]), np.array([0.1])
    np.testing.assert_array_equal(robot.forward_dynamics(q, v, tau),
                                  reference.forward_dynamics(q, v, tau))


def test_too_many_links_are_refused_before_reading_them():
    from mbd_ros.inputs.urdf import MAX_LINKS
    parts = [f'<link name="l{i}"/>' for i in range(MAX_LINKS + 1)]
    t0 = time.perf_counter()
    with pytest.raises(mbd_ros.ModelError) as info:
        mbd_ros.load('<robot name="r">' + "".join(parts) + "</robot>")
    check(info.value, "<urdf text>", f"{MAX_LINKS + 1} links")
    assert time.perf_counter() - t0 < 30.0      # parsing only; reading each link took ~1 ms


def test_an_oversized_urdf_file_is_refused_before_reading(tmp_path):
    from mbd_ros.inputs.urdf import MAX_URDF_BYTES
    path = tmp_path / "big.urdf"
    with open(path, "w") as stream:
        stream.write('<robot name="r"><link name="a"/>')
        chunk = "<!-- padding -->" * 4096
        for _ in range(MAX_URDF_BYTES // len(chunk) + 1):
            stream.write(chunk)
        stream.write("</robot>")
    with pytest.raises(mbd_ros.ModelError) as info:
        mbd_ros.load(str(path))
    check(info.value, str(path), str(MAX_URDF_BYTES))


def test_xinclude_and_processing_instructions_are_inert(tmp_path):
    """lxml never processes XInclude unless asked: the include is an unknown element, ignored."""
    secret = tmp_path / "secret.urdf"
    secret.write_text('<link name="leaked"/>')
    text = (f'<?xml-stylesheet href="x.xsl"?><robot name="r" xmlns:xi="http://www.w3.org/2001/XInclude">'
            f'<xi:include href="{secret}"/><link name="a"/></robot>')
    assert mbd_ros.load(text).link_names == ["a"]


@pytest.mark.parametrize("option, source, field", [
    ("closures", {"closures": [{"name": "c", "type": "distance", "parent": "coupler",
                                "child": "rocker", "length": 1e300}]}, "field 'length'"),
    ("closures", {"closures": [{"name": "c", "type": "spherical", "parent": "coupler",
                                "child": "rocker", "parent_origin": {"xyz": [1e200, 0, 0]}}]},
     "field 'parent_origin.xyz[0]'"),
    ("forces", {"forces": [{"name": "s", "type": "joint_spring", "joint": "crank_joint",
                            "stiffness": 1e300}]}, "field 'stiffness'"),
])
def test_absurd_yaml_numbers_name_the_field(option, source, field):
    """Finite but absurd numbers (1e300 N/m) overflowed inside the dynamics at the first call;
    they are refused at load like the URDF's."""
    with pytest.raises(mbd_ros.ModelError) as info:
        mbd_ros.load(FOURBAR, **{option: source})
    check(info.value, f"<{option} dict>", field, "1e+100")


@pytest.mark.parametrize("text, fragment", [
    ('<robot name="r"><link name="a"/>' + "<x>" * 100_000 + "</x>" * 100_000 + "</robot>",
     "depth"),
    ('<robot name="r"><link name="' + "a" * 12_000_000 + '"/></robot>', "limit"),
])
def test_deep_or_huge_xml_is_refused_by_the_parser(text, fragment):
    """Guard: libxml2's limits (depth 256, 10 MB per attribute or text) stay on (huge_tree
    off): a ModelError in milliseconds, not a 12 MB link name."""
    t0 = time.perf_counter()
    with pytest.raises(mbd_ros.ModelError) as info:
        mbd_ros.load(text)
    check(info.value, "<urdf text>: malformed XML", fragment)
    assert time.perf_counter() - t0 < 30.0


def test_a_path_that_is_no_regular_file_is_named_so_and_never_opened(tmp_path):
    """A URDF, closure, forces or flexible-link path that is a FIFO, a directory or a device
    is refused saying what it is (it said "not found"); a FIFO is never opened (open() would
    wait for a writer: the alarm turns such a hang into a failure)."""
    import os
    import signal
    fifo, folder = tmp_path / "robot.urdf", tmp_path / "closures.yaml"
    os.mkfifo(fifo)
    folder.mkdir()

    def hung(signum, frame):
        raise TimeoutError("a FIFO was opened")
    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(30)
    try:
        for path, what in ((fifo, "is a FIFO (named pipe), not a regular file"),
                           (folder, "is a directory, not a file"),
                           ("/dev/null", "is a device or socket, not a regular file")):
            with pytest.raises(mbd_ros.ModelError) as info:
                mbd_ros.load(str(path))
            check(info.value, f"URDF file {what}: {path}")
            for key, noun in (("closures", "closure file"), ("forces", "forces file"),
                              ("flexible", "flexible-link file")):
                with pytest.raises(mbd_ros.ModelError) as info:
                    mbd_ros.load(FOURBAR, **{key: str(path)})
                check(info.value, f"{noun} {what}: {path}")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
