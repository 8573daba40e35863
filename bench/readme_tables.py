"""Regenerate the README's tables about the verdict's statistics, so they cannot drift from the code.

Every cell is computed here, now, by calling the statistics on planted data:

* ``degenerate``: what each statistic answers on collapsed vectors, 1-3 concepts and too few resamples;
* ``one-quantity``: a planted case ranked by raw SA and by the verdict's quantity, and random
  languages' pairs above chance with and without the false-discovery-rate control.

Usage::

    python bench/readme_tables.py            # print the blocks
    python bench/readme_tables.py --write    # rewrite them in README.md (between the BEGIN/END markers)
    python bench/readme_tables.py --check    # exit 1 when README.md differs (tests/test_readme_tables.py runs this)

``make readme`` runs ``--write``.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import sys
from pathlib import Path
from typing import Callable

import numpy as np
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import semanscope_nb as snb  # noqa: E402
from semanscope_nb.metrics.chance import chance_level, permutation_test  # noqa: E402
from semanscope_nb.metrics.compare import compare_models  # noqa: E402
from semanscope_nb.metrics.degenerate import MIN_VERDICT_BOOT  # noqa: E402
from semanscope_nb.metrics.pairs import pair_affinity  # noqa: E402
from semanscope_nb.metrics.spreads import AlignedWords  # noqa: E402

README = ROOT / "README.md"
FDR_SEEDS = 20


def _aw(arrays: dict[str, np.ndarray], words=None) -> AlignedWords:
    R = next(iter(arrays.values())).shape[0]
    eye = sp.identity(R, format="csr")
    return AlignedWords(tuple(arrays), tuple(arrays.values()), tuple(eye for _ in arrays), tuple(f"c{r}" for r in range(R)), words=words)


def _outcome(call: Callable[[], object], read: Callable[[object], str]) -> str:
    try:
        return read(call())
    except snb.errors.EmbeddingError as exc:
        return f"`EmbeddingError` ({str(exc).split(':')[0].split(' needs ')[-1]})"


def _nan_or(x: float, fmt: str) -> str:
    return "NaN + note" if isinstance(x, float) and math.isnan(x) else format(x, fmt)


def degenerate_table() -> str:
    rng = np.random.default_rng(0)
    v = rng.normal(size=(1, 16))
    collapsed = {"en": np.repeat(v, 40, axis=0), "de": np.repeat(2 * v, 40, axis=0)}
    other = {"en": rng.normal(size=(40, 16)), "de": rng.normal(size=(40, 16))}
    base = rng.normal(size=(3, 8))
    tiny = {n: {"en": base[:n], "de": base[:n] + 0.05 * rng.normal(size=(n, 8))} for n in (1, 2, 3)}
    random60 = {"en": rng.normal(size=(60, 8)), "de": rng.normal(size=(60, 8))}
    cases = {
        "40 copies of one vector": (collapsed, 200),
        "1 concept": (tiny[1], 200),
        "2 concepts": (tiny[2], 200),
        "3 concepts": (tiny[3], 200),
        f"random vectors, n_boot = 10 (< {MIN_VERDICT_BOOT})": (random60, 10),
    }
    lines = ["| input | `semantic_affinity` | `permutation_test` | `chance_level` | `compare_models` | `pair_affinity` |",
             "|---|---|---|---|---|---|"]
    for name, (arrays, n_boot) in cases.items():
        aw = _aw(arrays)
        partner = _aw({k: a + 0.5 for k, a in arrays.items()}) if name != "40 copies of one vector" else _aw(other)
        cells = [
            _outcome(lambda: snb.semantic_affinity(arrays, n_boot=n_boot, seed=0),
                     lambda r: f"SA {_nan_or(r.cosine.sa, '.3f')}, tier `{r.tier}`"),
            _outcome(lambda: permutation_test(aw, n_perm=1000, seed=0),
                     lambda t: ("p NaN + note" if math.isnan(t.p_value) else f"p = {t.p_value:.4g}" + (" (exact)" if t.exact else ""))),
            _outcome(lambda: chance_level(aw), lambda c: _nan_or(c.sa_null_cosine, ".3f")),
            _outcome(lambda: compare_models({"m": aw, "other": partner}, n_boot=max(n_boot, 2), n_perm=200, seed=0),
                     lambda c: f"score {_nan_or(float(c.scores.set_index('model').loc['m', 'score']), '+.3f')}"),
            _outcome(lambda: pair_affinity(aw, n_boot=n_boot, n_perm=200, seed=0),
                     lambda p: f"verdict `{p.table.verdict.iloc[0]}`"),
        ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _string_vector(word: str, d: int = 16) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha256(word.encode()).digest()[:8], "little")
    return np.random.default_rng(seed).normal(size=d)


def one_quantity_table() -> str:
    # planted: 150 concepts, 60 of them one identical string in both languages; random vectors per string vs a weak real
    # model with a language offset (it also maps an identical string to one vector)
    R, n_id, d = 150, 60, 16
    words = tuple(tuple(f"name{r}" if r < n_id else f"w{r}_{lang}" for r in range(R)) for lang in ("en", "de"))
    random_vecs = [np.array([_string_vector(w) for w in ws]) for ws in words]
    rng = np.random.default_rng(3)
    latent = rng.normal(size=(R, d))
    real = [latent + 0.8 * rng.normal(size=(R, d)) + 2.0 * rng.normal(size=d) for _ in range(2)]
    real[1][:n_id] = real[0][:n_id]
    eye = sp.identity(R, format="csr")
    models = {m: AlignedWords(("en", "de"), tuple(v), (eye, eye), tuple(f"c{r}" for r in range(R)), words=words)
              for m, v in (("random", random_vecs), ("real", real))}
    lines = ["| compared quantity | ranking (Holm-adjusted p) | scores |", "|---|---|---|"]
    for score in ("sa", "delta"):
        c = compare_models(models, n_boot=300, n_perm=1000, seed=0, score=score)
        p = c.pairs.iloc[0]
        order = f"{p.model_a} > {p.model_b} (p = {p.p_holm:.4f})"
        vals = ", ".join(f"{r.model} {r.score:+.3f}" if score == "delta" else f"{r.model} {r.score:.3f}" for r in c.scores.itertuples())
        lines.append(f"| {c.score_label} | {order} | {vals} |")
    langs = tuple(f"l{k}" for k in range(12))
    raw = bh = 0
    for seed in range(FDR_SEEDS):
        g = np.random.default_rng(seed)
        eye30 = sp.identity(30, format="csr")
        aw = AlignedWords(langs, tuple(g.normal(size=(30, 8)) for _ in langs), tuple(eye30 for _ in langs), tuple(map(str, range(30))))
        t = pair_affinity(aw, n_boot=0, n_perm=199, seed=seed).table
        raw += bool((t.p_value < 0.05).any())
        bh += bool(t.survives.any())
    lines += ["", "| random vectors, 12 languages (66 pairs), 30 concepts | seeds with a pair above chance |", "|---|---|",
              f"| permutation p < 0.05, uncorrected | {raw} of {FDR_SEEDS} |",
              f"| Benjamini–Hochberg at 5% (`survives`) | {bh} of {FDR_SEEDS} |"]
    return "\n".join(lines)


BLOCKS = {"degenerate-statistics": degenerate_table, "one-quantity": one_quantity_table}


def render() -> dict[str, str]:
    """Each block's generated text."""
    return {name: fn() for name, fn in BLOCKS.items()}


def replace_blocks(text: str, blocks: dict[str, str]) -> str:
    """``text`` with each ``<!-- BEGIN readme_tables:NAME -->`` ... ``<!-- END readme_tables:NAME -->`` block replaced."""
    for name, body in blocks.items():
        begin, end = f"<!-- BEGIN readme_tables:{name} -->", f"<!-- END readme_tables:{name} -->"
        if begin not in text or end not in text:
            raise SystemExit(f"README.md lacks the markers of block '{name}': {begin} ... {end}")
        head, rest = text.split(begin, 1)
        _, tail = rest.split(end, 1)
        text = f"{head}{begin}\n{body}\n{end}{tail}"
    return text


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="rewrite the blocks in README.md")
    ap.add_argument("--check", action="store_true", help="exit 1 when README.md differs from the generated blocks")
    args = ap.parse_args()
    blocks = render()
    if not (args.write or args.check):
        for name, body in blocks.items():
            print(f"## {name}\n{body}\n")
        return 0
    old = README.read_text(encoding="utf-8")
    new = replace_blocks(old, blocks)
    if args.write:
        if new != old:
            README.write_text(new, encoding="utf-8")
        print("README.md blocks up to date" if new == old else "README.md blocks rewritten")
        return 0
    if args.check:
        if new != old:
            print("README.md differs from bench/readme_tables.py: run `make readme`", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
