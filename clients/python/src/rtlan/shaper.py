"""RTTR's token bucket with shaping interval ``Ts`` (docs/rttr.md; Löser/Härtig, seed 004 §3.1).

The same arithmetic as ``rtlan_core::shaper::TokenBucketShaper`` (crates/core/src/shaper/token.rs):
tokens are counted continuously at ``r`` in exact integers (bit·ns) up to the bucket
``b = ⌈r·Ts / 8⌉ + wire_bytes(M)`` bytes (:attr:`TokenBucket.burst_bytes`); when a datagram finds
too few tokens the bucket is "empty" and nothing is released before ``Ts`` later (or before its
tokens have accrued, if later). A backlogged sender thus wakes once per ``Ts`` and sends about
``r·Ts`` each time, and its output stays within ``r·t + b`` over every window. Costs are whole
frames (:func:`wire_bytes`), so the reservation's rate covers headers, padding, FCS, preamble and
gap. Time is injected (``now`` in ns), so the logic is tested without sleeping.
"""

from __future__ import annotations

from typing import Optional

NANOS_PER_SEC = 1_000_000_000
UDP_FRAME_OVERHEAD = 42
"""Ethernet header 14 + IPv4 20 + UDP 8 bytes around a UDP payload."""
MAX_UDP_PAYLOAD = 65507


def wire_bytes(udp_payload: int) -> int:
    """Wire bytes of one datagram: ``max(p + 42, 60) + 4 + 20`` (FCS, preamble+SFD, gap)."""
    return max(udp_payload + UDP_FRAME_OVERHEAD, 60) + 4 + 20


class TokenBucket:
    """A token bucket ``(rate_bps, burst_bytes)`` with shaping interval ``Ts``, sans-IO.

    ``shaping_interval_ns`` zero turns the ``Ts`` gate off (an ideal token bucket with the same
    depth, RTTR's ``TokenBucketConfig::continuous``). The bucket starts full at ``now_ns``.
    """

    def __init__(
        self, rate_bps: int, shaping_interval_ns: int, max_datagram: int, now_ns: int
    ) -> None:
        if rate_bps <= 0:
            raise ValueError("rate_bps must be positive")
        if shaping_interval_ns < 0:
            raise ValueError("shaping_interval must not be negative")
        if not 0 <= max_datagram <= MAX_UDP_PAYLOAD:
            raise ValueError(f"max_datagram must be 0..{MAX_UDP_PAYLOAD}")
        self.rate_bps = rate_bps
        self.shaping_interval_ns = shaping_interval_ns
        self.max_datagram = max_datagram
        r_ts = -(-(rate_bps * shaping_interval_ns) // (NANOS_PER_SEC * 8))
        self.burst_bytes = r_ts + wire_bytes(max_datagram)
        """The bucket depth in wire bytes: the largest burst let out back to back."""
        self._depth = self.burst_bytes * 8 * NANOS_PER_SEC
        self._tokens = self._depth
        self._updated = now_ns
        self._empty_since: Optional[int] = None

    def _need(self, length: int) -> int:
        if not 0 <= length <= self.max_datagram:
            raise ValueError(f"datagram of {length} bytes exceeds max_datagram {self.max_datagram}")
        return wire_bytes(length) * 8 * NANOS_PER_SEC

    def _refill(self, now_ns: int) -> None:
        if now_ns > self._updated:
            earned = self.rate_bps * (now_ns - self._updated)
            self._tokens = min(self._tokens + earned, self._depth)
            self._updated = now_ns

    def try_send(self, length: int, now_ns: int) -> bool:
        """Whether a datagram of ``length`` payload bytes may go at ``now_ns``; if so its
        tokens are spent. A ``False`` because tokens are short marks the bucket empty."""
        need = self._need(length)
        if self._empty_since is not None and now_ns < self._empty_since + self.shaping_interval_ns:
            return False
        self._refill(now_ns)
        if need > self._tokens:
            if self._empty_since is None and self.shaping_interval_ns > 0:
                self._empty_since = now_ns
            return False
        self._empty_since = None
        self._tokens -= need
        return True

    def due_ns(self, length: int) -> int:
        """When a datagram of ``length`` bytes may go: the later of the end of the ``Ts`` gate
        and the moment its tokens have accrued (rounded up to whole ns)."""
        need = self._need(length)
        missing = max(need - self._tokens, 0)
        tokens_due = self._updated - (-missing // self.rate_bps)
        if self._empty_since is None:
            return tokens_due
        return max(tokens_due, self._empty_since + self.shaping_interval_ns)

    def tokens_at(self, now_ns: int) -> int:
        """Wire bytes of tokens available at ``now_ns`` (rounded down), without changing state."""
        earned = self.rate_bps * max(now_ns - self._updated, 0)
        return min(self._tokens + earned, self._depth) // (8 * NANOS_PER_SEC)
