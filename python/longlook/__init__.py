"""longlook: QUIC (HTTP/3) vs TCP (HTTP/2) head-to-head under emulated networks.

In a notebook, `longlook.open(DIR)` gives an experiment directory's results as pandas
frames and the report's comparisons (longlook.core.results; docs/notebook.ipynb).
"""

from .versions import __version__  # noqa: F401  (one version, read by `longlook --version`)


def __getattr__(name: str) -> object:
    # imported on first use, so `import longlook` (and the CLI's start) stays cheap
    if name == "open":
        from .core.results import open_results

        return open_results
    raise AttributeError(f"module 'longlook' has no attribute {name!r}")
