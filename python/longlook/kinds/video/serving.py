"""The server side: our endpoint (the arm's build: ours or ours@VERSION) serving the clip's
directory (`--root`) over h3 and h2 on one port, no-store (docs/interfaces.md). Our endpoint's
ServerOptions has no root, so this kind adds it; the server pool (stacks.servers) keys servers
by stack and options: one server per build and clip."""

from __future__ import annotations

from dataclasses import dataclass

from ...stacks.endpoint import ServerOptions


@dataclass(frozen=True)
class VideoServerOptions(ServerOptions):
    root: str = ""

    def argv(self) -> list[str]:
        return [*super().argv(), "--root", self.root]


def server_for(ctx, root) -> tuple[int, object]:
    """The arm's server (ours or ours@VERSION) serving the clip's folder."""
    spec = ctx.scenario.stacks_of(ctx.arm)[0]
    ecn = getattr(ctx.scenario, "ecn", None) is not False
    return ctx.session["servers"].get(spec, options=VideoServerOptions(root=str(root), ecn=ecn))
