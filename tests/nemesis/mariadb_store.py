"""MariaDB in the nemesis, run the way tests/support/mariadb_process.cc runs
it (mariadbd started directly, no configuration file), failed over the way
an operator, MaxScale or Orchestrator does it.

Three members, each in its own namespace, each with a binary log of its own
(GTID replication, log_slave_updates, gtid_strict_mode): m1 the primary, m2
a semi-sync replica (rpl_semi_sync_master_wait_point AFTER_SYNC, and no
fallback to asynchronous replication: rpl_semi_sync_master_timeout is an
hour, so without its semi-sync replica the primary commits nothing), m3 an
asynchronous replica. Every member may be the primary later: all are
started with the primary's wait point and timeout, the primary with
rpl_semi_sync_master_enabled (on a replica it would hold every transaction
it applies for an acknowledgement of its own: log_slave_updates), a replica
with read_only and (the semi-sync one) rpl_semi_sync_slave_enabled. The
asynchronous replica lags ASYNC_LAG_S (MASTER_DELAY), as one does under load.

The nodes never name a member: their --mysql-url names the service address
(a virtual IP, netlab's move_service()), held by the primary's eth0 and
moved to the promoted member at a failover. Cuts of the network cut the
service address with the member that holds it.

Failover (member-kill, member-wipe of the primary; member-promote-async):
the primary is killed, and a replica is promoted at once: STOP SLAVE
IO_THREAD, what it received applied (MASTER_GTID_WAIT), STOP SLAVE, RESET
SLAVE ALL, read_only off; the service address moves to it; the other live
replica is re-pointed at it (CHANGE MASTER ... MASTER_USE_GTID = slave_pos)
and becomes its semi-sync replica, or, when it holds transactions the new
primary lacks (after the promotion of the asynchronous replica), is rebuilt
from it. member-kill and member-wipe promote the semi-sync replica (every
commit the nodes were told of is on it: AFTER_SYNC); member-promote-async
promotes the asynchronous one as it stands (no wait for what it received),
so it lacks the writes of its lag: a store whose record of the claims and
reservations is not current. The old primary, when its
fault ends, never comes back as it was (its binary log may hold a
transaction nobody acknowledged): it is rebuilt from the new primary and
rejoins as a replica, as operators rebuild a failed primary. A rebuild:
the data directory replaced by a copy of the run's freshly installed one
(accounts, no data), mariadbd started, the snowid database dumped from the
primary (mariadb-dump --single-transaction --gtid --master-data) and
loaded, then CHANGE MASTER and START SLAVE.
"""

import os
import shutil
import subprocess
import time

from netlab import _die_with_parent, wait_until
from stores import _Members

SERVER = "/usr/sbin/mariadbd"
INSTALL = "/usr/bin/mariadb-install-db"
CLIENT = "/usr/bin/mariadb"
DUMP = "/usr/bin/mariadb-dump"
PASSWORD = "snowid-nemesis"


def missing():
    for path, package in ((SERVER, "mariadb-server"), (INSTALL, "mariadb-server"),
                          (CLIENT, "mariadb-client"), (DUMP, "mariadb-client")):
        if not os.access(path, os.X_OK):
            return "%s is not installed (Debian package %s)" % (path, package)
    return ""


def _gtid_seq(position):
    """The (server id, sequence number) of domain 0 in a GTID position
    ("0-1-42,1-2-3"), or (0, 0)."""
    for gtid in position.strip().split(","):
        parts = gtid.strip().split("-")
        if len(parts) == 3 and parts[0] == "0":
            return int(parts[1]), int(parts[2])
    return 0, 0


class MariadbStore(_Members):
    name = "mariadb"
    lease_s = 3
    # member-wipe: the member's data directory is lost; it is rebuilt from
    # the primary and rejoins as a replica. member-promote-async: the
    # primary killed, the asynchronous replica promoted.
    kinds = ("member-wipe", "member-promote-async")
    PORT = 3306
    # The asynchronous replica applies each transaction this long after the
    # primary wrote it (MASTER_DELAY): it lags as one does under load or
    # across a slow link, so that its promotion loses the last writes.
    ASYNC_LAG_S = 2

    def __init__(self, lab, workdir, count=3):
        super().__init__(lab, workdir, count)
        self.service = lab.service_address()
        self.primary = self.members[0]
        # primary, sync (the semi-sync replica) or async
        self.role = {m: "async" for m in self.members}
        self.role[self.members[0]] = "primary"
        self.role[self.members[1]] = "sync"
        self.rebuild = set()  # members to rebuild from the primary at their restart
        self.pending = set()  # replicas to re-point at the primary once they answer
        self.promoted_at = (0, 0)  # the primary's (server id, seq) when promoted
        self.faulted = set()  # members a fault killed, until it ends
        self.events = []  # what the operator did, for logs()

    # -- processes ---------------------------------------------------------

    def template_dir(self):
        return os.path.join(self.workdir, "installed-data")

    def argv(self, member):
        root = ["--user=root"] if os.geteuid() == 0 else []
        role = self.role[member]
        data = self.data_dir(member)
        return [SERVER, "--no-defaults", "--datadir=" + data,
                "--socket=" + os.path.join(self.workdir, member + ".sock"),
                "--pid-file=" + os.path.join(self.workdir, member + ".pid"),
                "--tmpdir=" + self.workdir, "--port=%d" % self.PORT, "--bind-address=0.0.0.0",
                "--skip-name-resolve", "--innodb-buffer-pool-size=32M",
                "--innodb-flush-log-at-trx-commit=2", "--max-connections=60",
                "--server-id=%d" % (self.members.index(member) + 1),
                "--log-bin=binlog", "--relay-log=relay", "--binlog-format=ROW",
                "--log-slave-updates", "--gtid-strict-mode=ON",
                # A replica with it on would hold each transaction it applies
                # until a replica of its own acknowledged it (log_slave_updates).
                "--rpl-semi-sync-master-enabled=%s" % ("ON" if role == "primary" else "OFF"),
                "--rpl-semi-sync-master-wait-point=AFTER_SYNC",
                "--rpl-semi-sync-master-timeout=3600000",
                "--rpl-semi-sync-slave-enabled=%s" % ("ON" if role == "sync" else "OFF"),
                "--slave-net-timeout=4", "--connect-timeout=3",
                *(["--read-only"] if role != "primary" else []), *root]

    def _install_template(self):
        """mariadb-install-db once, the accounts created in it (snowid for
        the nodes, repl for the replicas, admin for the operator), then
        stopped: each member's data directory starts as a copy of it."""
        template = self.template_dir()
        argv = [INSTALL, "--no-defaults", "--datadir=" + template,
                "--auth-root-authentication-method=normal", "--skip-test-db"]
        if os.geteuid() == 0:
            argv.append("--user=root")
        done = subprocess.run(argv, capture_output=True, text=True, timeout=180)
        if done.returncode != 0:
            raise RuntimeError("mariadb-install-db failed: %s%s" % (done.stdout, done.stderr))
        socket_path = os.path.join(self.workdir, "install.sock")
        log = open(os.path.join(self.workdir, "install.log"), "ab")
        server = subprocess.Popen(
            [SERVER, "--no-defaults", "--datadir=" + template, "--socket=" + socket_path,
             "--pid-file=" + os.path.join(self.workdir, "install.pid"), "--skip-networking",
             "--innodb-buffer-pool-size=32M", "--tmpdir=" + self.workdir,
             *(["--user=root"] if os.geteuid() == 0 else [])],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            preexec_fn=_die_with_parent)
        log.close()
        try:
            setup = ("CREATE DATABASE snowid; "
                     "CREATE USER 'snowid'@'%%' IDENTIFIED BY '%s'; "
                     "GRANT ALL ON snowid.* TO 'snowid'@'%%'; "
                     "CREATE USER 'repl'@'%%' IDENTIFIED BY '%s'; "
                     "GRANT REPLICATION SLAVE ON *.* TO 'repl'@'%%'; "
                     "CREATE USER 'admin'@'%%' IDENTIFIED BY '%s'; "
                     "GRANT ALL ON *.* TO 'admin'@'%%' WITH GRANT OPTION;" % (
                         PASSWORD, PASSWORD, PASSWORD))
            client = [CLIENT, "--no-defaults", "--socket=" + socket_path, "-u", "root"]
            if not wait_until(lambda: subprocess.run(client + ["-e", "SELECT 1"],
                                                     capture_output=True).returncode == 0,
                              60.0, 0.2):
                raise RuntimeError("the installing mariadbd did not answer within 60 s")
            done = subprocess.run(client + ["-e", setup], capture_output=True, text=True,
                                  timeout=60)
            if done.returncode != 0:
                raise RuntimeError("creating the accounts: " + done.stderr)
        finally:
            server.terminate()
            try:
                server.wait(timeout=60)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()

    def _fresh_data(self, member):
        shutil.rmtree(self.data_dir(member), ignore_errors=True)
        shutil.copytree(self.template_dir(), self.data_dir(member))

    def start(self, timeout=60.0):
        self._install_template()
        for m in self.members:
            self._fresh_data(m)
            self.spawn(m)
        if not wait_until(lambda: all(self.serving(m) for m in self.members), timeout, 0.2):
            raise RuntimeError("MariaDB did not serve within %.0f s; %s" % (timeout, self.logs()))
        for m in self.members[1:]:
            ok, out = self._follow(m, self.primary)
            if not ok:
                raise RuntimeError("%s did not follow %s: %s" % (m, self.primary, out))
        self.lab.move_service(self.service, self.primary)
        if not wait_until(self._ready, timeout, 0.2):
            raise RuntimeError("the MariaDB replicas were not ready within %.0f s; %s" % (
                timeout, self.logs()))

    def _ready(self):
        """Both replicas replicating and the primary with its semi-sync client."""
        for m in self.members:
            if m != self.primary and self._slave_field(m, "Slave_IO_Running") != "Yes":
                return False
        ok, out = self.sql(self.primary, "SHOW STATUS LIKE 'Rpl_semi_sync_master_clients'")
        return ok and out.split() == ["Rpl_semi_sync_master_clients", "1"]

    # -- SQL ------------------------------------------------------------

    def sql(self, member, statements, timeout=5.0):
        """Runs `statements` on `member` (by its own address, as admin):
        (ok, output or the error)."""
        argv = [CLIENT, "--no-defaults", "-h", self.lab.address(member), "-P", str(self.PORT),
                "-u", "admin", "-p" + PASSWORD, "--batch", "--skip-column-names",
                "--connect-timeout=2", "-e", statements]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return False, "timed out after %.0f s" % timeout
        return done.returncode == 0, done.stdout if done.returncode == 0 else done.stderr.strip()

    def _slave_field(self, member, name):
        argv = [CLIENT, "--no-defaults", "-h", self.lab.address(member), "-P", str(self.PORT),
                "-u", "admin", "-p" + PASSWORD, "--vertical", "--connect-timeout=2", "-e",
                "SHOW SLAVE STATUS"]
        try:
            out = subprocess.run(argv, capture_output=True, text=True, timeout=5.0).stdout
        except subprocess.TimeoutExpired:
            return ""
        for line in out.splitlines():
            key, _, value = line.strip().partition(": ")
            if key == name:
                return value
        return ""

    def _follow(self, member, primary):
        """`member` replicates from `primary` (semi-sync if its role is
        sync), from its own GTID position."""
        sync = self.role[member] == "sync"
        return self.sql(member, "STOP SLAVE; SET GLOBAL rpl_semi_sync_slave_enabled = %s; "
                        "SET GLOBAL rpl_semi_sync_master_enabled = OFF; SET GLOBAL read_only = ON; "
                        "CHANGE MASTER TO MASTER_HOST = '%s', MASTER_PORT = %d, "
                        "MASTER_USER = 'repl', MASTER_PASSWORD = '%s', MASTER_CONNECT_RETRY = 1, "
                        "MASTER_DELAY = %d, MASTER_USE_GTID = slave_pos; START SLAVE" % (
                            "ON" if sync else "OFF", self.lab.address(primary), self.PORT,
                            PASSWORD, 0 if sync else self.ASYNC_LAG_S), timeout=15.0)

    def _connected(self, member, timeout=3.0):
        """(False, the error) if `member`'s replication stops with an error
        within `timeout` s of its START SLAVE: a transaction the primary
        never had, after two failovers while it did not answer, stops it
        (gtid_strict_mode) as soon as it connects."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            errno = self._slave_field(member, "Last_IO_Errno")
            if errno not in ("", "0"):
                return False, "error %s: %s" % (errno, self._slave_field(member, "Last_IO_Error"))
            if self._slave_field(member, "Slave_IO_State").startswith("Waiting for master to send"):
                return True, ""
            time.sleep(0.2)
        return True, ""

    def serving(self, member):
        return self.sql(member, "SELECT 1", timeout=3.0)[0]

    def endpoints(self):
        return "%s:%d" % (self.service, self.PORT)

    def node_flags(self):
        return ["--coordinator", "mysql", "--mysql-url",
                "mysql://snowid:%s@%s:%d/snowid" % (PASSWORD, self.service, self.PORT)]

    def leader(self):
        return self.primary

    def _note(self, text):
        self.events.append("%.3f %s" % (time.time(), text))
        return text

    # -- failover ----------------------------------------------------------

    def _promote(self, member):
        """Makes the replica `member` a primary; (ok, its GTID position
        before it took a write, or the error). The semi-sync replica first
        applies what it received (every commit the primary acknowledged);
        the asynchronous one is promoted as it stands, what it received but
        has not applied yet (its lag) thrown away."""
        if self.role[member] == "sync":
            ok, out = self.sql(member, "STOP SLAVE IO_THREAD", timeout=5.0)
            if not ok:
                return False, out
            received = self._slave_field(member, "Gtid_IO_Pos")
            ok, out = self.sql(member, "SELECT MASTER_GTID_WAIT('%s', 10)" % received,
                               timeout=15.0)
            if not ok or out.strip() != "0":
                return False, "did not apply what it received (%s): %s" % (received,
                                                                           out.strip())
        ok, position = self.sql(member, "STOP SLAVE; RESET SLAVE ALL; "
                                "SET GLOBAL rpl_semi_sync_slave_enabled = OFF; "
                                "SET GLOBAL rpl_semi_sync_master_enabled = ON; "
                                "SELECT @@gtid_binlog_pos", timeout=10.0)
        if not ok:
            return False, position
        ok, out = self.sql(member, "SET GLOBAL read_only = OFF")
        return (ok, position.strip()) if ok else (False, out)

    def _failover(self, old, candidates):
        """After `old` (the primary) died: the first candidate that can be
        promoted becomes the primary, the service address moves to it, the
        other replica follows it (rebuilt if it holds transactions the new
        primary lacks; if it is down or does not answer, when it is
        restarted or resumed), `old` is rebuilt at its restart. Returns
        what was done."""
        for new in candidates:
            if not self.procs[new].alive() or new in self.rebuild:
                continue
            was = {"sync": "the semi-sync replica", "async": "the asynchronous replica"}.get(
                self.role[new], self.role[new])
            ok, position = self._promote(new)
            if not ok:
                self._note("promoting %s failed: %s" % (new, position))
                continue
            self.lab.move_service(self.service, new)
            self.primary = new
            self.promoted_at = _gtid_seq(position)
            self.role[new] = "primary"
            self.role[old] = "async"
            self.rebuild.add(old)
            self.pending.discard(new)
            done = ["%s (%s) promoted at %s, the service address moved to it" % (
                new, was, position)]
            for other in [m for m in self.members if m not in (old, new)]:
                self.role[other] = "sync"
                if other in self.rebuild:
                    done.append("%s to be rebuilt at its restart" % other)
                elif not self.procs[other].alive():
                    self.pending.add(other)
                    done.append("%s (down) to follow it at its restart" % other)
                else:
                    done.append(self._rejoin(other))
            return self._note("; ".join(done))
        return self._note("no replica could be promoted: %s stays the primary" % old)

    def _rejoin(self, member):
        """The replica `member` follows the primary promoted since it last
        replicated: re-pointed if its data is a prefix of the primary's at
        the promotion, rebuilt if it holds more; left pending if it does
        not answer (paused, cut off). Returns what was done."""
        ok, theirs = self.sql(member, "SELECT @@gtid_current_pos", timeout=2.0)
        if not ok:
            self.pending.add(member)
            return "%s unreachable (%s): to follow it when it answers" % (member, theirs)
        self.pending.discard(member)
        server, seq = self.promoted_at
        their_server, their_seq = _gtid_seq(theirs)
        if their_seq < seq or (their_seq, their_server) == (seq, server):
            ok, out = self._follow(member, self.primary)
            if ok:
                ok, out = self._connected(member)
            if ok:
                return "%s at %s follows it" % (member, theirs.strip() or "nothing")
            return self._rebuild(member, "it cannot follow: " + out)
        return self._rebuild(member, "holds %s, beyond %d-%d-%d" % (theirs.strip(), 0, server,
                                                                     seq))

    def kill(self, member):
        """kill -9; the primary's death is a failover (what was done)."""
        self.faulted.add(member)
        self.procs[member].kill()
        if member != self.primary:
            return None
        sync = [m for m in self.members if self.role[m] == "sync"]
        others = [m for m in self.members if m != member and m not in sync]
        return self._failover(member, sync + others)

    def healed(self):
        """After a cut healed: the replicas left pending re-pointed (or
        rebuilt), and a rebuild that failed tried again; what was done, or
        None."""
        done = [self._rejoin(m) for m in sorted(self.pending) if self.procs[m].alive()]
        done += self._retry_rebuilds()
        return self._note("; ".join(done)) if done else None

    def _retry_rebuilds(self):
        """Members whose rebuild failed (left down) and whose fault has
        ended are rebuilt again, as an operator would try again."""
        return [self._rebuild(m, "trying again") for m in sorted(self.rebuild)
                if m not in self.faulted and not self.procs[m].alive()]

    def resume(self, member):
        super().resume(member)
        if member in self.pending:
            self._rejoin(member)

    def promote_async(self):
        """member-promote-async: the primary killed and the asynchronous
        replica promoted (the semi-sync one if no asynchronous one runs).
        Returns {"member": the old primary, "failover": what was done}."""
        old = self.primary
        self.faulted.add(old)
        self.procs[old].kill()
        asynchronous = [m for m in self.members if self.role[m] == "async" and m != old]
        others = [m for m in self.members if m != old and m not in asynchronous]
        return {"member": old, "failover": self._failover(old, asynchronous + others)}

    def restart(self, member):
        self.faulted.discard(member)
        done = self._restart(member)
        again = self._retry_rebuilds()
        return "; ".join([done] + again)

    def _restart(self, member):
        if self.procs[member].alive():
            return "running"
        if member in self.rebuild:
            return self._rebuild(member, "a failed primary")
        self.spawn(member)
        if member not in self.pending:
            return "restarted"
        if not wait_until(lambda: self.serving(member), 30.0, 0.2):
            return self._note("restarted; %s did not serve within 30 s" % member)
        return self._note("restarted; " + self._rejoin(member))

    def wipe(self, member):
        """The (killed) member's data directory lost: rebuilt from the
        primary as a replica. A primary nobody replaced is only restarted
        on its data (there is no other copy to rebuild it from)."""
        self.faulted.discard(member)
        if member == self.primary:
            self.spawn(member)
            return self._note("not wiped: %s is still the primary; restarted on its data" % member)
        return "; ".join([self._rebuild(member, "its data lost")] + self._retry_rebuilds())

    def _rebuild(self, member, why):
        """Replaces `member`'s data with a copy of the primary's, and makes
        it follow the primary. Returns what was done. A rebuild that fails
        leaves the member down, to be rebuilt at its next restart."""
        began = time.monotonic()
        done = self._rebuild_once(member, why)
        if member in self.rebuild:
            self.procs[member].kill()
            done += "; left down"
        return self._note(done + " (%.1f s)" % (time.monotonic() - began))

    def _rebuild_once(self, member, why):
        if member in self.procs:
            self.procs[member].kill()
        self.rebuild.add(member)
        self._fresh_data(member)
        if self.role[member] == "primary":
            self.role[member] = "async"
        self.spawn(member)
        if not wait_until(lambda: self.serving(member), 60.0, 0.2):
            return ("rebuilding %s (%s): it did not serve within 60 s" % (member, why))
        primary = self.lab.address(self.primary)
        try:
            dump = subprocess.run(
                [DUMP, "--no-defaults", "-h", primary, "-P", str(self.PORT), "-u", "admin",
                 "-p" + PASSWORD, "--single-transaction", "--gtid",
                 "--master-data=1", "--databases", "snowid"],
                capture_output=True, text=True, timeout=15)
        except subprocess.TimeoutExpired:
            return ("rebuilding %s (%s): the dump of %s timed out" % (
                member, why, self.primary))
        if dump.returncode != 0:
            return ("rebuilding %s (%s): the dump of %s failed: %s" % (
                member, why, self.primary, dump.stderr.strip()))
        try:
            load = subprocess.run(
                [CLIENT, "--no-defaults", "-h", self.lab.address(member), "-P", str(self.PORT),
                 "-u", "admin", "-p" + PASSWORD, "--connect-timeout=2",
                 "--init-command=SET sql_log_bin = 0"],
                input=dump.stdout, capture_output=True, text=True, timeout=30)
        except subprocess.TimeoutExpired:
            return ("rebuilding %s (%s): loading the dump timed out" % (member, why))
        if load.returncode != 0:
            return ("rebuilding %s (%s): loading the dump failed: %s" % (
                member, why, load.stderr.strip()))
        # Its binary log goes on from where the copy is, as a primary's
        # would: promoted later, it numbers its transactions after it.
        # (a literal: SET GLOBAL gtid_binlog_state = @@gtid_slave_pos hangs)
        ok, out = self.sql(member, "SELECT @@gtid_slave_pos")
        if ok:
            ok, out = self.sql(member, "RESET MASTER; SET GLOBAL gtid_binlog_state = '%s'" %
                               out.strip(), timeout=10.0)
        if not ok:
            return "rebuilding %s (%s): setting its binary log's GTID state failed: %s" % (
                member, why, out)
        self.rebuild.discard(member)
        self.pending.discard(member)
        ok, out = self._follow(member, self.primary)
        return ("%s rebuilt from %s (%s), follows it as the %s replica%s" % (
            member, self.primary, why,
            "semi-sync" if self.role[member] == "sync" else "asynchronous",
            "" if ok else " (CHANGE MASTER failed: %s)" % out))

    def logs(self, tail=3000):
        return super().logs(tail) + "\n-- failovers and rebuilds:\n" + "\n".join(self.events)
