"""longlook: QUIC (HTTP/3) vs TCP (HTTP/2) head-to-head under emulated networks."""

__version__ = "0.1.0"
