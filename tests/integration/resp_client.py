"""Calls snowidd's RESP listener with Python's redis package (Debian's
python3-redis, which speaks RESP2) and prints what it got as one JSON object.

    resp_client.py PORT 2 [PASSWORD]
"""
import json
import sys

import redis


def main():
    port = int(sys.argv[1])
    password = sys.argv[3] if len(sys.argv) > 3 else None
    kwargs = {"host": "127.0.0.1", "port": port, "socket_timeout": 10,
              "client_name": "python-redis", "password": password}
    client = redis.Redis(**kwargs)
    out = {"ping": client.ping()}
    out["incr"] = [client.incr("py-orders") for _ in range(5)]
    out["incrby"] = client.incrby("py-orders", 10)
    pipe = client.pipeline(transaction=False)
    for _ in range(50):
        pipe.execute_command("SNOWID.ID")
    pipe.execute_command("SNOWID.IDS", 20)
    results = pipe.execute()
    out["ids"] = results[:50] + [int(x) for x in results[50]]
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
    out["after_error"] = client.execute_command("SNOWID.ID")
    print(json.dumps(out))


main()
