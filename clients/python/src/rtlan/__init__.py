"""Python client for rtlan: reserve through the host daemon, shape UDP, receive.

- :class:`Client` speaks rtcd's JSON-lines protocol (docs/rtcd.md, schema in docs/schema/).
- :class:`Sender` shapes UDP to a reservation with RTTR's token bucket (docs/rttr.md).
- :class:`Receiver` receives and measures loss and jitter of a sequenced stream.
"""

from .client import Client, Connection, Opened, RtcdError
from .receiver import Receiver, ReceiverStats
from .sender import Sender
from .shaper import TokenBucket, wire_bytes

__all__ = [
    "Client",
    "Connection",
    "Opened",
    "Receiver",
    "ReceiverStats",
    "RtcdError",
    "Sender",
    "TokenBucket",
    "wire_bytes",
]
