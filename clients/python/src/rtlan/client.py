"""A client for rtcd's Unix socket (docs/rtcd.md § Client protocol).

The socket speaks the management envelope of docs/mgmt.md as JSON lines: a request is one object
``{"op": ..., "id": ..., <fields>}``, a reply ``{"id": ..., "ok": true, "data": {...}}`` or
``{"id": ..., "ok": false, "error": {"code": ..., "message": ..., ...}}``, and events
``{"event": ...}`` may arrive between replies. Field names here are exactly the protocol's
(``rate_bps``, ``burst_bytes``, ``max_packet``, ``delay_us``, ...); the JSON Schema of every line is
in docs/schema/. Failures raise :class:`RtcdError` carrying the snake_case ``code``.
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import dataclass
from typing import Any, Dict, List, Optional

DEFAULT_SOCKET = "/run/rtlan/rtcd.sock"
"""Where rtcd listens unless told otherwise (``RTLAN_RTCD_SOCKET`` overrides it here too)."""

MAX_LINE = 65536
"""rtcd's longest line in bytes (docs/rtcd.md)."""


class RtcdError(Exception):
    """A failure reply, or a broken connection to the daemon.

    ``code`` is the protocol's snake_case code (``not_registered``, ``local_admission``,
    ``refused``, ...); ``detail`` holds the error object's other fields (``conn``, ``hop``,
    ``requested_bps``, ...). Local failures use ``disconnected`` (the daemon closed the socket)
    and ``protocol`` (a line that is not what the protocol says).
    """

    def __init__(self, code: str, message: str, detail: Optional[Dict[str, Any]] = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.detail: Dict[str, Any] = dict(detail or {})


@dataclass(frozen=True)
class Opened:
    """The ``opened`` reply: where to send and what the path promised."""

    conn: int
    """The handle for :meth:`Client.close`."""
    proxy_ip: str
    """The address to send the stream to."""
    proxy_mac: Optional[str]
    """The proxy MAC (``None`` under central-only admission)."""
    id: int
    """The connection id on the host's link."""
    hops: int
    """Switches on the path."""
    delay_bound_us: Optional[int]
    """The end-to-end delay bound in µs, if the path gave one."""


@dataclass(frozen=True)
class Connection:
    """One entry of a ``list`` reply."""

    conn: int
    id: int
    proxy_ip: str
    dst_ip: str
    dst_port: int
    src_port: int
    rate_bps: int
    phase: str
    """``admitting``, ``opening``, ``open`` or ``closing``."""
    delay_bound_us: Optional[int]
    owner_pid: Optional[int]


def _int(data: Dict[str, Any], key: str) -> int:
    value = data.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise RtcdError("protocol", f"field {key!r} is not an integer: {value!r}")
    return value


def _opt_int(data: Dict[str, Any], key: str) -> Optional[int]:
    return None if data.get(key) is None else _int(data, key)


def _str(data: Dict[str, Any], key: str) -> str:
    value = data.get(key)
    if not isinstance(value, str):
        raise RtcdError("protocol", f"field {key!r} is not a string: {value!r}")
    return value


class Client:
    """One connection to rtcd; the daemon releases its reservations when it is closed.

    Requests are sent one at a time and each waits for its reply (matched by ``id``); events
    that arrive meanwhile are kept in :attr:`events` in arrival order. Use as a context manager.
    """

    def __init__(self, path: Optional[str] = None, timeout: Optional[float] = 30.0) -> None:
        """Connects to ``path`` (default ``$RTLAN_RTCD_SOCKET`` or :data:`DEFAULT_SOCKET`).

        ``timeout`` bounds each wait for a reply in seconds (``open`` waits for the whole path).
        """
        self.path = path or os.environ.get("RTLAN_RTCD_SOCKET") or DEFAULT_SOCKET
        self.events: List[Dict[str, Any]] = []
        self._next_id = 1
        self._buffer = b""
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.settimeout(timeout)
        try:
            self._sock.connect(self.path)
        except OSError:
            self._sock.close()
            raise

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close_socket()

    def close_socket(self) -> None:
        """Closes the socket: the daemon releases every connection this client opened."""
        self._sock.close()

    def _read_line(self) -> bytes:
        while b"\n" not in self._buffer:
            chunk = self._sock.recv(MAX_LINE)
            if not chunk:
                raise RtcdError("disconnected", f"rtcd at {self.path} closed the connection")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line

    def request(self, op: str, **fields: Any) -> Dict[str, Any]:
        """Sends ``op`` with ``fields`` and returns the reply's ``data``; raises on failure."""
        rid = self._next_id
        self._next_id += 1
        line = json.dumps({"op": op, "id": rid, **fields}, separators=(",", ":")) + "\n"
        self._sock.sendall(line.encode())
        while True:
            raw = self._read_line()
            try:
                msg = json.loads(raw)
            except ValueError as e:
                raise RtcdError("protocol", f"reply is not JSON: {e}") from None
            if not isinstance(msg, dict):
                raise RtcdError("protocol", "reply is not an object")
            if "event" in msg:
                self.events.append(msg)
                continue
            if msg.get("id") not in (rid, None):
                continue  # a reply to someone else's id cannot happen: we send one at a time
            if msg.get("ok") is True:
                data = msg.get("data")
                if not isinstance(data, dict):
                    raise RtcdError("protocol", "reply without a data object")
                return data
            err = msg.get("error")
            if not isinstance(err, dict):
                raise RtcdError("protocol", "failure without an error object")
            detail = {k: v for k, v in err.items() if k not in ("code", "message")}
            raise RtcdError(str(err.get("code")), str(err.get("message")), detail)

    def register(self, pid: Optional[int] = None) -> int:
        """``register``: must come first; returns the PID the daemon registered."""
        data = self.request("register") if pid is None else self.request("register", pid=pid)
        return _int(data, "pid")

    def open(
        self,
        dst_ip: str,
        dst_port: int,
        rate_bps: int,
        burst_bytes: int,
        max_packet: int,
        src_port: int = 0,
        shaping: Optional[str] = None,
        delay_us: Optional[int] = None,
    ) -> Opened:
        """``open``: reserves ``rate_bps`` (whole frames) to ``dst_ip:dst_port``.

        ``burst_bytes`` (≥ ``max_packet``) and ``max_packet`` (bytes including the 14-byte
        Ethernet header) as in docs/rtcd.md; ``shaping`` ``"none"``/``"kernel"``; ``delay_us``
        the end-to-end delay required (central admission). Blocks until the path answers.
        """
        fields: Dict[str, Any] = {
            "dst_ip": dst_ip,
            "dst_port": dst_port,
            "src_port": src_port,
            "rate_bps": rate_bps,
            "burst_bytes": burst_bytes,
            "max_packet": max_packet,
        }
        if shaping is not None:
            fields["shaping"] = shaping
        if delay_us is not None:
            fields["delay_us"] = delay_us
        data = self.request("open", **fields)
        mac = data.get("proxy_mac")
        return Opened(
            conn=_int(data, "conn"),
            proxy_ip=_str(data, "proxy_ip"),
            proxy_mac=mac if isinstance(mac, str) else None,
            id=_int(data, "id"),
            hops=_int(data, "hops"),
            delay_bound_us=_opt_int(data, "delay_bound_us"),
        )

    reserve = open
    """Another name for :meth:`open`."""

    def close(self, conn: int) -> int:
        """``close``: releases connection ``conn``; returns its handle."""
        return _int(self.request("close", conn=conn), "conn")

    def list(self, all: bool = False) -> List[Connection]:
        """``list``: this client's connections, or with ``all=True`` the host's (root only)."""
        data = self.request("list", all=True) if all else self.request("list")
        conns = data.get("connections")
        if not isinstance(conns, list):
            raise RtcdError("protocol", "list reply without connections")
        return [
            Connection(
                conn=_int(c, "conn"),
                id=_int(c, "id"),
                proxy_ip=_str(c, "proxy_ip"),
                dst_ip=_str(c, "dst_ip"),
                dst_port=_int(c, "dst_port"),
                src_port=_int(c, "src_port"),
                rate_bps=_int(c, "rate_bps"),
                phase=_str(c, "phase"),
                delay_bound_us=_opt_int(c, "delay_bound_us"),
                owner_pid=_opt_int(c, "owner_pid"),
            )
            for c in conns
            if isinstance(c, dict)
        ]
