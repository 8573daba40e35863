# Convenience targets; the README's commands are the scripts themselves (no make needed).
.PHONY: run test bench readme clean-results

run:
	bash scripts/run.sh

test:
	bash scripts/test.sh

bench:
	.venv/bin/python bench/bench_sa.py
	.venv/bin/python bench/bench_cache.py

readme:
	.venv/bin/python bench/readme_tables.py --write

clean-results:
	rm -rf results
