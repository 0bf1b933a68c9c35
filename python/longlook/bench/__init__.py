"""Benchmarks of the testbed itself (`longlook bench ...`).

- `link.py`: how closely linkem delivers what it is configured to (`bench link`).
- `stacks.py`: each QUIC stack's download, its own server and client, against the physical
  limit of the path (`bench stacks`); `ours` is our endpoint.
- `endpoint.py`: our endpoint's HTTP/3 and HTTP/2 downloads against the same limit
  (`bench endpoint`).
- `limit.py` (the limit model), `measure.py` (linkem's settled counters, one download),
  `row.py` (the one measured row of the download benches, and how every bench prints).

Floors: beside analyses; imports stacks, core, testbed and ground only.
"""
