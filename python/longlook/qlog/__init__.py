"""qlog on the ground floor: every floor reads it. `reader` reads our JSON-SEQ files (the
endpoint's, and any stack's once translated); `dialects` translates each QUIC stack's qlog
into our vocabulary (Kakhki Table 3's state names)."""

from .reader import RECORD_SEPARATOR, QlogFile, parse_records, qlog_from_events, read_qlog

__all__ = ["RECORD_SEPARATOR", "QlogFile", "parse_records", "qlog_from_events", "read_qlog"]
