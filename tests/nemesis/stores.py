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

A Redis primary with two replicas and three Sentinels (snowid finds the
primary through Sentinel) is to be the third kind here: hosts r1-r3 for
redis-server (appendonly yes, appendfsync always) and s1-s3 for
`redis-server --sentinel`, leader() the primary Sentinel names.
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


STORES = {"etcd": EtcdStore, "zookeeper": ZooKeeperStore}


def missing(kind):
    """What the store kind needs and this machine lacks ("" if nothing)."""
    if kind == "etcd" and not shutil.which("etcd"):
        return "etcd is not installed (Debian package etcd-server)"
    if kind == "zookeeper" and (not shutil.which("java") or not os.access(ZOOKEEPER_JAR, os.R_OK)):
        return "java or ZooKeeper is missing (Debian package zookeeper)"
    return ""
