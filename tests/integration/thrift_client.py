"""Calls snowidd's Thrift listener with the Python client that Debian's
thrift-compiler generates from proto/thrift/snowflake.thrift, unchanged, and
prints what it got as one JSON object.

    thrift_client.py PORT all    every method, and a refused agent
    thrift_client.py PORT one    one get_id (an ID or the refusal)
"""
import json
import sys

from thrift.Thrift import TApplicationException
from thrift.protocol import TBinaryProtocol
from thrift.transport import TSocket, TTransport

from snowid_snowflake import Snowflake


def refusal(call):
    try:
        return {"id": call()}
    except TApplicationException as e:
        return {"error_type": e.type, "error": e.message}


def main():
    port, mode = int(sys.argv[1]), sys.argv[2]
    socket = TSocket.TSocket("127.0.0.1", port)
    socket.setTimeout(10000)
    transport = TTransport.TFramedTransport(socket)
    client = Snowflake.Client(TBinaryProtocol.TBinaryProtocol(transport))
    transport.open()
    out = {}
    if mode == "all":
        out["worker_id"] = client.get_worker_id()
        out["datacenter_id"] = client.get_datacenter_id()
        out["timestamp"] = client.get_timestamp()
        out["ids"] = [client.get_id("python-client") for _ in range(200)]
        out["bad_agent"] = refusal(lambda: client.get_id("not an agent!"))
        out["empty_agent"] = refusal(lambda: client.get_id(""))
        # The connection stays usable after a refusal.
        out["after"] = client.get_id("python-client")
    else:
        out = refusal(lambda: client.get_id("python-client"))
    transport.close()
    print(json.dumps(out))


main()
