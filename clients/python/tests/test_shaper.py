"""The token bucket against RTTR's semantics (crates/core/src/shaper/token.rs), virtual time."""

from __future__ import annotations

import random
from typing import List

import pytest

from rtlan import Sender, TokenBucket, wire_bytes
from rtlan.sender import burst_for

MS = 1_000_000


def test_wire_bytes_counts_whole_frames() -> None:
    assert wire_bytes(0) == 84  # padded to the 60-byte minimum
    assert wire_bytes(18) == 84
    assert wire_bytes(19) == 85
    assert wire_bytes(1472) == 1538  # a full 1514-byte frame


def test_burst_is_r_ts_plus_one_datagram_as_in_rust() -> None:
    # The Rust test `shaping_interval_sleeps_once_per_interval` (crates/rtlan/src/rttr/pace.rs).
    assert TokenBucket(8_528_000, 20 * MS, 1000, 0).burst_bytes == 21 * 1066
    # Rounded up: 1 bit/s for 1 ms is a fraction of a byte, one byte of bucket.
    assert TokenBucket(1, MS, 0, 0).burst_bytes == 1 + 84
    assert burst_for(8_528_000, 0.020, 1042) == 21 * 1066


class VirtualClock:
    def __init__(self) -> None:
        self.now = 0
        self.sleeps: List[int] = []

    def clock(self) -> int:
        return self.now

    def sleep(self, seconds: float) -> None:
        ns = round(seconds * 1e9)
        self.sleeps.append(ns)
        self.now += ns


class FakeSocket:
    def __init__(self, clock: VirtualClock) -> None:
        self.clock = clock
        self.sent: List[tuple[int, int]] = []

    def send(self, payload: bytes) -> int:
        self.sent.append((self.clock.now, len(payload)))
        return len(payload)

    def close(self) -> None:
        pass


def greedy(rate: int, ts: float, size: int, count: int) -> tuple[VirtualClock, FakeSocket, Sender]:
    vc = VirtualClock()
    sock = FakeSocket(vc)
    s = Sender("0.0.0.0", 9, rate, max_packet=size + 42, shaping_interval=ts,
               clock=vc.clock, sleep=vc.sleep, sock=sock)  # type: ignore[arg-type]
    for _ in range(count):
        s.send(bytes(size))
    return vc, sock, s


@pytest.mark.parametrize("ts", [0.010, 0.001, 0.0001, 0.0])
def test_greedy_sender_keeps_the_rate_and_the_window_bound(ts: float) -> None:
    rate, size = 10_000_000, 1000
    vc, sock, s = greedy(rate, ts, size, 5000)
    cost = wire_bytes(size)
    # Long run: after the first bucket, exactly r.
    first_after_burst = (s.burst_bytes // cost)
    t0, _ = sock.sent[first_after_burst]
    t1, _ = sock.sent[-1]
    sent_bits = (len(sock.sent) - 1 - first_after_burst) * cost * 8
    assert sent_bits * 1e9 / (t1 - t0) == pytest.approx(rate, rel=1e-3)
    # Every window [a, b] carries at most r·(b − a) + burst.
    times = [t for t, _ in sock.sent]
    for i in range(0, len(times), 37):
        for j in range(i, min(len(times), i + 400)):
            window_bytes = (j - i + 1) * cost
            assert window_bytes * 8 * 1e9 <= rate * (times[j] - times[i]) + s.burst_bytes * 8 * 1e9


@pytest.mark.parametrize("ts", [0.010, 0.001])
def test_an_empty_bucket_is_refilled_at_most_once_per_ts(ts: float) -> None:
    vc, sock, s = greedy(10_000_000, ts, 1000, 3000)
    ts_ns = round(ts * 1e9)
    wakeups = sorted({t for t, _ in sock.sent})
    gaps = [b - a for a, b in zip(wakeups, wakeups[1:])]
    assert min(gaps) >= ts_ns
    # About r·Ts per wake-up: 10 Mbit/s × 1 ms = 1250 bytes ≈ 1.2 datagrams of 1066.
    per_wakeup = len(sock.sent) / len(wakeups)
    assert per_wakeup == pytest.approx(10_000_000 * ts / 8 / 1066, rel=0.1)


def test_late_wakeups_cost_rate_never_conformance() -> None:
    rng = random.Random(4)
    vc = VirtualClock()
    sock = FakeSocket(vc)

    def late_sleep(seconds: float) -> None:
        vc.sleep(seconds)
        vc.now += rng.randrange(0, 3 * MS)

    rate = 5_000_000
    s = Sender("0.0.0.0", 9, rate, max_packet=542, shaping_interval=0.001,
               clock=vc.clock, sleep=late_sleep, sock=sock)  # type: ignore[arg-type]
    for _ in range(3000):
        s.send(bytes(500))
    cost = wire_bytes(500)
    times = [t for t, _ in sock.sent]
    for i in range(0, len(times), 13):
        for j in range(i, min(len(times), i + 300)):
            assert (j - i + 1) * cost * 8 * 1e9 <= rate * (times[j] - times[i]) + s.burst_bytes * 8e9
    achieved = len(times) * cost * 8 * 1e9 / times[-1]
    assert achieved < rate * 1.01


def test_bad_arguments_are_errors() -> None:
    with pytest.raises(ValueError):
        TokenBucket(0, MS, 100, 0)
    with pytest.raises(ValueError):
        TokenBucket(1000, -1, 100, 0)
    b = TokenBucket(1_000_000, MS, 100, 0)
    with pytest.raises(ValueError):
        b.try_send(101, 0)
    with pytest.raises(ValueError):
        Sender("127.0.0.1", 9, 1000, max_packet=42)


def test_tokens_start_full_and_accrue() -> None:
    b = TokenBucket(8_000_000, MS, 1000, 0)  # 1 byte/µs
    assert b.tokens_at(0) == b.burst_bytes == 1000 + 1066
    assert b.try_send(1000, 0) and b.try_send(0, 0)
    assert b.tokens_at(0) == 1000 + 1066 - 1066 - 84
    assert not b.try_send(1000, 0)  # empty: gated for Ts
    assert b.due_ns(1000) == MS  # tokens for 1066 − 916 = 150 bytes accrue at 150 µs; gate 1 ms
    assert not b.try_send(1000, MS - 1)
    assert b.try_send(1000, MS)
