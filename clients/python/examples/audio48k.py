#!/usr/bin/env python3
"""Stream audio-like packets over an rtlan reservation, or receive and report loss and jitter.

    audio48k.py send --to 198.18.0.2:5004 [--seconds 10] [--samples-per-packet 1]
                     [--socket /run/rtlan/rtcd.sock] [--no-reserve] [--json]
    audio48k.py recv --port 5004 [--seconds 12] [--json]

A 48 kHz stream of stereo 16-bit samples (4 bytes per sample frame). With
``--samples-per-packet 1`` (default) every sample frame is its own packet: 48,000 packets/s,
the "48 kHz packet rate". ``--samples-per-packet 48`` batches 1 ms of audio per packet
(1,000 packets/s), which is how audio over IP (AES67) usually runs. Each payload starts with a
sequence number and the send time (rtlan.receiver.HEADER) so the receiver can count loss and
RFC 3550 jitter. The sender reserves ``rate_bps`` = packets/s × wire bytes per packet × 8 (whole
frames, as rtcd counts) with ``burst_bytes`` = the shaper's bucket, and shapes with RTTR's token
bucket (shaping interval `--shaping-interval`, default 10 ms). It prints what it achieved: CPython may not keep up with 48,000
packets/s on a slow or loaded host (docs/python.md has the measured numbers).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Optional

from rtlan import Client, Receiver, RtcdError, Sender, wire_bytes
from rtlan.receiver import stamp
from rtlan.sender import burst_for

SAMPLE_RATE = 48_000
BYTES_PER_SAMPLE_FRAME = 4  # stereo, 16 bit
HEADER_BYTES = 16


def send(args: argparse.Namespace) -> int:
    host, _, port_s = args.to.rpartition(":")
    port = int(port_s)
    pps = SAMPLE_RATE / args.samples_per_packet
    payload_len = HEADER_BYTES + args.samples_per_packet * BYTES_PER_SAMPLE_FRAME
    max_packet = payload_len + 42
    # Headroom over the audio rate: a late wake-up (a loaded host) forfeits tokens, and a
    # reservation of exactly the audio rate could never catch the audio clock up again.
    rate_bps = int(pps * wire_bytes(payload_len) * 8 * (1 + args.headroom)) + 1
    burst = burst_for(rate_bps, args.shaping_interval, max_packet)
    client: Optional[Client] = None
    dst = host
    if not args.no_reserve:
        client = Client(args.socket)
        client.register()
        try:
            opened = client.open(host, port, rate_bps=rate_bps, burst_bytes=burst,
                                 max_packet=max_packet)
        except RtcdError as e:
            print(f"audio48k: reservation refused: {e.code}: {e.message}", file=sys.stderr)
            return 2
        dst = opened.proxy_ip
    sender = Sender(dst, port, rate_bps, max_packet=max_packet, shaping_interval=args.shaping_interval)
    buf = bytearray(payload_len)
    start = time.monotonic_ns()
    end = start + round(args.seconds * 1e9)
    seq = 0
    late_max = 0
    while True:
        due = start + seq * 1_000_000_000 * args.samples_per_packet // SAMPLE_RATE  # audio clock
        now = time.monotonic_ns()
        if due >= end:
            break
        if due > now:
            time.sleep((due - now) / 1e9)
        else:
            late_max = max(late_max, now - due)
        stamp(buf, seq, time.monotonic_ns())
        sender.send(buf)
        seq += 1
    elapsed = (time.monotonic_ns() - start) / 1e9
    report = {"packets": seq, "seconds": round(elapsed, 3),
              "packets_per_s": round(seq / elapsed, 1), "target_packets_per_s": pps,
              "payload_bytes": payload_len, "rate_bps": rate_bps, "burst_bytes": burst,
              "max_lateness_ms": round(late_max / 1e6, 3)}
    print(json.dumps(report) if args.json else
          f"sent {seq} packets in {elapsed:.3f} s = {seq / elapsed:.0f}/s "
          f"(target {pps:.0f}/s), {payload_len}-byte payloads, reserved {rate_bps} bit/s, "
          f"behind the audio clock by up to {late_max / 1e6:.3f} ms")
    sender.close()
    if client is not None:
        client.close_socket()
    return 0


def recv(args: argparse.Namespace) -> int:
    with Receiver(args.port) as r:
        s = r.run(args.seconds, idle=args.idle)
    span = ((s.last_ns or 0) - (s.first_ns or 0)) / 1e9
    report = {"packets": s.packets, "lost": s.lost, "duplicates": s.duplicates,
              "reordered": s.reordered, "jitter_us": round(s.jitter_ns / 1e3, 1),
              "seconds": round(span, 3),
              "packets_per_s": round(s.packets / span, 1) if span > 0 else 0.0}
    print(json.dumps(report) if args.json else
          f"received {s.packets} packets in {span:.3f} s, lost {s.lost}, "
          f"jitter {s.jitter_ns / 1e3:.1f} µs (RFC 3550)")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("send")
    s.add_argument("--to", required=True, help="receiver IP:PORT")
    s.add_argument("--seconds", type=float, default=10.0)
    s.add_argument("--samples-per-packet", type=int, default=1)
    s.add_argument("--socket", default=None, help="rtcd's socket")
    s.add_argument("--no-reserve", action="store_true", help="send to --to without rtcd")
    s.add_argument("--shaping-interval", type=float, default=0.010,
                   help="the token bucket's Ts in seconds (default 0.010)")
    s.add_argument("--headroom", type=float, default=0.05,
                   help="reserve this share above the audio rate (default 0.05)")
    s.add_argument("--json", action="store_true")
    r = sub.add_parser("recv")
    r.add_argument("--port", type=int, required=True)
    r.add_argument("--seconds", type=float, default=12.0)
    r.add_argument("--idle", type=float, default=1.0, help="stop after this long without data")
    r.add_argument("--json", action="store_true")
    args = p.parse_args()
    return send(args) if args.cmd == "send" else recv(args)


if __name__ == "__main__":
    sys.exit(main())
