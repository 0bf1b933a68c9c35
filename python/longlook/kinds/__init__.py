"""The shipped kinds of experiment, one folder each; one line here registers a kind."""

from ..core.registry import register

register("pageload", "longlook.kinds.pageload:KIND")
register("fairness", "longlook.kinds.fairness:KIND")
register("video", "longlook.kinds.video:KIND")
register("conformance", "longlook.kinds.conformance:KIND")
