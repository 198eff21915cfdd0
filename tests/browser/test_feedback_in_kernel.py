"""A student's failing check shows its message in the notebook, not a traceback.

Run in a real kernel (as JupyterLab would run the cells); the browser test shows the same on
screen.
"""

import subprocess
import sys

import nbformat
from nbclient import NotebookClient

from grader.checks.notebook import MARK

CELLS = [
    "import torch\nfrom grader.checks import expect_shape",
    'expect_shape(torch.zeros(3, 3), (4, 4), "causal_mask(4)")',
    'm = torch.ones(2, 2)\nassert not m.triu(1).any(), "above the diagonal should be False"',
    'def helper():\n    assert False, "raised inside a function"\n\nhelper()',
    "assert 1 == 2",
    'print("causal_mask looks right")',
]


def run(cells):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    NotebookClient(nb, timeout=120, allow_errors=True, kernel_name="python3",
                   extra_arguments=["--IPKernelApp.log_level=ERROR"]).execute()
    return [c.outputs for c in nb.cells]


def error(outputs):
    errors = [o for o in outputs if o.output_type == "error"]
    assert len(errors) == 1, outputs
    return errors[0]


def test_failing_checks_show_their_message_and_still_fail():
    outputs = run(CELLS)
    assert not any(o.output_type == "error" for o in outputs[0])

    check = error(outputs[1])  # a CheckFailure: one line, the message
    assert check.ename == "CheckFailure"
    assert len(check.traceback) == 1
    assert f"{MARK} causal_mask(4) has shape (3, 3), expected (4, 4)" in check.traceback[0]

    plain = error(outputs[2])  # an assert with a message in the test cell itself
    assert plain.ename == "AssertionError"
    assert len(plain.traceback) == 1
    assert f"{MARK} above the diagonal should be False" in plain.traceback[0]

    # Inside the student's own function, or without a message: the full traceback stays.
    inner = error(outputs[3])
    assert len(inner.traceback) > 1 and "helper" in "".join(inner.traceback)
    bare = error(outputs[4])
    assert len(bare.traceback) > 1 and MARK not in "".join(bare.traceback)

    assert outputs[5][0].text.strip() == "causal_mask looks right"


def test_nothing_is_registered_outside_ipython():
    code = ("import sys, grader.checks\n"
            "assert 'IPython' not in sys.modules, 'grader.checks imported IPython'\n"
            "from grader.checks.notebook import show_failures_briefly\n"
            "assert show_failures_briefly() is False")
    subprocess.run([sys.executable, "-c", code], check=True)
