"""`python -m fourfold.interfaces.mcp [PATH] [--http --host H --port N --token T]`."""
import sys

from .server import main

sys.exit(main())
