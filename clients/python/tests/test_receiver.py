"""Receiver statistics: loss, duplicates, reordering, RFC 3550 jitter."""

from __future__ import annotations

import socket

from rtlan import Receiver, ReceiverStats
from rtlan.receiver import stamp


def packet(seq: int, sent: int) -> bytes:
    buf = bytearray(64)
    stamp(buf, seq, sent)
    return bytes(buf)


def test_loss_duplicates_and_reordering() -> None:
    s = ReceiverStats()
    for seq in [0, 1, 3, 2, 2, 6]:
        s.record(packet(seq, seq * 1000), seq * 1000 + 50)
    assert s.packets == 6 and s.payload_bytes == 6 * 64
    assert (s.expected, s.lost, s.duplicates, s.reordered) == (7, 2, 1, 1)
    assert s.jitter_ns == 0.0  # constant transit


def test_jitter_follows_rfc3550() -> None:
    s = ReceiverStats()
    s.record(packet(0, 0), 100)
    s.record(packet(1, 1000), 1300)  # transit 300 vs 100: D = 200
    assert s.jitter_ns == 200 / 16
    s.record(packet(2, 2000), 2300)  # D = 0
    assert s.jitter_ns == 200 / 16 - (200 / 16) / 16


def test_short_payloads_are_counted_only() -> None:
    s = ReceiverStats()
    s.record(b"abc", 10)
    s.record(b"defg", 20)
    assert (s.packets, s.expected, s.lost) == (2, 0, 0)
    assert s.rate_bps() == 7 * 8 * 1e9 / 10


def test_receives_over_loopback() -> None:
    with Receiver(0, "127.0.0.1") as r:
        tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        for seq in range(10):
            tx.sendto(packet(seq, 0), r.address)
        tx.close()
        stats = r.run(5.0, idle=0.2)
        assert (stats.packets, stats.lost) == (10, 0)
        assert r.receive(0.01) is None
