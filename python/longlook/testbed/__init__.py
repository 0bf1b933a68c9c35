"""The testbed: namespaces, links, linkem, and cleaning up after them."""

from .cleanup import Cleaned, clean
from .host import TestbedError, preflight
from .testbed import Testbed
from .topology import CLIENT_ADDR, SERVER_ADDR

__all__ = ["Testbed", "TestbedError", "clean", "Cleaned", "preflight", "CLIENT_ADDR", "SERVER_ADDR"]
