"""The `fourfold` command: answers --version before anything of the engine is imported,
then hands over to the command line (cli.py)."""
from __future__ import annotations

import sys

from .. import __version__


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if args == ["--version"]:
        print(f"fourfold {__version__}")
        return 0
    from .cli import main as command_line

    return command_line(args)


if __name__ == "__main__":
    sys.exit(main())
