"""Calls snowidd's RESP listener with Python's redis package (Debian's
python3-redis, which speaks RESP2), its default pipeline (a MULTI … EXEC
transaction) included, and prints what it got as one JSON object.

    resp_client.py [--tls-ca FILE] PORT 2 [PASSWORD]

--tls-ca: over TLS (ssl=True), trusting FILE.
"""
import json
import sys

import redis


def main():
    args = sys.argv[1:]
    ca = None
    if args[:1] == ["--tls-ca"]:
        ca, args = args[1], args[2:]
    port = int(args[0])
    password = args[2] if len(args) > 2 else None
    kwargs = {"host": "127.0.0.1", "port": port, "socket_timeout": 10,
              "client_name": "python-redis", "password": password}
    if ca:
        kwargs.update(ssl=True, ssl_ca_certs=ca, ssl_cert_reqs="required")
    client = redis.Redis(**kwargs)
    out = {"ping": client.ping()}
    out["incr"] = [client.incr("py-orders") for _ in range(5)]
    out["incrby"] = client.incrby("py-orders", 10)
    pipe = client.pipeline(transaction=False)
    for _ in range(50):
        pipe.execute_command("SNOWID.ID")
    pipe.execute_command("SNOWID.IDS", 20)
    results = pipe.execute()
    # IDs are bulk strings: redis-py gives bytes, exact whatever their size.
    out["ids"] = [int(x) for x in results[:50]] + [int(x) for x in results[50]]
    # The default pipeline is a transaction: MULTI, the commands, EXEC.
    pipe = client.pipeline()
    pipe.incr("py-tx").incr("py-tx").incrby("py-tx", 3).execute_command("SNOWID.IDS", 2)
    transaction = pipe.execute()
    out["transaction"] = transaction[:3] + [[int(x) for x in transaction[3]]]
    # One command refused while queuing: EXECABORT, and no number is taken.
    pipe = client.pipeline()
    pipe.incr("py-tx").get("py-tx").incr("py-tx")
    try:
        out["aborted"] = pipe.execute()
    except redis.ResponseError as e:
        out["aborted"] = str(e)
    out["after_abort"] = client.incr("py-tx")
    out["exists"] = [client.exists("py-tx", "py-never"), client.type("py-tx").decode(),
                     client.type("py-never").decode(), client.ttl("py-tx"),
                     client.ttl("py-never"), client.pttl("py-tx")]
    try:
        client.execute_command("SNOWID.IDS", 0)
        out["bad_count"] = None
    except redis.ResponseError as e:
        out["bad_count"] = str(e)
    try:
        client.execute_command("FLUSHALL")
        out["unknown"] = None
    except redis.ResponseError as e:
        out["unknown"] = str(e)
    out["after_error"] = int(client.execute_command("SNOWID.ID"))
    print(json.dumps(out))


main()
