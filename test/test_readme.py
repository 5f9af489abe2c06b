"""Every ```python snippet of README.md runs as written (each in a fresh interpreter, cwd = repository root)."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import pkm_control

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"


def python_blocks():
    """(first line number, code) of every ```python block of the README."""
    text = README.read_text()
    return [(text.count("\n", 0, m.start(1)) + 1, m.group(1))
            for m in re.finditer(r"^```python\n(.*?)^```", text, re.MULTILINE | re.DOTALL)]


def test_readme_has_python_snippets():
    assert python_blocks(), "no ```python block found in README.md"


@pytest.mark.parametrize("line, code", python_blocks(), ids=[f"README.md:{n}" for n, _ in python_blocks()])
def test_readme_snippet_runs(line, code):
    # the pkm_control this test imported, also in the child
    env = dict(os.environ, MPLBACKEND="Agg",
               PYTHONPATH=os.pathsep.join(filter(None, [str(Path(pkm_control.__file__).parents[1]),
                                                        os.environ.get("PYTHONPATH")])))
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, f"README.md snippet at line {line} failed:\n{proc.stderr}"
