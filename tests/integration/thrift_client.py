"""Calls snowidd's Thrift listener with the Python client that Debian's
thrift-compiler generates from proto/thrift/snowflake.thrift, unchanged, and
prints what it got as one JSON object.

    thrift_client.py [--tls-ca FILE] PORT MODE ...
    (--tls-ca: over TLS, trusting FILE, with TSSLSocket)

    thrift_client.py PORT all          every method, and a refused agent
    thrift_client.py PORT one          one get_id (an ID or the refusal)
    thrift_client.py PORT auth TOKEN   authenticate with TOKEN (snowid's own
                                       method), then one get_id (an ID or
                                       the refusal of either)

Exits 3 if the server refused or closed the connection before answering
(say, all its slots are taken).
"""
import json
import ssl
import sys

from thrift.Thrift import TApplicationException
from thrift.protocol import TBinaryProtocol
from thrift.transport import TSocket, TSSLSocket, TTransport
from thrift.transport.TTransport import TTransportException

from snowid_snowflake import Snowflake


def refusal(call):
    try:
        return {"id": call()}
    except TApplicationException as e:
        return {"error_type": e.type, "error": e.message}


def main():
    args = sys.argv[1:]
    ca = None
    if args[:1] == ["--tls-ca"]:
        ca, args = args[1], args[2:]
    sys.argv = sys.argv[:1] + args
    port, mode = int(sys.argv[1]), sys.argv[2]
    if ca:
        context = ssl.create_default_context(cafile=ca)
        socket = TSSLSocket.TSSLSocket("127.0.0.1", port, ssl_context=context,
                                       server_hostname="localhost")
    else:
        socket = TSocket.TSocket("127.0.0.1", port)
    socket.setTimeout(10000)
    transport = TTransport.TFramedTransport(socket)
    client = Snowflake.Client(TBinaryProtocol.TBinaryProtocol(transport))
    transport.open()
    out = {}
    if mode == "auth":
        try:
            client.authenticate(sys.argv[3])
            out = refusal(lambda: client.get_id("python-client"))
        except TApplicationException as e:
            out = {"error_type": e.type, "error": e.message}
    elif mode == "all":
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


try:
    main()
except (TTransportException, ConnectionError, ssl.SSLError) as e:
    print(json.dumps({"transport_error": str(e)}))
    sys.exit(3)
