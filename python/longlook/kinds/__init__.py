"""The shipped kinds of experiment, one folder each; one line here registers a kind."""

from ..core.registry import KINDS

KINDS.register("pageload", "longlook.kinds.pageload:KIND")
KINDS.register("fairness", "longlook.kinds.fairness:KIND")
KINDS.register("video", "longlook.kinds.video:KIND")
KINDS.register("conformance", "longlook.kinds.conformance:KIND")
