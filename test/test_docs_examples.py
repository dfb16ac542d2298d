"""The worked examples of the docs run and their own checks hold: the operational-space
controller of docs/controllers.md (the tip reaches its target, the null-space torque does not
act on the task), the MPC linearisation of docs/derivatives.md (against the nonlinear step) and
the identification example of docs/identification.md (prediction error against the "real"
robot). A doc example that no longer runs, or whose check fails, fails here."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = {"controllers.md": 1, "derivatives.md": 1, "identification.md": 1}


def complete_programs(document):
    """The ```python blocks of docs/<document> that are whole programs (they import mbd_ros)."""
    text = (ROOT / "docs" / document).read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    return [block for block in blocks if "import mbd_ros" in block]


@pytest.mark.parametrize("document", sorted(EXAMPLES))
def test_example_runs_and_checks_hold(document, monkeypatch, capsys):
    programs = complete_programs(document)
    assert len(programs) == EXAMPLES[document], f"docs/{document}: the examples changed"
    monkeypatch.chdir(ROOT)   # the examples use paths relative to the repository
    for program in programs:
        assert "assert " in program, f"docs/{document}: an example without a check"
        exec(compile(program, f"docs/{document}", "exec"), {"__name__": "__doc_example__"})
