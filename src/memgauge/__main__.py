"""``python -m memgauge``: the same CLI as the ``memgauge`` command."""

from .cli import main

if __name__ == "__main__":
    main()
