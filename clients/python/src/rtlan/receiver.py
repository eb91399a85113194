"""Receiving a sequenced stream and measuring it.

Payloads that start with :data:`HEADER` (sequence number and the sender's send time, both
big-endian u64; :func:`stamp` writes it) are counted for loss, reordering, duplicates and the
interarrival jitter of RFC 3550 §6.4.1 (the mean deviation of transit-time differences; clock
offsets between the hosts cancel). Other payloads are counted only.
"""

from __future__ import annotations

import socket
import struct
import time
from dataclasses import dataclass, field
from typing import Callable, Optional, Tuple

HEADER = struct.Struct("!QQ")
"""Sequence number, send time in ns (any clock): 16 bytes at the start of each payload."""


def stamp(payload: bytearray, seq: int, now_ns: int) -> None:
    """Writes the header (``seq``, ``now_ns``) into the first 16 bytes of ``payload``."""
    HEADER.pack_into(payload, 0, seq, now_ns)


@dataclass
class ReceiverStats:
    """What a :class:`Receiver` has seen."""

    packets: int = 0
    payload_bytes: int = 0
    first_ns: Optional[int] = None
    last_ns: Optional[int] = None
    highest_seq: Optional[int] = None
    lowest_seq: Optional[int] = None
    duplicates: int = 0
    reordered: int = 0
    jitter_ns: float = 0.0
    """RFC 3550 interarrival jitter estimate."""
    _seen: set[int] = field(default_factory=set, repr=False)
    _last_transit: Optional[int] = field(default=None, repr=False)

    def record(self, payload: bytes, now_ns: int) -> None:
        """Counts one datagram received at ``now_ns``."""
        self.packets += 1
        self.payload_bytes += len(payload)
        if self.first_ns is None:
            self.first_ns = now_ns
        self.last_ns = now_ns
        if len(payload) < HEADER.size:
            return
        seq, sent = HEADER.unpack_from(payload)
        if seq in self._seen:
            self.duplicates += 1
            return
        self._seen.add(seq)
        if self.highest_seq is not None and seq < self.highest_seq:
            self.reordered += 1
        self.highest_seq = seq if self.highest_seq is None else max(self.highest_seq, seq)
        self.lowest_seq = seq if self.lowest_seq is None else min(self.lowest_seq, seq)
        transit = now_ns - sent
        if self._last_transit is not None:
            self.jitter_ns += (abs(transit - self._last_transit) - self.jitter_ns) / 16
        self._last_transit = transit

    @property
    def expected(self) -> int:
        """Sequence numbers from the lowest to the highest seen."""
        if self.highest_seq is None or self.lowest_seq is None:
            return 0
        return self.highest_seq - self.lowest_seq + 1

    @property
    def lost(self) -> int:
        """Sequence numbers in that range never received."""
        return self.expected - len(self._seen)

    def rate_bps(self) -> float:
        """Payload bits per second between the first and the last datagram."""
        if self.first_ns is None or self.last_ns is None or self.last_ns <= self.first_ns:
            return 0.0
        return self.payload_bytes * 8 * 1e9 / (self.last_ns - self.first_ns)


class Receiver:
    """A UDP socket bound to ``(ip, port)`` that records what arrives in :attr:`stats`."""

    def __init__(
        self,
        port: int,
        ip: str = "0.0.0.0",
        clock: Callable[[], int] = time.monotonic_ns,
        rcvbuf: int = 4 << 20,
    ) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.bind((ip, port))
        self.stats = ReceiverStats()
        self._clock = clock

    @property
    def address(self) -> Tuple[str, int]:
        """The bound address."""
        addr = self.sock.getsockname()
        return (str(addr[0]), int(addr[1]))

    def receive(self, timeout: Optional[float] = None) -> Optional[bytes]:
        """One datagram (recorded), or ``None`` after ``timeout`` seconds without one."""
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(65535)
        except socket.timeout:
            return None
        self.stats.record(data, self._clock())
        return data

    def run(self, duration: float, idle: float = 1.0) -> ReceiverStats:
        """Receives for ``duration`` seconds, or until ``idle`` seconds pass without a datagram
        after the first; returns the stats."""
        end = time.monotonic() + duration
        while (left := end - time.monotonic()) > 0:
            wait = min(left, idle) if self.stats.packets else left
            if self.receive(wait) is None and self.stats.packets:
                break
        return self.stats

    def close(self) -> None:
        """Closes the socket."""
        self.sock.close()

    def __enter__(self) -> "Receiver":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
