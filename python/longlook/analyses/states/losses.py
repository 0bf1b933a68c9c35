"""Loss accounting per run: losses declared by the sender vs losses the link really caused.

QUIC (quinn): `recovery:packet_lost` batches carry the inferred trigger (packet threshold =
`reordering_threshold`, or `time_threshold`); `longlook:connection_stats` (quinn's counters
at close) gives the exact number of packets declared lost. quinn exposes no spurious-loss
signal, so we count them against the network's truth: linkem knows every packet it dropped
toward the client, and a packet declared lost that the link delivered was acknowledged
later, i.e. was a false loss. spurious >= declared - dropped (exact when every dropped
packet is declared lost before the connection closes; dropped PLPMTUD probes are not
declared lost by quinn, so they are taken out of the drops).

TCP: `longlook:tcp_info_summary` has tcpi_total_retrans and tcpi_dsack_dups (each DSACK
reports one retransmission the receiver already had: a spurious retransmit, Linux >= 5.0),
tcpi_reord_seen; the same network bound applies to retransmissions.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from ...qlog import QlogFile


@dataclass
class LossAccounting:
    run_id: str
    protocol: str
    declared_lost: int | None  # QUIC: packets declared lost; TCP: segments retransmitted
    loss_events: int  # QUIC: loss batches (congestion events); TCP: Recovery/Loss entries
    by_packet_threshold: int  # QUIC batches by trigger (TCP: 0)
    by_time_threshold: int
    trigger_uncertain: int
    network_drops: int | None  # linkem, server -> client direction, over the run
    network_reordered: int | None  # packets linkem chose to reorder (both directions)
    spurious_lower_bound: int | None  # declared - network drops, floored at 0
    dsack_spurious: int | None  # TCP only: DSACKs received
    reorder_seen: int | None  # TCP only: tcpi_reord_seen

    @property
    def spurious(self) -> int | None:
        """Best count of false losses: DSACK for TCP when larger, else the network bound."""
        vals = [v for v in (self.spurious_lower_bound, self.dsack_spurious) if v is not None]
        return max(vals) if vals else None

    def as_dict(self) -> dict:
        return {**asdict(self), "spurious": self.spurious}


# every reason linkem drops a packet on the way: what a sender can rightly declare lost
NETWORK_DROPS = ("dropped_loss", "dropped_buffer", "dropped_middlebox", "dropped_aqm", "dropped_nat")


def _link_drops(linkem: dict | None, direction: str = "down") -> tuple[int | None, int | None]:
    if not linkem:
        return None, None
    dirs = linkem.get("directions") or {}
    d = dirs.get(direction) or {}
    if not d:
        return None, None
    drops = int(sum(d.get(k, 0) for k in NETWORK_DROPS))
    reordered = int(sum((dirs.get(x) or {}).get("reordered", 0) for x in ("up", "down")))
    return drops, reordered


def _state_entries(log: QlogFile, states: tuple[str, ...]) -> int:
    return sum(1 for e in log.named("recovery:congestion_state_updated") if (e.get("data") or {}).get("new") in states)


def quic_losses(log: QlogFile, run_id: str, linkem: dict | None = None) -> LossAccounting:
    batches = [e.get("data") or {} for e in log.named("recovery:packet_lost")]
    by_packet = sum(1 for b in batches if b.get("trigger") == "reordering_threshold" and b.get("trigger_certain", True))
    by_time = sum(1 for b in batches if b.get("trigger") == "time_threshold")
    uncertain = sum(1 for b in batches if not b.get("trigger_certain", True))
    stats = log.last("longlook:connection_stats")
    if stats is not None:
        declared = int(stats["lost_packets"])
    else:  # older logs: the controller's estimate (lost bytes / MTU per batch)
        declared = int(sum(b.get("lost_packets_estimate", 0) for b in batches)) if batches else 0
    drops, reordered = _link_drops(linkem)
    bound = None
    if drops is not None and stats is not None:
        bound = max(0, declared - max(0, drops - int(stats.get("lost_plpmtud_probes", 0))))
    return LossAccounting(
        run_id=run_id,
        protocol="QUIC",
        declared_lost=declared,
        loss_events=len(batches),
        by_packet_threshold=by_packet,
        by_time_threshold=by_time,
        trigger_uncertain=uncertain,
        network_drops=drops,
        network_reordered=reordered,
        spurious_lower_bound=bound,
        dsack_spurious=None,
        reorder_seen=None,
    )


def tcp_losses(log: QlogFile, run_id: str, linkem: dict | None = None) -> LossAccounting:
    summary = log.last("longlook:tcp_info_summary") or {}
    retrans = summary.get("total_retrans")
    if retrans is None:  # summary missing or from an older endpoint: last metrics sample
        metrics = log.last("recovery:metrics_updated") or {}
        retrans = metrics.get("total_retrans")
    drops, reordered = _link_drops(linkem)
    bound = None
    if drops is not None and retrans is not None and "total_retrans" in summary:
        bound = max(0, int(retrans) - drops)
    return LossAccounting(
        run_id=run_id,
        protocol="TCP",
        declared_lost=None if retrans is None else int(retrans),
        loss_events=_state_entries(log, ("Recovery", "Loss")),
        by_packet_threshold=0,
        by_time_threshold=0,
        trigger_uncertain=0,
        network_drops=drops,
        network_reordered=reordered,
        spurious_lower_bound=bound,
        dsack_spurious=summary.get("dsack_dups"),
        reorder_seen=summary.get("reord_seen"),
    )


def loss_accounting(log: QlogFile, run_id: str, linkem: dict | None = None) -> LossAccounting:
    return (tcp_losses if log.protocol == "TCP" else quic_losses)(log, run_id, linkem)
