"""Replicated stores in the lab: each member in a namespace of its own,
listening on its own address, started, killed (-9), restarted, paused and
resumed by pid, and asked who leads.

A store kind is a class with: `members` (host names), start(), endpoints()
(the snowidd flag's HOST:PORT list), node_flags() (snowidd's flags for it),
lease_s, kill(m), restart(m), pause(m), resume(m), leader() (a member or
None), logs(), and the data faults it supports (`kinds`): back_up(m) (a
copy of the data directory, taken with the member paused so that the
files agree), wipe(m) and restore(m) (the member killed before, restarted
with an empty data directory or the copy). STORES maps the --store names
to them.

RedisStore: a Redis primary with two replicas and three Sentinels (snowid
finds the primary through Sentinel), a Sentinel beside each redis-server in
the member's namespace, leader() the primary the Sentinels name.

PostgresStore (postgres_store.py): a primary, a synchronous and an
asynchronous standby, failed over by the harness as an operator does it;
kill() of the primary promotes a standby (and says so: its return value,
None for the other stores), promote_async() promotes the asynchronous one
and returns {"member": the old primary, "failover": what was done},
healed() (after a cut) re-points what could not be re-pointed during it.

MariadbStore (mariadb_store.py): a primary, a semi-sync and an asynchronous
replica, failed over the same way; the nodes reach the primary on a service
address that moves with it; restart(m) may rebuild the member.
"""

import json
import os
import shutil
import socket
import time
import urllib.request

from netlab import wait_until

ZOOKEEPER_JAR = "/usr/share/java/zookeeper.jar"


class _Members:
    """What every store does with its member processes."""

    def __init__(self, lab, workdir, count):
        self.lab, self.workdir = lab, workdir
        self.members = ["m%d" % (i + 1) for i in range(count)]
        self.procs = {}
        for m in self.members:
            lab.add_host(m)
            os.makedirs(self.data_dir(m), exist_ok=True)

    def data_dir(self, member):
        return os.path.join(self.workdir, member + "-data")

    def log_path(self, member):
        return os.path.join(self.workdir, member + ".log")

    def spawn(self, member):
        self.procs[member] = self.lab.spawn(member, self.argv(member), self.log_path(member))

    def start(self, timeout=60.0):
        for m in self.members:
            self.spawn(m)
        if not wait_until(lambda: all(self.serving(m) for m in self.members), timeout, 0.2):
            raise RuntimeError("%s did not serve within %.0f s; %s" % (
                type(self).__name__, timeout, self.logs()))

    def kill(self, member):
        self.procs[member].kill()

    def restart(self, member):
        if self.procs[member].alive():
            return
        self.spawn(member)

    def pause(self, member):
        self.procs[member].signal(19)  # SIGSTOP

    def resume(self, member):
        self.procs[member].signal(18)  # SIGCONT

    def logs(self, tail=3000):
        return "\n".join("-- %s (%s):\n%s" % (m, self.log_path(m), self.procs[m].log()[-tail:])
                         for m in self.members if m in self.procs)

    def backup_dir(self, member):
        return self.data_dir(member) + ".backup"

    def back_up(self, member):
        self.pause(member)
        try:
            shutil.rmtree(self.backup_dir(member), ignore_errors=True)
            shutil.copytree(self.data_dir(member), self.backup_dir(member))
        finally:
            self.resume(member)


class EtcdStore(_Members):
    """Three etcd members (Debian's etcd-server), peer and client URLs on the
    member's own address; etcd's own heartbeat (100 ms) and election timeout
    (1 s): with the 50/500 ms of tests/support/etcd_process.cc a machine at
    a load average of 100 kept electing leaders and no node kept its claim."""

    name = "etcd"
    lease_s = 2
    CLIENT, PEER = 2379, 2380
    # A member restarted on an older copy of its data is meant to stop with a
    # panic (its raft log would end below what the leader knows it
    # committed), so etcd's data fault here is the one operators meet: a
    # member loses its disk and is replaced.
    kinds = ("member-wipe",)

    def __init__(self, lab, workdir, count=3):
        super().__init__(lab, workdir, count)
        self.cluster = ",".join("%s=http://%s:%d" % (m, lab.address(m), self.PEER)
                                for m in self.members)
        self.token = "snowid-nemesis-%d" % os.getpid()

    def argv(self, member, state="new"):
        address = self.lab.address(member)
        client = "http://%s:%d" % (address, self.CLIENT)
        peer = "http://%s:%d" % (address, self.PEER)
        return [shutil.which("etcd") or "etcd", "--name", member, "--data-dir",
                self.data_dir(member), "--listen-client-urls", client,
                "--advertise-client-urls", client, "--listen-peer-urls", peer,
                "--initial-advertise-peer-urls", peer, "--initial-cluster", self.cluster,
                "--initial-cluster-state", state, "--initial-cluster-token", self.token,
                "--heartbeat-interval", "100", "--election-timeout", "1000",
                "--strict-reconfig-check=false", "--logger", "zap", "--log-level", "warn"]

    def endpoints(self):
        return ",".join("%s:%d" % (self.lab.address(m), self.CLIENT) for m in self.members)

    def node_flags(self):
        return ["--coordinator", "etcd", "--etcd-endpoints", self.endpoints()]

    def _call(self, member, path, body, timeout=2.0):
        request = urllib.request.Request(
            "http://%s:%d%s" % (self.lab.address(member), self.CLIENT, path),
            data=json.dumps(body).encode(), method="POST")
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            return json.loads(reply.read())

    def _replace(self, other, peer):
        """Through `other`: the member at `peer` removed (if listed) and added
        again, each call retried for up to 10 s (a cluster that just lost a
        member may refuse to reconfigure for a few seconds)."""
        deadline = time.monotonic() + 10.0
        while True:
            try:
                listed = self._call(other, "/v3/cluster/member/list", {})["members"]
                old = [m["ID"] for m in listed if peer in m.get("peerURLs", [])]
                for member_id in old:
                    self._call(other, "/v3/cluster/member/remove", {"ID": member_id})
                self._call(other, "/v3/cluster/member/add", {"peerURLs": [peer]})
                return True
            except (OSError, ValueError, KeyError):
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.5)

    def wipe(self, member):
        """Replaces the (killed) member as after a lost disk: removed from the
        cluster, its data deleted, added again, started to join the others.
        Without a member that does so, it is only restarted on its data;
        returns what was done."""
        peer = "http://%s:%d" % (self.lab.address(member), self.PEER)
        for other in [m for m in self.members if m != member and self.procs[m].alive()]:
            if not self._replace(other, peer):
                continue
            shutil.rmtree(self.data_dir(member), ignore_errors=True)
            self.procs[member] = self.lab.spawn(member, self.argv(member, "existing"),
                                                self.log_path(member))
            return "replaced (asked %s)" % other
        self.restart(member)
        return "not replaced: no member did; restarted on its data"

    def _status(self, member, timeout=1.0):
        request = urllib.request.Request(
            "http://%s:%d/v3/maintenance/status" % (self.lab.address(member), self.CLIENT),
            data=b"{}", method="POST")
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            return json.loads(reply.read())

    def serving(self, member):
        try:
            status = self._status(member)
            return int(status.get("leader", 0)) != 0
        except (OSError, ValueError):
            return False

    def leader(self):
        for m in self.members:
            try:
                status = self._status(m, 0.5)
                if status["leader"] == status["header"]["member_id"]:
                    return m
            except (OSError, ValueError, KeyError):
                continue
        return None


class ZooKeeperStore(_Members):
    """A three-server ZooKeeper ensemble (Debian's zookeeper + java), the
    configuration of tests/support/zookeeper_process.cc (tickTime 200 ms,
    maxSessionTimeout 60 s) with every port on the server's own address."""

    name = "zookeeper"
    lease_s = 3  # the ZooKeeper nodes' lease in the chaos tests
    kinds = ("member-wipe", "member-restore")
    TICK_MS = 200
    CLIENT, QUORUM, ELECTION = 2181, 2888, 3888

    def __init__(self, lab, workdir, count=3):
        super().__init__(lab, workdir, count)
        servers = "".join("server.%d=%s:%d:%d\n" % (i + 1, lab.address(m), self.QUORUM,
                                                      self.ELECTION)
                          for i, m in enumerate(self.members))
        for i, m in enumerate(self.members):
            with open(self.config(m), "w") as f:
                f.write("tickTime=%d\ninitLimit=50\nsyncLimit=10\ndataDir=%s\nclientPort=%d\n"
                        "clientPortAddress=%s\nmaxSessionTimeout=60000\n"
                        "admin.enableServer=false\n4lw.commands.whitelist=srvr,ruok\n"
                        "preAllocSize=4096\n%s" % (self.TICK_MS, self.data_dir(m), self.CLIENT,
                                                   lab.address(m), servers))
            with open(os.path.join(self.data_dir(m), "myid"), "w") as f:
                f.write("%d\n" % (i + 1))

    def config(self, member):
        return os.path.join(self.workdir, member + ".cfg")

    def _replace_data(self, member, source):
        data = self.data_dir(member)
        for entry in os.listdir(data):
            if entry != "myid":
                shutil.rmtree(os.path.join(data, entry), ignore_errors=True)
        if source:
            for entry in os.listdir(source):
                if entry != "myid":
                    shutil.copytree(os.path.join(source, entry), os.path.join(data, entry))
        self.spawn(member)

    def wipe(self, member):
        """Restarts the (killed) server with nothing but its myid: it
        rejoins and the leader sends it everything."""
        self._replace_data(member, None)
        return "wiped"

    def restore(self, member):
        """Restarts the (killed) server on the copy back_up() took."""
        self._replace_data(member, self.backup_dir(member))
        return "restored the copy of the run's start"

    def argv(self, member):
        return [shutil.which("java") or "java", "-Xmx192m", "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1", "-Dzookeeper.jmx.log4j.disable=true", "-cp",
                ZOOKEEPER_JAR, "org.apache.zookeeper.server.quorum.QuorumPeerMain",
                self.config(member)]

    def endpoints(self):
        return ",".join("%s:%d" % (self.lab.address(m), self.CLIENT) for m in self.members)

    def node_flags(self):
        return ["--coordinator", "zookeeper", "--zookeeper-endpoints", self.endpoints(),
                "--zookeeper-tick-ms", str(self.TICK_MS)]

    def _mode(self, member, timeout=1.0):
        try:
            with socket.create_connection((self.lab.address(member), self.CLIENT),
                                          timeout=timeout) as s:
                s.sendall(b"srvr")
                answer = b""
                while True:
                    chunk = s.recv(4096)
                    if not chunk:
                        break
                    answer += chunk
        except OSError:
            return ""
        for line in answer.decode(errors="replace").splitlines():
            if line.startswith("Mode: "):
                return line[6:].strip()
        return ""

    def serving(self, member):
        return self._mode(member) in ("leader", "follower")

    def leader(self):
        for m in self.members:
            if self._mode(m, 0.5) == "leader":
                return m
        return None


def _resp(address, port, *command, timeout=1.0):
    """One Redis command over a new connection; the reply (bytes, int, list,
    or an exception for an error reply). OSError when unreachable."""
    with socket.create_connection((address, port), timeout=timeout) as s:
        s.settimeout(timeout)
        out = b"*%d\r\n" % len(command)
        for part in command:
            part = str(part).encode()
            out += b"$%d\r\n%s\r\n" % (len(part), part)
        s.sendall(out)
        reader = s.makefile("rb")

        def read():
            line = reader.readline()
            if not line.endswith(b"\r\n"):
                raise OSError("connection closed mid-reply")
            kind, rest = line[:1], line[1:-2]
            if kind == b"+":
                return rest
            if kind == b"-":
                return RuntimeError(rest.decode(errors="replace"))
            if kind == b":":
                return int(rest)
            if kind == b"$":
                return None if int(rest) < 0 else reader.read(int(rest) + 2)[:-2]
            if kind == b"*":
                return None if int(rest) < 0 else [read() for _ in range(int(rest))]
            raise OSError("unexpected reply %r" % line)

        return read()


class RedisStore(_Members):
    """A Redis primary (m1 at the start) with two replicas (Debian's
    redis-server, persistence as tests/support/redis_process.cc has it:
    appendonly yes, appendfsync always, no RDB snapshots), and three
    Sentinels, one beside each redis-server in the member's namespace (a
    cut of a member cuts its Sentinel too; a member fault — kill, pause,
    wipe — hits only the redis-server). Each server runs from a config file
    of its own, so the REPLICAOF and CONFIG REWRITE a Sentinel sends on a
    failover are what a restart reads (a server restarted on its start-up
    arguments would come back as a primary of its own). down-after 1200 ms,
    failover-timeout 3000 ms: a failover takes 2-4 s, hence the nodes'
    3 s lease (as ZooKeeper's)."""

    name = "redis"
    lease_s = 3
    # A wiped server comes back empty and must come back as a replica; the
    # copy of the run's start (member-restore) would be thrown away by the
    # full resync a replica does, so it tests nothing more.
    kinds = ("member-wipe",)
    PORT, SENTINEL_PORT = 6379, 26379
    MASTER = "snowid"
    DOWN_AFTER_MS, FAILOVER_TIMEOUT_MS = 1200, 3000

    def __init__(self, lab, workdir, count=3):
        super().__init__(lab, workdir, count)
        self.sentinels = {}
        primary = lab.address(self.members[0])
        for m in self.members:
            address = lab.address(m)
            with open(self.config(m), "w") as f:
                f.write("port %d\nbind %s\ndir %s\nsave \"\"\nappendonly yes\n"
                        "appendfsync always\ndaemonize no\nlogfile \"\"\nprotected-mode no\n"
                        "replica-announce-ip %s\n" % (self.PORT, address, self.data_dir(m),
                                                      address))
                if m != self.members[0]:
                    f.write("replicaof %s %d\n" % (primary, self.PORT))
            with open(self.sentinel_config(m), "w") as f:
                f.write("port %d\nbind %s\ndaemonize no\nlogfile \"\"\nprotected-mode no\ndir %s\n"
                        "sentinel resolve-hostnames no\nsentinel announce-ip %s\n"
                        "sentinel monitor %s %s %d 2\n"
                        "sentinel down-after-milliseconds %s %d\n"
                        "sentinel failover-timeout %s %d\n"
                        "sentinel parallel-syncs %s 2\n" % (
                            self.SENTINEL_PORT, address, self.workdir, address, self.MASTER,
                            primary, self.PORT, self.MASTER, self.DOWN_AFTER_MS, self.MASTER,
                            self.FAILOVER_TIMEOUT_MS, self.MASTER))

    def config(self, member):
        return os.path.join(self.workdir, member + ".conf")

    def sentinel_config(self, member):
        return os.path.join(self.workdir, member + "-sentinel.conf")

    def sentinel_log(self, member):
        return os.path.join(self.workdir, member + "-sentinel.log")

    def argv(self, member):
        return [shutil.which("redis-server") or "redis-server", self.config(member)]

    def start(self, timeout=60.0):
        for m in self.members:
            self.spawn(m)
        for m in self.members:
            self.sentinels[m] = self.lab.spawn(
                m, [shutil.which("redis-server") or "redis-server", self.sentinel_config(m),
                    "--sentinel"], self.sentinel_log(m))
        if not wait_until(self._ready, timeout, 0.2):
            raise RuntimeError("Redis and its Sentinels were not ready within %.0f s; %s" % (
                timeout, self.logs()))

    def _ready(self):
        """The replicas in sync with the primary, and every Sentinel knowing
        the primary, both replicas and the two other Sentinels."""
        for m in self.members[1:]:
            if b"master_link_status:up" not in self._call(m, "INFO", "replication"):
                return False
        for m in self.members:
            try:
                fields = _resp(self.lab.address(m), self.SENTINEL_PORT, "SENTINEL", "MASTER",
                               self.MASTER)
            except OSError:
                return False
            if not isinstance(fields, list):
                return False
            info = dict(zip(fields[::2], fields[1::2]))
            if info.get(b"num-slaves") != b"2" or info.get(b"num-other-sentinels") != b"2":
                return False
        return True

    def _call(self, member, *command):
        try:
            reply = _resp(self.lab.address(member), self.PORT, *command)
        except OSError:
            return b""
        return reply if isinstance(reply, bytes) else b""

    def serving(self, member):
        return self._call(member, "PING") == b"PONG"

    def endpoints(self):
        return ",".join("%s:%d" % (self.lab.address(m), self.SENTINEL_PORT)
                        for m in self.members)

    def node_flags(self):
        return ["--coordinator", "redis", "--redis-sentinels", self.endpoints(),
                "--redis-sentinel-master", self.MASTER]

    def named_primary(self):
        """The member most Sentinels that answer name as the primary (None
        if none answers)."""
        by_address = {self.lab.address(m): m for m in self.members}
        votes = {}
        for m in self.members:
            try:
                reply = _resp(self.lab.address(m), self.SENTINEL_PORT, "SENTINEL",
                              "get-master-addr-by-name", self.MASTER, timeout=0.5)
            except OSError:
                continue
            if isinstance(reply, list) and reply and isinstance(reply[0], bytes):
                named = by_address.get(reply[0].decode())
                if named:
                    votes[named] = votes.get(named, 0) + 1
        return max(votes, key=votes.get) if votes else None

    def leader(self):
        return self.named_primary()

    def wipe(self, member):
        """Restarts the (killed) server on an empty data directory, from its
        config file. A primary that lost its data must not come back before
        the Sentinels have promoted another member (as a primary, empty, its
        replicas would copy its empty data set): if the Sentinels still name
        it, this waits up to 20 s for a failover. The Sentinels then turn it
        into a replica of the new primary. Returns what was done."""
        waited = ""
        if self.named_primary() == member:
            began = time.monotonic()
            moved = wait_until(lambda: self.named_primary() not in (member, None), 20.0, 0.2)
            waited = "; waited %.1f s for a failover%s" % (
                time.monotonic() - began, "" if moved else " (none: restarted as named primary)")
        shutil.rmtree(self.data_dir(member), ignore_errors=True)
        os.makedirs(self.data_dir(member), exist_ok=True)
        self.spawn(member)
        return "wiped" + waited

    def logs(self, tail=3000):
        text = super().logs(tail)
        for m in self.members:
            if m in self.sentinels:
                text += "\n-- %s sentinel (%s):\n%s" % (m, self.sentinel_log(m),
                                                       self.sentinels[m].log()[-tail:])
        return text


import postgres_store  # noqa: E402 (it builds on _Members above)
from mariadb_store import MariadbStore, missing as _mariadb_missing  # noqa: E402

STORES = {"etcd": EtcdStore, "zookeeper": ZooKeeperStore, "redis": RedisStore,
          "postgres": postgres_store.PostgresStore, "mariadb": MariadbStore}


def missing(kind):
    """What the store kind needs and this machine lacks ("" if nothing)."""
    if kind == "etcd" and not shutil.which("etcd"):
        return "etcd is not installed (Debian package etcd-server)"
    if kind == "zookeeper" and (not shutil.which("java") or not os.access(ZOOKEEPER_JAR, os.R_OK)):
        return "java or ZooKeeper is missing (Debian package zookeeper)"
    if kind == "redis" and not shutil.which("redis-server"):
        return "redis-server is not installed (Debian package redis-server)"
    if kind == "postgres":
        return postgres_store.missing()
    if kind == "mariadb":
        return _mariadb_missing()
    return ""
