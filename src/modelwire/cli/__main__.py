"""`python -m modelwire.cli`: the same as the `modelwire` command."""

from __future__ import annotations

from . import main

if __name__ == "__main__":
    main()
