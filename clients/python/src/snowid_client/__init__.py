"""snowid_client: a buffered client of snowidd for Python programs.

    from snowid_client import Client
    with Client(["http://127.0.0.1:8080"], agent="billing") as client:
        order_id = client.next()

AsyncClient is the same for asyncio (`await client.next()`). Standard
library only; Python 3.9 and later. See Client, AsyncClient, the errors in
errors.py and decode.py.
"""

from __future__ import annotations

from .aio import AsyncClient
from .client import Client
from .core import Stats
from .decode import DecodedId, Layout, decode
from .errors import FailedPrecondition, InvalidArgument, NotFound, SnowidError, Unavailable
from .options import Options

__all__ = [
    "AsyncClient",
    "Client",
    "DecodedId",
    "FailedPrecondition",
    "InvalidArgument",
    "Layout",
    "NotFound",
    "Options",
    "SnowidError",
    "Stats",
    "Unavailable",
    "decode",
]
__version__ = "0.2.0"
