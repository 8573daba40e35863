"""The notebooks under papermill: typed parameters it lists, the kernel they name, paths relative to the notebook.

papermill runs in a subprocess from a folder that is not the notebooks' one, with no ``-k`` and no
``--cwd``: the notebook's kernelspec (``semanscope_nb``, installed for this interpreter as
scripts/setup.sh installs it) must be found, and a relative path parameter must land next to the
notebook, not in papermill's working directory.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys

import nbformat
import pytest
from notebook_runner import KERNEL_NAME, NOTEBOOKS, ROOT, kernel_env

papermill = pytest.importorskip("papermill")  # in the test extra: scripts/test.sh installs it

NAMES = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))


def _parameters_cell(nb) -> str:
    return next(c.source for c in nb.cells if "parameters" in c.metadata.get("tags", []))


@pytest.mark.parametrize("name", NAMES)
def test_parameters_are_typed_and_the_kernel_is_the_one_setup_installs(name):
    path = NOTEBOOKS / name
    nb = nbformat.read(path, as_version=4)
    assert nb.metadata.kernelspec.name == KERNEL_NAME
    assert f"--name {KERNEL_NAME}" in (ROOT / "scripts" / "setup.sh").read_text(encoding="utf-8")
    src = _parameters_cell(nb)
    tree = ast.parse(src)
    assigned = [n.target.id for n in tree.body if isinstance(n, ast.AnnAssign)]
    untyped = [t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)]
    assert assigned and not untyped, f"{name}: parameters without a type hint: {untyped}"
    assert f'enter_notebook_folder("{name}")' in src  # relative paths resolve against the notebook
    listed = papermill.inspect_notebook(str(path))  # what `papermill --help-notebook` prints
    assert list(listed) == assigned, f"{name}: papermill lists {list(listed)}"
    for pname, p in listed.items():
        annotation = ast.unparse(next(n.annotation for n in tree.body if isinstance(n, ast.AnnAssign) and n.target.id == pname))
        assert p["inferred_type_name"] == annotation, (name, pname)


@pytest.mark.slow  # runs a notebook (USE-multilingual) in a papermill subprocess
def test_papermill_runs_the_quickstart_from_another_folder(tmp_path, shared_cache_dir):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    figures = tmp_path / "figures"
    relative = os.path.relpath(figures, NOTEBOOKS)  # relative to the notebook's folder, not to `elsewhere`
    out = tmp_path / "quickstart-out.ipynb"
    env = {**os.environ, **kernel_env(), "HF_HUB_OFFLINE": "1"}
    env.pop("SEMANSCOPE_NOTEBOOK_DIR", None)
    cmd = [sys.executable, "-m", "papermill", str(NOTEBOOKS / "00-quickstart.ipynb"), str(out),
           "-p", "MAX_CONCEPTS", "20", "-p", "N_BOOT", "50", "-p", "METHOD", "pca",
           "-p", "CACHE_DIR", str(shared_cache_dir), "-p", "FIGURES_DIR", relative, "--no-progress-bar"]
    proc = subprocess.run(cmd, check=False, cwd=elsewhere, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert (figures / "quickstart-map.png").stat().st_size > 5000
    assert (figures / "quickstart-map.html").is_file()
    assert not (elsewhere / relative).exists() and not list(elsewhere.iterdir())  # nothing landed where papermill ran
    nb = nbformat.read(out, as_version=4)
    assert nb.metadata.kernelspec.name == KERNEL_NAME and nb.metadata.papermill.parameters["N_BOOT"] == 50
    injected = [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert len(injected) == 1 and "MAX_CONCEPTS = 20" in injected[0].source
    text = "\n".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "stream")
    assert "conceptual-space: 20 concepts in en, zh" in text and "SA cosine" in text
