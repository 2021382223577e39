"""snowid_client: a buffered client of snowidd for Python programs.

    from snowid_client import Client
    with Client(["http://127.0.0.1:8080"], agent="billing") as client:
        order_id = client.next()

Standard library only. See Client, the errors in errors.py and decode.py.
"""

from .client import Client, Stats
from .decode import DecodedId, Layout, decode
from .errors import InvalidArgument, NotFound, SnowidError, Unavailable
from .options import Options

__all__ = [
    "Client",
    "DecodedId",
    "InvalidArgument",
    "Layout",
    "NotFound",
    "Options",
    "SnowidError",
    "Stats",
    "Unavailable",
    "decode",
]
__version__ = "0.1.0"
