# Convenience targets; the README's commands are the scripts themselves (no make needed).
.PHONY: run test bench bench-quick bench-readme readme readme-verdicts clean-results

run:
	bash scripts/run.sh

test:
	bash scripts/test.sh

bench:
	.venv/bin/python bench/bench_sa.py
	.venv/bin/python bench/bench_cache.py

# every claim of bench/README.md next to its number: run the benches that write bench/results/*.json, then render
bench-readme:
	.venv/bin/python bench/make_readme.py --run

bench-quick:
	.venv/bin/python bench/make_readme.py --run --quick

readme:
	.venv/bin/python bench/readme_tables.py --write

# the README's verdict table (offline models x bundled datasets; loads the real models, a few minutes)
readme-verdicts:
	.venv/bin/python bench/readme_verdict_table.py --write README.md

clean-results:
	rm -rf results
