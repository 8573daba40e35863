"""The package's folders are its architecture: imports point only downward, there are no cycles,
and the public API of ``import semanscope_nb as snb`` is what it was before the layout change."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import semanscope_nb as snb

PACKAGE = Path(snb.__file__).parent
#: lower number = lower layer; a module may import its own layer or a lower one
LAYERS = {"_api": 0, "errors": 0, "machine": 0, "memo": 0, "provenance": 0, "results": 0, "settings": 0, "data": 1, "models": 2, "metrics": 3, "plots": 4, "runs": 5, "widgets": 6}
TOP = 7  # semanscope_nb/__init__.py and __main__.py


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer_of(module: str) -> int:
    parts = module.split(".")
    if len(parts) == 1 or parts[1] == "__main__":
        return TOP
    return LAYERS[parts[1]]


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """Every semanscope_nb module a file imports, at any depth (function-level and TYPE_CHECKING ones too)."""
    here = module_name(path)
    is_pkg = path.name == "__init__.py"
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "semanscope_nb"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here.split(".")
                base = base[: len(base) - node.level + (1 if is_pkg else 0)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "semanscope_nb":
                continue
            # `from pkg import submodule` imports the submodule
            for a in node.names:
                sub = f"{target}.{a.name}"
                out.append((node.lineno, sub if (PACKAGE.parent / (sub.replace(".", "/") + ".py")).exists()
                            or (PACKAGE.parent / sub.replace(".", "/")).is_dir() else target))
    return out


FILES = sorted(PACKAGE.rglob("*.py"))


def test_every_module_belongs_to_a_layer():
    for f in FILES:
        name = module_name(f)
        assert layer_of(name) in range(TOP + 1), name
    assert {f.parent.name for f in FILES} >= {"data", "models", "metrics", "plots", "runs", "widgets"}


@pytest.mark.parametrize("path", FILES, ids=lambda p: module_name(p))
def test_imports_point_downward(path):
    here = module_name(path)
    mine = layer_of(here)
    upward = [f"line {line}: {here} (layer {mine}) imports {target} (layer {layer_of(target)})"
              for line, target in imported_modules(path) if target != "semanscope_nb" and layer_of(target) > mine]
    assert not upward, "\n".join(upward)
    if here != "semanscope_nb":
        assert ("semanscope_nb" not in [t for _, t in imported_modules(path)]), f"{here} imports the top-level package"


def _graph() -> dict[str, set[str]]:
    graph = {}
    for f in FILES:
        here = module_name(f)
        deps = set()
        for _, target in imported_modules(f):
            # a package import runs its __init__, which imports its rooms: count the edge to the package
            if target != here:
                deps.add(target)
        graph[here] = deps
    return graph


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for dep in sorted(graph.get(node, ())):
            if dep not in graph:
                continue
            # a room importing its own package's __init__ (or the package importing its rooms) is not a cycle
            # between modules: skip edges from a package to its own submodules
            if dep.startswith(node + "."):
                continue
            if state.get(dep) == 1:
                return stack[stack.index(dep):] + [dep]
            if dep not in state and (cycle := visit(dep)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_no_import_cycles():
    cycle = _find_cycle(_graph())
    assert cycle is None, " -> ".join(cycle or [])


def test_the_cycle_finder_finds_cycles():
    assert _find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    assert _find_cycle({"p": {"p.x"}, "p.x": set()}) is None


def test_an_upward_import_is_caught(tmp_path):
    fake = PACKAGE / "data" / "_upward_probe.py"
    fake.write_text("def f():\n    from semanscope_nb.plots import charts\n    return charts\n")
    try:
        found = [t for _, t in imported_modules(fake)]
        assert "semanscope_nb.plots.charts" in found
        assert layer_of("semanscope_nb.plots.charts") > layer_of(module_name(fake))
    finally:
        fake.unlink()


# The names `import semanscope_nb as snb` exported before the package was split into layers
# (read from the flat __init__.py of commit da0f3a3); every one must still resolve.
PUBLIC_BEFORE_LAYOUT = """
AlignedEncoder AlignedModel AlignedWords Alignment AlignmentReport ApiCostEstimate ApiModelError BenchmarkResult
BilingualDictionary BitextResult CSCCurves CSCGrid CSCResult CacheError CacheWarning ClassificationResult DEFAULT_MODEL
DEFAULT_TIERS DatasetError DictionarySplit DistFuse DistanceProvider DistanceScores EmbedStats EmbeddingCache
EmbeddingDistances EmbeddingError Encoder FusedDistances GridBackendError GridResult LANGUAGE_NAMES LANGUAGE_RULES
LabelledTexts LanguageRules Metric ModelInfo ModelLoadError OpenAIEmbeddingEncoder ParallelCorpus Perturbation Projection
ProjectionCache ProjectionSettings SAResult SemanscopeError SentenceCorpus TierThresholds TopK UnknownModelError
UnsupportedLanguageError WordDataset affinity_ratio align_model alignment_map alignment_report bitext_retrieval
bundled_data_dir cedict_dictionary chart_to_html charts classification_frame concept_separation concept_separation_grid
csc_chart csc_curves csc_grid csc_heatmap csc_length_chart csc_overlap csc_table dataset_affinity dataset_from_frame
dataset_map default_cache_dir default_projection_cache embed_dataset estimate_api_cost estimate_tokens export
fit_alignment format_leaderboard get_language_rules get_metric get_model_info knn_classification language_code
leaderboard leaderboard_table leaderboard_wide lexicon_induction list_datasets list_metrics list_models
list_sentence_corpora load_dataset load_model load_sentence_corpus map_frame map_grid meeting_in_the_middle models_frame
perturb_corpus perturb_sentence procrustes project project_dataset projection read_ess_questions read_muse_dictionary
read_semanscope_csv read_sentences read_sib200 read_tatoeba read_word_lists register_api_model register_cjk_fonts
register_language_rules register_metric register_model retrieval_frame run_benchmark run_grid sa_heatmap sa_legend_text
save_chart save_figures semantic_affinity setup_notebook shared_data_dir sib200_classification sib200_parallel
split_dictionary supported_languages tatoeba_retrieval text_classification text_retrieval tier_bar_chart topk_search
worst_concepts_chart
""".split()


def test_the_top_level_is_short_and_old_names_still_resolve_with_a_warning():
    assert len(PUBLIC_BEFORE_LAYOUT) == 140
    assert len(snb.__all__) <= 40, len(snb.__all__)
    assert all(hasattr(snb, n) for n in snb.__all__)
    for name in PUBLIC_BEFORE_LAYOUT:
        if name in snb.__all__:
            continue
        with pytest.warns(DeprecationWarning, match=rf"semanscope_nb\.{name} moved to semanscope_nb\."):
            assert getattr(snb, name) is not None
    # the names mean what they meant: the grid's Metric class, the SA charts module, ...
    with pytest.warns(DeprecationWarning):
        assert snb.Metric is snb.runs.grid.Metric and snb.charts is snb.plots.charts
    with pytest.warns(DeprecationWarning, match="semanscope_nb.metrics.classification_frame"):
        assert snb.classification_frame is snb.metrics.classification.classification_frame


@pytest.mark.parametrize("layer", ["data", "models", "metrics", "plots", "runs"])
def test_layer_namespaces_export_the_same_objects(layer):
    sub = importlib.import_module(f"semanscope_nb.{layer}")
    assert getattr(snb, layer) is sub and sub.__doc__ and "May import" in sub.__doc__
    for name in sub.__all__:
        obj = getattr(sub, name)
        if name in snb.__all__:
            assert getattr(snb, name) is obj, f"snb.{name} is not snb.{layer}.{name}"


def test_no_work_item_comments_in_the_code():
    offenders = []
    for f in FILES:
        for i, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            low = line.lower()
            if "issue " in low and any(f"issue {n}" in low for n in range(1, 100)) or "--- end issue" in low:
                offenders.append(f"{module_name(f)}:{i}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _is_module(dotted: str) -> bool:
    path = PACKAGE.parent / dotted.replace(".", "/")
    return path.with_suffix(".py").exists() or path.is_dir()


def private_imports(path: Path) -> list[str]:
    """Private names (``_x``, not dunders) a file takes from another package module.

    Counts ``from semanscope_nb.m import _x`` and ``m._x`` where ``m`` is a package module the file imported.
    """
    here = module_name(path)
    is_pkg = path.name == "__init__.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    modules: dict[str, str] = {}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here.split(".")
                base = base[: len(base) - node.level + (1 if is_pkg else 0)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "semanscope_nb" or target == here:
                continue
            for a in node.names:
                if _is_module(f"{target}.{a.name}"):
                    modules[a.asname or a.name] = f"{target}.{a.name}"
                elif _is_private(a.name):
                    found.append(f"line {node.lineno}: {here} imports {target}.{a.name}")
        elif isinstance(node, ast.Import):
            modules.update({a.asname or a.name: a.name for a in node.names if a.name.split(".")[0] == "semanscope_nb"})
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _is_private(node.attr):
            chain, value = [], node.value
            while isinstance(value, ast.Attribute):
                chain.append(value.attr)
                value = value.value
            if isinstance(value, ast.Name) and value.id in modules:
                target = ".".join([modules[value.id], *reversed(chain)])
                if _is_module(target) and target != here:
                    found.append(f"line {node.lineno}: {here} uses {target}.{node.attr}")
    return found


#: every layer: a name another module needs is public in its room
NO_PRIVATE_IMPORTS = ("data", "models", "metrics", "plots", "runs", "widgets")


@pytest.mark.parametrize("layer", NO_PRIVATE_IMPORTS)
def test_no_private_name_is_imported_across_modules(layer):
    offenders = [hit for f in FILES if module_name(f).split(".")[1:2] == [layer] for hit in private_imports(f)]
    assert not offenders, "\n".join(offenders)


def test_the_private_import_finder_finds_them():
    fake = PACKAGE / "plots" / "_private_probe.py"
    fake.write_text("from semanscope_nb.plots.maps import _search_test, map_frame\n"
                    "from semanscope_nb.plots import legend\n"
                    "def f():\n    return legend._legend_box, legend.sa_legend_text, map_frame\n")
    try:
        assert [hit.split(": ", 1)[1] for hit in private_imports(fake)] == [
            "semanscope_nb.plots._private_probe imports semanscope_nb.plots.maps._search_test",
            "semanscope_nb.plots._private_probe uses semanscope_nb.plots.legend._legend_box"]
    finally:
        fake.unlink()


def private_definitions(path: Path) -> set[str]:
    """Private names (not dunders) a package file defines: functions and methods, classes, assigned names and
    ``self._x`` / ``cls._x`` attributes."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and isinstance(node.value, ast.Name)
              and node.value.id in ("self", "cls")):
            names.add(node.attr)
    return {n for n in names if _is_private(n)}


def private_attribute_uses(path: Path, defined_by: dict[str, set[str]]) -> list[str]:
    """``obj._x`` in a file, ``obj`` not ``self`` / ``cls``, where ``_x`` is defined by another package module only:
    an object's internals read from outside the module that owns them (``defined_by``: name -> defining modules)."""
    here = module_name(path)
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not (isinstance(node, ast.Attribute) and _is_private(node.attr)):
            continue
        if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
            continue
        owners = defined_by.get(node.attr, set())
        if owners and here not in owners:
            found.append(f"line {node.lineno}: {here} reads {node.attr} of {' / '.join(sorted(owners))}")
    return found


def test_no_module_reads_another_modules_private_attributes():
    """What a class keeps private stays in its module: another module asks through a public method or property."""
    defined_by: dict[str, set[str]] = {}
    for f in FILES:
        for name in private_definitions(f):
            defined_by.setdefault(name, set()).add(module_name(f))
    offenders = [hit for f in FILES for hit in private_attribute_uses(f, defined_by)]
    assert not offenders, "\n".join(offenders)


def test_the_private_attribute_finder_finds_them():
    """A probe module reading a Spreads internal is caught; its own private attribute and a third-party one are not."""
    fake = PACKAGE / "metrics" / "_attribute_probe.py"
    fake.write_text("class Box:\n    def __init__(self):\n        self._mine = 1\n"
                    "def f(spreads, box, u):\n    return spreads._centre_off, box._mine, u._replace_not_ours\n")
    try:
        defined_by: dict[str, set[str]] = {}
        for f in [*FILES, fake]:
            for name in private_definitions(f):
                defined_by.setdefault(name, set()).add(module_name(f))
        hits = [hit.split(": ", 1)[1] for hit in private_attribute_uses(fake, defined_by)]
        assert hits == ["semanscope_nb.metrics._attribute_probe reads _centre_off of semanscope_nb.metrics.spreads"]
    finally:
        fake.unlink()
