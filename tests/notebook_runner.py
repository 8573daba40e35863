"""Execute a notebook top to bottom with nbclient, papermill-style parameters.

The notebook's cell tagged ``parameters`` keeps its defaults; an injected cell
right after it overrides them, so a notebook runs small in the tests and full
for a user.  Notebooks run on the kernel their metadata names (``semanscope_nb``,
which ``scripts/setup.sh`` installs for the venv): :func:`kernel_env` installs it
for the interpreter running the tests into a temporary folder, so the tests do not
depend on what the user's Jupyter holds.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
KERNEL_NAME = "semanscope_nb"  # every notebook's kernelspec; scripts/setup.sh installs it under this name


@functools.lru_cache(maxsize=1)
def kernel_env() -> dict[str, str]:
    """The environment in which Jupyter finds the ``semanscope_nb`` kernel for this interpreter (installed once per process).

    The same ``ipykernel install --name semanscope_nb`` as scripts/setup.sh, with ``--prefix`` a temporary folder
    instead of ``--user``; JUPYTER_PATH puts that folder first.
    """
    prefix = Path(tempfile.mkdtemp(prefix="snb-kernel-"))
    subprocess.run([sys.executable, "-m", "ipykernel", "install", "--prefix", str(prefix), "--name", KERNEL_NAME,
                    "--display-name", "Python (semanscope_nb)"], check=True, capture_output=True)
    paths = [str(prefix / "share" / "jupyter"), os.environ.get("JUPYTER_PATH", "")]
    return {"JUPYTER_PATH": os.pathsep.join(p for p in paths if p)}


def inject_parameters(nb: nbformat.NotebookNode, parameters: dict[str, Any]) -> nbformat.NotebookNode:
    """Insert a cell assigning ``parameters`` after the cell tagged 'parameters' (which must exist)."""
    idx = next((i for i, c in enumerate(nb.cells) if "parameters" in c.get("metadata", {}).get("tags", [])), None)
    if idx is None:
        raise ValueError("notebook has no cell tagged 'parameters'")
    src = "# injected by the tests\n" + "\n".join(f"{k} = {v!r}" for k, v in parameters.items())
    cell = nbformat.v4.new_code_cell(src, metadata={"tags": ["injected-parameters"]})
    nb.cells.insert(idx + 1, cell)
    return nb


def run_notebook(name: str, parameters: dict[str, Any] | None = None, *, timeout: int = 900, cwd: Path | None = None) -> nbformat.NotebookNode:
    """Run ``notebooks/<name>`` (with ``parameters`` injected) and return the executed notebook.

    Raises nbclient's CellExecutionError (with the cell's traceback) if any cell fails.
    """
    path = NOTEBOOKS / name
    nb = nbformat.read(path, as_version=4)
    if parameters:
        inject_parameters(nb, parameters)
    kernel = nb.metadata.get("kernelspec", {}).get("name", KERNEL_NAME)
    client = NotebookClient(
        nb, timeout=timeout, kernel_name=kernel, resources={"metadata": {"path": str(cwd or NOTEBOOKS)}},
    )
    env_before = dict(os.environ)
    os.environ.update(kernel_env())  # Jupyter looks the kernel up when it starts it
    try:
        client.execute()
    finally:
        os.environ.clear()
        os.environ.update(env_before)
    return nb


def cell_outputs_text(nb: nbformat.NotebookNode) -> str:
    """All text/markdown, text/plain and stream outputs of an executed notebook, joined (for assertions)."""
    parts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                parts.append(out.get("text", ""))
            elif "data" in out:
                if "text/markdown" in out["data"]:  # what JupyterLab shows for objects with a _repr_markdown_
                    parts.append(out["data"]["text/markdown"])
                if "text/plain" in out["data"]:
                    parts.append(out["data"]["text/plain"])
    return "\n".join(parts)
