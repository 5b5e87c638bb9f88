"""neonize, imported in one place and with its import-time side effects undone.

Importing neonize 0.5.2 (a) runs ``os.popen("uname -a")`` and never closes the pipe, so
the leaked process and file raise ResourceWarnings later, at some unrelated moment
(errors under ``filterwarnings = error``), and (b) calls ``logging.basicConfig(INFO)``,
which would put a stderr handler on the root logger and print Fetch's own log lines into
the terminal channel. Every module of this package takes neonize names from here.
"""

from __future__ import annotations

import io
import logging
import os
import subprocess
import warnings


def _closed_popen(cmd: str, mode: str = "r", buffering: int = -1) -> io.StringIO:
    # Same output as os.popen for neonize's one read, with the process reaped at once.
    done = subprocess.run(cmd, shell=True, capture_output=True, text=True, check=False)
    return io.StringIO(done.stdout)


_root = logging.getLogger()
_handlers, _level = list(_root.handlers), _root.level
_popen = os.popen
os.popen = _closed_popen  # type: ignore[assignment]  # only while neonize is imported
try:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        from neonize.aioze.client import ClientFactory, NewAClient
        from neonize.events import (
            ClientOutdatedEv,
            ConnectedEv,
            ConnectFailureEv,
            DisconnectedEv,
            KeepAliveRestoredEv,
            KeepAliveTimeoutEv,
            LoggedOutEv,
            MessageEv,
            OfflineSyncCompletedEv,
            PairStatusEv,
            QREv,
            ReceiptEv,
            StreamReplacedEv,
            TemporaryBanEv,
            UndecryptableMessageEv,
        )
        from neonize.proto.Neonize_pb2 import JID, MessageInfo, MessageSource
        from neonize.proto.waE2E.WAWebProtobufsE2E_pb2 import (
            ContextInfo,
            ExtendedTextMessage,
            Message,
        )
        from neonize.utils.enum import ChatPresence, ChatPresenceMedia, ReceiptType
finally:
    os.popen = _popen
for _h in list(_root.handlers):
    if _h not in _handlers:
        _root.removeHandler(_h)
_root.setLevel(_level)
# whatsmeow's Go logs arrive through this logger; below WARNING it logs every frame.
logging.getLogger("neonize.utils.log").setLevel(logging.WARNING)

# Every event type the adapter subscribes to (neonize only forwards subscribed ones).
EVENT_TYPES: tuple[type, ...] = (
    MessageEv,
    ConnectedEv,
    DisconnectedEv,
    KeepAliveTimeoutEv,
    KeepAliveRestoredEv,
    LoggedOutEv,
    TemporaryBanEv,
    StreamReplacedEv,
    ConnectFailureEv,
    ClientOutdatedEv,
    OfflineSyncCompletedEv,
    ReceiptEv,
    PairStatusEv,
    UndecryptableMessageEv,
)

__all__ = [
    "EVENT_TYPES",
    "JID",
    "ChatPresence",
    "ChatPresenceMedia",
    "ClientFactory",
    "ClientOutdatedEv",
    "ConnectFailureEv",
    "ConnectedEv",
    "ContextInfo",
    "DisconnectedEv",
    "ExtendedTextMessage",
    "KeepAliveRestoredEv",
    "KeepAliveTimeoutEv",
    "LoggedOutEv",
    "Message",
    "MessageEv",
    "MessageInfo",
    "MessageSource",
    "NewAClient",
    "OfflineSyncCompletedEv",
    "PairStatusEv",
    "QREv",
    "ReceiptEv",
    "ReceiptType",
    "StreamReplacedEv",
    "TemporaryBanEv",
    "UndecryptableMessageEv",
]
