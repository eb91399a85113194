"""The Client against a fake rtcd in-process: requests as docs/rtcd.md names them, replies,
events between replies, failures as RtcdError with the snake_case code."""

from __future__ import annotations

import json
import os
import socket
import tempfile
import threading
from typing import Any, Dict, Iterator, List

import pytest

from rtlan import Client, RtcdError


class FakeRtcd:
    """Answers like crates/linux/src/rtcd/json.rs (the envelope of docs/mgmt.md)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.requests: List[Dict[str, Any]] = []
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(path)
        self.listener.listen(1)
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        conn, _ = self.listener.accept()
        registered = False
        conns: Dict[int, Dict[str, Any]] = {}
        with conn, conn.makefile("rwb") as f:
            for raw in f:
                def reply(msg: Dict[str, Any]) -> None:
                    f.write(json.dumps(msg).encode() + b"\n")
                    f.flush()

                def fail(rid: Any, code: str, message: str, **extra: Any) -> None:
                    reply({"id": rid, "ok": False,
                           "error": {"code": code, "message": message, **extra}})

                try:
                    req = json.loads(raw)
                except ValueError:
                    fail(None, "bad_request", "not JSON")
                    continue
                self.requests.append(req)
                rid, op = req.get("id"), req.get("op")
                if op == "register":
                    registered = True
                    reply({"id": rid, "ok": True,
                           "data": {"reply": "registered", "pid": req.get("pid", 4242)}})
                elif op == "garbage":
                    f.write(b"{not json\n")
                    f.flush()
                elif op == "hangup":
                    return
                elif not registered and op != "list":
                    fail(rid, "not_registered", "register first", conn=None)
                elif op == "open":
                    if req["rate_bps"] > 50_000_000:
                        fail(rid, "local_admission", "not enough bandwidth on the host's link",
                             conn=None, requested_bps=req["rate_bps"], available_bps=50_000_000)
                        continue
                    if req["dst_port"] == 9:
                        fail(rid, "refused", "switch refused", conn=7, hop=1,
                             reason="bandwidth", switch_ip="198.18.255.1")
                        continue
                    c = len(conns) + 1
                    conns[c] = req
                    reply({"event": "interrupted", "conn": 99, "reason": "link_down",
                           "message": "the host's link is down"})
                    reply({"id": rid, "ok": True,
                           "data": {"reply": "opened", "conn": c, "proxy_ip": "198.19.0.16",
                                    "proxy_mac": "02:52:54:4c:00:10", "id": 16, "hops": 1,
                                    "delay_bound_us": None}})
                elif op == "list":
                    reply({"id": rid, "ok": True, "data": {"reply": "list", "connections": [
                        {"conn": c, "id": 16, "proxy_ip": "198.19.0.16",
                         "dst_ip": r["dst_ip"], "dst_port": r["dst_port"],
                         "src_port": r["src_port"], "rate_bps": r["rate_bps"], "phase": "open",
                         "delay_bound_us": 900, "owner_pid": 4242}
                        for c, r in conns.items()]}})
                elif op == "close":
                    if req["conn"] not in conns:
                        fail(rid, "unknown_connection", "no such connection", conn=req["conn"])
                        continue
                    del conns[req["conn"]]
                    reply({"id": rid, "ok": True, "data": {"reply": "closed", "conn": req["conn"]}})
                else:
                    fail(rid, "bad_request", f"unknown op {op}")


@pytest.fixture
def rtcd() -> Iterator[FakeRtcd]:
    with tempfile.TemporaryDirectory() as d:
        yield FakeRtcd(os.path.join(d, "rtcd.sock"))


def test_a_session_as_documented(rtcd: FakeRtcd) -> None:
    with Client(rtcd.path, timeout=5) as c:
        assert c.register() == 4242
        assert c.register(pid=77) == 77
        o = c.open("198.18.0.2", 5004, rate_bps=1_000_000, burst_bytes=3028, max_packet=1514,
                   delay_us=2000, shaping="none")
        assert (o.conn, o.proxy_ip, o.proxy_mac, o.id, o.hops, o.delay_bound_us) == (
            1, "198.19.0.16", "02:52:54:4c:00:10", 16, 1, None)
        assert c.events == [{"event": "interrupted", "conn": 99, "reason": "link_down",
                             "message": "the host's link is down"}]
        [listed] = c.list()
        assert (listed.conn, listed.dst_port, listed.rate_bps, listed.phase, listed.owner_pid) == (
            1, 5004, 1_000_000, "open", 4242)
        assert c.close(1) == 1
        assert c.list() == []
    open_req = rtcd.requests[2]
    assert open_req == {"op": "open", "id": 3, "dst_ip": "198.18.0.2", "dst_port": 5004,
                        "src_port": 0, "rate_bps": 1_000_000, "burst_bytes": 3028,
                        "max_packet": 1514, "shaping": "none", "delay_us": 2000}
    assert rtcd.requests[0] == {"op": "register", "id": 1}


def test_failures_raise_with_the_code_and_detail(rtcd: FakeRtcd) -> None:
    with Client(rtcd.path, timeout=5) as c:
        with pytest.raises(RtcdError) as e:
            c.open("198.18.0.2", 5004, 1000, 3028, 1514)
        assert e.value.code == "not_registered" and e.value.detail == {"conn": None}
        c.register()
        with pytest.raises(RtcdError) as e:
            c.reserve("198.18.0.2", 5004, 60_000_000, 3028, 1514)
        assert e.value.code == "local_admission"
        assert e.value.detail["requested_bps"] == 60_000_000
        assert e.value.detail["available_bps"] == 50_000_000
        with pytest.raises(RtcdError) as e:
            c.open("198.18.0.2", 9, 1000, 3028, 1514)
        assert (e.value.code, e.value.detail["hop"], e.value.detail["reason"]) == (
            "refused", 1, "bandwidth")
        with pytest.raises(RtcdError) as e:
            c.close(5)
        assert e.value.code == "unknown_connection"
        with pytest.raises(RtcdError) as e:
            c.request("fly")
        assert e.value.code == "bad_request"
        with pytest.raises(RtcdError) as e:
            c.request("garbage")
        assert e.value.code == "protocol"
        with pytest.raises(RtcdError) as e:
            c.request("hangup")
        assert e.value.code == "disconnected"


def test_no_daemon_is_an_os_error() -> None:
    with tempfile.TemporaryDirectory() as d:
        with pytest.raises(FileNotFoundError):
            Client(os.path.join(d, "none.sock"))
