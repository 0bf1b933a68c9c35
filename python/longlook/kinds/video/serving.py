"""The server side: our endpoint serving the clip's directory (`--root`) over h3 and h2 on
one port, no-store (docs/interfaces.md). The core's ServerOptions has no root, so this kind
adds it; the server pool keys servers by options, so one server per clip."""

from __future__ import annotations

from dataclasses import dataclass

from ...stacks.endpoint import ServerOptions


@dataclass(frozen=True)
class VideoServerOptions(ServerOptions):
    root: str = ""

    def argv(self) -> list[str]:
        return [*super().argv(), "--root", self.root]


def server_for(ctx, root) -> tuple[int, object]:
    tracefs = ctx.servers.tracefs
    return ctx.servers.get(VideoServerOptions(root=str(root), tcp_tracefs=str(tracefs) if tracefs else None))
