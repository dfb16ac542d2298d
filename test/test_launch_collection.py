"""The suite as `colcon test` runs it: under launch_testing's pytest plugin, which every ROS 2
workspace loads, and on the source tree.

The plugin (launch_testing.pytest.hooks) imports each test module from its
`pytest_pycollect_makemodule` hook to look for `generate_test_description`, and lets everything
but a SyntaxError escape. A module-level skip (an oracle such as Pinocchio not installed) then
ended the collection of the whole session: `colcon test` ran 0 tests and reported success.

Each case runs pytest in a child process on a small suite of its own (this directory's conftest.py
and three modules: one importing a missing oracle, one skipping itself, one plain) and reads
the outcome of every test from the JUnit XML report, as `colcon test-result` does. The plugin is
the real launch_testing where it is installed, else a stand-in doing what its hook does.

The last case checks the reason the C-call tests give when the tested source tree lacks the C
extension that a plain `colcon build` put in the install space.
"""
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
MISSING = 'mbd_ros_test_oracle_that_is_not_installed'

SUITE = {
    'test_with_oracle.py': f'''
from conftest import import_oracle
oracle = import_oracle("{MISSING}")

def test_needs_the_oracle():
    assert oracle.value() == 1

def test_does_not_need_it():
    assert sum([1, 2]) == 3
''',
    'test_skips_itself.py': f'''
import pytest
pytest.importorskip("{MISSING}")

def test_never_runs():
    assert False
''',
    'test_plain.py': '''
def test_plain():
    assert [1, 2][::-1] == [2, 1]
''',
}

# What launch_testing's pytest_pycollect_makemodule does with each module (launch_testing
# 3.x: find_launch_test_entrypoint imports it, catching SyntaxError only). Used where
# launch_testing itself is not installed (outside a ROS 2 workspace).
STAND_IN = '''
import importlib.util

def pytest_pycollect_makemodule(module_path, parent):
    spec = importlib.util.spec_from_file_location(module_path.stem, str(module_path))
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except SyntaxError:
        return None
    return None
'''


def launch_testing_installed():
    try:
        import launch_testing.pytest.hooks  # noqa: F401
    except ImportError:
        return False
    return True


def run_suite(tmp_path, ci):
    """{test name: (outcome, message)} of the small suite, run like colcon test runs it."""
    suite = tmp_path / 'suite'
    suite.mkdir()
    shutil.copy(HERE / 'conftest.py', suite / 'conftest.py')
    for name, text in SUITE.items():
        (suite / name).write_text(text)
    env = {k: v for k, v in os.environ.items() if k not in ('CI', 'PYTEST_ADDOPTS')}
    if ci:
        env['CI'] = 'true'
    args = [sys.executable, '-m', 'pytest', '-p', 'no:cacheprovider', '-q',
            f'--junit-xml={tmp_path / "report.xml"}', str(suite)]
    if not launch_testing_installed():
        (tmp_path / 'launch_testing_stand_in.py').write_text(STAND_IN)
        env['PYTHONPATH'] = os.pathsep.join(
            [str(tmp_path)] + [p for p in env.get('PYTHONPATH', '').split(os.pathsep) if p])
        args[3:3] = ['-p', 'launch_testing_stand_in']
    run = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=300)
    report = tmp_path / 'report.xml'
    assert report.exists(), f'pytest wrote no report (exit {run.returncode}):\n{run.stdout}'
    outcomes = {}
    for case in ElementTree.parse(report).getroot().iter('testcase'):
        results = [child for child in case if child.tag in ('skipped', 'failure', 'error')]
        outcome = results[0].tag if results else 'passed'
        message = results[0].get('message', '') if results else ''
        outcomes[case.get('name')] = (outcome, message)
    return outcomes, run


def test_a_missing_oracle_skips_only_the_tests_that_use_it(tmp_path):
    outcomes, run = run_suite(tmp_path, ci=False)
    context = f'{outcomes}\n{run.stdout[-3000:]}'
    assert outcomes.get('test_plain') == ('passed', ''), context
    assert outcomes.get('test_does_not_need_it') == ('passed', ''), context
    outcome, message = outcomes.get('test_needs_the_oracle', ('missing', ''))
    assert outcome == 'skipped' and MISSING in message, context
    # the module that skips itself is reported as one skip, and only that
    assert 'test_never_runs' not in outcomes, context
    assert sum(1 for o, _ in outcomes.values() if o == 'skipped') == 2, context
    assert run.returncode == 0, context


def test_in_ci_a_missing_oracle_fails_the_tests_that_use_it(tmp_path):
    outcomes, run = run_suite(tmp_path, ci=True)
    context = f'{outcomes}\n{run.stdout[-3000:]}'
    assert outcomes.get('test_plain') == ('passed', ''), context
    assert outcomes.get('test_does_not_need_it') == ('passed', ''), context
    outcome, message = outcomes.get('test_needs_the_oracle', ('missing', ''))
    assert outcome == 'failure' and 'CI:' in message and MISSING in message, context
    assert run.returncode == 1, context


def test_the_c_extension_reason_names_the_install_that_has_it(tmp_path, monkeypatch):
    """`colcon test` runs the source tree; a plain `colcon build` puts the C extension in the
    install space only. The skip (CI: failure) reason must say so, not 'no C compiler'."""
    from importlib.machinery import EXTENSION_SUFFIXES

    from conftest import _built_fastcall_dirs
    source = tmp_path / 'src' / 'mbd_ros' / 'fastcall'
    installed = tmp_path / 'install' / 'mbd_ros' / 'fastcall'
    source.mkdir(parents=True)
    installed.mkdir(parents=True)
    (installed / f'_fastcall{EXTENSION_SUFFIXES[0]}').write_bytes(b'')
    (source / '_fastcall.c').write_text('')      # sources only, as a plain colcon build leaves
    monkeypatch.setattr(sys, 'path', [str(tmp_path / 'src'), str(tmp_path / 'install')])
    assert _built_fastcall_dirs(exclude=source.resolve()) == [installed.resolve()]
    assert _built_fastcall_dirs(exclude=installed.resolve()) == []
