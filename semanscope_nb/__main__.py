"""``python -m semanscope_nb ...`` is the ``semanscope`` command."""

from semanscope_nb.runs.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
