"""Shaped UDP to a reservation (docs/rttr.md, ``Shaping::TokenBucket``).

:class:`Sender` sends ordinary UDP to the reservation's proxy IP and makes each ``send`` wait,
inline, until RTTR's token bucket (:class:`rtlan.shaper.TokenBucket`) covers the datagram's wire
cost — the same bucket and ``Ts`` gate as the Rust library, so the stream conforms to the T-SPEC
``(rate_bps, burst_bytes)`` the reservation must carry (``burst_bytes`` ≥ :attr:`Sender.burst_bytes`).
"""

from __future__ import annotations

import socket
import time
from typing import Callable, Optional, Union

from .shaper import UDP_FRAME_OVERHEAD, TokenBucket


def burst_for(rate_bps: int, shaping_interval: float, max_packet: int) -> int:
    """The ``burst_bytes`` to reserve for a sender at ``rate_bps`` with ``shaping_interval``
    seconds and frames of at most ``max_packet`` bytes (incl. the Ethernet header)."""
    return TokenBucket(
        rate_bps, round(shaping_interval * 1e9), max_packet - UDP_FRAME_OVERHEAD, 0
    ).burst_bytes


class Sender:
    """A UDP socket connected to ``(dst_ip, dst_port)`` whose sends are token-bucket shaped.

    ``shaping_interval`` is ``Ts`` in seconds (RTTR's ``TokenBucket { interval }``; default
    1 ms); ``max_packet`` the reservation's frame limit incl. the 14-byte Ethernet header, so
    payloads up to ``max_packet − 42`` bytes may be sent. ``clock`` (ns) and ``sleep`` (s) are
    injectable for tests.
    """

    def __init__(
        self,
        dst_ip: str,
        dst_port: int,
        rate_bps: int,
        max_packet: int = 1514,
        shaping_interval: float = 0.001,
        src_port: int = 0,
        clock: Callable[[], int] = time.monotonic_ns,
        sleep: Callable[[float], None] = time.sleep,
        sock: Optional[socket.socket] = None,
    ) -> None:
        if max_packet <= UDP_FRAME_OVERHEAD:
            raise ValueError(f"max_packet must exceed {UDP_FRAME_OVERHEAD} bytes")
        self._clock = clock
        self._sleep = sleep
        self.bucket = TokenBucket(
            rate_bps, round(shaping_interval * 1e9), max_packet - UDP_FRAME_OVERHEAD, clock()
        )
        if sock is None:
            sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            if src_port:
                sock.bind(("0.0.0.0", src_port))
            sock.connect((dst_ip, dst_port))
        self.sock = sock
        self.sent_packets = 0
        self.sent_bytes = 0

    @property
    def burst_bytes(self) -> int:
        """The bucket depth in wire bytes; reserve at least this as ``burst_bytes``."""
        return self.bucket.burst_bytes

    @property
    def shaping_interval(self) -> float:
        """``Ts`` in seconds."""
        return self.bucket.shaping_interval_ns / 1e9

    def wait(self, length: int) -> None:
        """Sleeps until ``length`` payload bytes may go; their tokens are then spent."""
        while True:
            now = self._clock()
            if self.bucket.try_send(length, now):
                return
            delay = self.bucket.due_ns(length) - now
            if delay > 0:
                self._sleep(delay / 1e9)

    def send(self, payload: Union[bytes, bytearray, memoryview]) -> int:
        """Waits for the bucket, then sends ``payload``; returns the bytes sent."""
        self.wait(len(payload))
        n = self.sock.send(payload)
        self.sent_packets += 1
        self.sent_bytes += n
        return n

    def close(self) -> None:
        """Closes the socket."""
        self.sock.close()

    def __enter__(self) -> "Sender":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
