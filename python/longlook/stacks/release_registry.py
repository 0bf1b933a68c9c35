"""Where a stack's releases are listed: a registry (the Go module proxy, PyPI, crates.io)
and the package it lists them under. An adapter names its own (`Stack.release_registry`);
stacks/builds/releases.py reads the listings."""

from __future__ import annotations

import json
from dataclasses import dataclass


@dataclass(frozen=True)
class Registry:
    kind: str  # "go" | "pypi" | "crates"
    package: str  # module path, PyPI project or crate

    @property
    def where(self) -> str:
        return {"go": "the Go module proxy", "pypi": "PyPI", "crates": "crates.io"}[self.kind]

    def url(self) -> str:
        if self.kind == "go":
            return f"https://proxy.golang.org/{self.package.lower()}/@v/list"
        if self.kind == "pypi":
            return f"https://pypi.org/pypi/{self.package}/json"
        name = self.package.lower()
        prefix = {1: "1", 2: "2", 3: f"3/{name[0]}"}.get(len(name), f"{name[:2]}/{name[2:4]}")
        return f"https://index.crates.io/{prefix}/{name}"

    def parse(self, text: str) -> list[str]:
        """Every version the registry lists and has not withdrawn (yanked crates, PyPI
        releases with no files or only yanked ones)."""
        if self.kind == "go":
            return [v.strip() for v in text.splitlines() if v.strip()]
        if self.kind == "pypi":
            doc = json.loads(text)
            return [
                v
                for v, files in (doc.get("releases") or {}).items()
                if files and not all(f.get("yanked") for f in files)
            ]
        out = []
        for line in text.splitlines():
            if line.strip():
                entry = json.loads(line)
                if not entry.get("yanked"):
                    out.append(entry["vers"])
        return out
