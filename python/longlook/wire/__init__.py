"""Interoperability judged on the wire: a capture of a QUIC exchange and its TLS key log,
read through tshark (tshark.py) into datagrams, packets and frames (model.py), and the
interop cases' verdicts on it (cases/). README.md beside this file says what each case
checks, from which fields, and why."""
