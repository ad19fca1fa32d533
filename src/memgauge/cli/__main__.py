"""``python -m memgauge.cli``: the same CLI as the ``memgauge`` command."""

from . import main

if __name__ == "__main__":
    main()
