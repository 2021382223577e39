"""PostgreSQL in the lab (stores.py's interface): streaming replication
with a synchronous and an asynchronous standby, failed over the way an
operator (or Patroni) does it.

Three members, each a postmaster (Debian's postgresql 15) in its own
namespace on its own address, port 5432, run as the postgres user
(setpriv, which execs, so the pid is the postmaster's; initdb, the server,
pg_rewind and pg_basebackup refuse root), trust authentication inside the
lab. At the start m1 is the primary (initdb), m2 its synchronous standby
(synchronous_standby_names = 'm2', synchronous_commit = on) and m3 an
asynchronous standby, both copied with pg_basebackup. Every member runs
with wal_log_hints = on and full_page_writes = on (what pg_rewind needs),
fsync = off (as tests/support/postgres_process.cc: a killed process loses
nothing the kernel holds), wal_keep_size 128 MB (a rewound standby finds
the WAL it needs on the new primary), and 5 s wal_sender/receiver
timeouts. The role of a member is its data directory's standby.signal and
the file nemesis.conf (primary_conninfo, synchronous_standby_names) that
postgresql.conf includes, rewritten by this harness as an operator
rewrites the configuration, so a restart reads the role it was given.

The snowidd nodes get one libpq URL naming the three hosts
(postgresql://postgres@m1:5432,m2:5432,m3:5432/postgres), which snowid opens
with target_session_attrs=read-write: libpq tries the hosts in order and
keeps the one that takes writes (a silent host ahead of the primary in the
list eats a whole connection attempt: docs/reliability.md).

Faults on members:
  kill(m)      the member's process tree killed (-9), as its machine dying.
               If it was the primary: failover at once to the synchronous
               standby (pg_ctl promote), or to the asynchronous one if the
               synchronous one is down or paused; the other standby is
               re-pointed at the new primary (stopped, pg_rewind, started
               with the new primary_conninfo) and, once it streams, named
               the new primary's synchronous standby. No standby to
               promote: no failover, the primary comes back on restart.
  promote_async()  the ASYNCHRONOUS standby left LAG_S (3 s, a lease)
               behind (its WAL receiver stopped), the primary killed, and
               that standby promoted (the synchronous one if the
               asynchronous one is down): a new primary that lacks the
               last 3 s of acknowledged writes (the nodes' renewals); the
               synchronous standby, ahead of it, is rewound (its extra
               writes thrown away) and follows it.
  restart(m)   a member that is no longer the primary rejoins as a standby
               of the current one: pg_rewind (which first finishes crash
               recovery), or a fresh pg_basebackup if pg_rewind cannot.
  pause/resume the whole process tree stopped (SIGSTOP) and continued, as
               a frozen VM; never a reason to fail over.
  wipe(m)      the (killed) member's data deleted and copied anew from the
               current primary with pg_basebackup, started as its standby
               (a primary is failed over from when it is killed; with no
               standby to promote it is restarted on its data instead).
Failovers happen only on kills: a cut primary stays the primary (commits
wait for the synchronous standby while it is cut from it), as with an
operator who does not fail over on a network blip.

A rejoin that cannot reach the primary (a cut at that moment) starts the
member as a standby of the new primary anyway (read-only, it can do no
harm, and it is never promoted) and retries the rewind at the next heal or
member event (healed(), which run.py calls after each cut); a member left
without data by a failed copy, or that did not start, is copied anew then.
leader() is the member that answers pg_is_in_recovery() = false. Every
failover and rejoin, with how long its steps took, goes to failovers.log
in the run's directory.
"""

import os
import pwd
import shutil
import signal
import subprocess
import time

import stores
from netlab import SUBNET, wait_until

BIN = "/usr/lib/postgresql/15/bin/"


def _descendants(pid):
    """The pids of every process below `pid` (by ppid, from /proc)."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _lsn(text):
    """A WAL location ("0/403A700") as a number, or None."""
    try:
        high, low = (text or "").split("/")
        return (int(high, 16) << 32) + int(low, 16)
    except ValueError:
        return None


def _signal_all(pids, sig):
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


class PostgresStore(stores._Members):
    name = "postgres"
    lease_s = 3  # a failover (kill, promote, re-point) takes 1-3 s here, as Redis's
    LAG_S = 3.0  # how far behind member-promote-async's standby is: a lease of renewals
    kinds = ("member-wipe", "member-promote-async")
    PORT = 5432

    def __init__(self, lab, workdir, count=3):
        owner = pwd.getpwnam("postgres")
        self.uid, self.gid = owner.pw_uid, owner.pw_gid
        os.chmod(workdir, 0o711)  # the postgres user reaches its data directories
        super().__init__(lab, workdir, count)
        for m in self.members:
            os.chown(self.data_dir(m), self.uid, self.gid)
            os.chmod(self.data_dir(m), 0o700)
        self.primary = self.members[0]
        self.sync = self.members[1]
        self.upstream = {m: self.primary for m in self.members[1:]}  # whom each standby follows
        self.upstream[self.primary] = None
        self.paused = set()
        self.stale = set()  # standbys to rewind at the next chance (a rejoin that failed)
        self.rebuild = set()  # members without usable data, to copy anew at the next chance
        self.down = set()  # members killed by a fault that has not ended
        self.history = []  # (time, what) of every failover and rejoin, for logs()

    # -- helpers ---------------------------------------------------------

    def _as_postgres(self, argv):
        return ["setpriv", "--reuid=%d" % self.uid, "--regid=%d" % self.gid, "--init-groups",
                *argv]

    def _note(self, text):
        line = "%s %s" % (time.strftime("%H:%M:%S", time.gmtime()), text)
        self.history.append(line)
        with open(os.path.join(self.workdir, "failovers.log"), "a") as f:
            f.write(line + "\n")
        return text

    def _conninfo(self, member, extra=""):
        return "host=%s port=%d user=postgres dbname=postgres connect_timeout=2%s" % (
            self.lab.address(member), self.PORT, extra)

    def psql(self, member, sql, timeout=3.0):
        """`sql` on `member` from the harness (the clients' namespace): its
        output, or None if the member did not answer."""
        try:
            done = subprocess.run([BIN + "psql", "-X", "-q", "-A", "-t", "-d",
                                   self._conninfo(member), "-c", sql],
                                  capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    def _run(self, member, argv, timeout=60.0):
        """argv run as postgres in `member`'s namespace: (ok, output)."""
        status, out = self.lab.run(member, self._as_postgres(argv), timeout)
        return status == 0, out.strip()

    def _write_role(self, member, upstream, sync=""):
        """nemesis.conf and standby.signal of a member: a standby of
        `upstream`, or (upstream None) a primary naming `sync`."""
        data = self.data_dir(member)
        with open(os.path.join(data, "nemesis.conf"), "w") as f:
            if upstream:
                f.write("primary_conninfo = '%s'\n" % self._conninfo(
                    upstream, " application_name=%s" % member))
            f.write("synchronous_standby_names = '%s'\nsynchronous_commit = on\n" % sync)
        os.chown(os.path.join(data, "nemesis.conf"), self.uid, self.gid)
        signal_file = os.path.join(data, "standby.signal")
        if upstream:
            open(signal_file, "w").close()
            os.chown(signal_file, self.uid, self.gid)
        elif os.path.exists(signal_file):
            os.unlink(signal_file)

    # In postgresql.conf, not on the command line: pg_rewind's crash recovery
    # (postgres --single) reads only the file, and without wal_keep_size its
    # end-of-recovery checkpoint recycles the WAL pg_rewind then needs.
    SETTINGS = ("fsync = off\nwal_log_hints = on\nfull_page_writes = on\n"
                "wal_keep_size = 128MB\nmax_connections = 60\nshared_buffers = 16MB\n"
                "wal_sender_timeout = 5s\nwal_receiver_timeout = 5s\n"
                "wal_retrieve_retry_interval = 500ms\nlog_line_prefix = '%m [%p] '\n"
                "unix_socket_directories = ''\ninclude_if_exists = 'nemesis.conf'\n")

    def argv(self, member):
        return self._as_postgres([
            BIN + "postgres", "-D", self.data_dir(member), "-p", str(self.PORT),
            "-c", "listen_addresses=" + self.lab.address(member),
            "-c", "cluster_name=" + member])

    def _alive(self, member):
        return member in self.procs and self.procs[member].alive()

    def _up(self, member):
        return self._alive(member) and member not in self.paused

    # -- start -------------------------------------------------------------

    def start(self, timeout=60.0):
        first = self.primary
        ok, out = self._run(first, [BIN + "initdb", "-D", self.data_dir(first), "-U", "postgres",
                                    "-A", "trust", "--no-sync", "--no-locale", "-E", "UTF8",
                                    "--data-checksums", "--no-instructions"])
        if not ok:
            raise RuntimeError("initdb failed: " + out)
        with open(os.path.join(self.data_dir(first), "postgresql.conf"), "a") as f:
            f.write(self.SETTINGS)
        with open(os.path.join(self.data_dir(first), "pg_hba.conf"), "a") as f:
            f.write("host all all {0}.0/24 trust\nhost replication all {0}.0/24 trust\n"
                    .format(SUBNET))
        self._write_role(first, None, self.sync)
        self.spawn(first)
        if not wait_until(lambda: self.psql(first, "SELECT 1") == "1", timeout, 0.2):
            raise RuntimeError("the PostgreSQL primary did not serve within %.0f s; %s" % (
                timeout, self.logs()))
        for m in self.members[1:]:
            if not self._base_backup(m, first):
                raise RuntimeError("pg_basebackup of %s failed; %s" % (m, self.logs()))
            self._write_role(m, first)
            self.spawn(m)
        if not wait_until(lambda: self._streaming(first) == {self.members[1]: "sync",
                                                             self.members[2]: "async"},
                          timeout, 0.2):
            raise RuntimeError("the standbys did not stream within %.0f s (%s); %s" % (
                timeout, self._streaming(first), self.logs()))

    def _streaming(self, primary):
        """{application_name: sync_state} of the standbys streaming from
        `primary` ({} if it does not answer)."""
        out = self.psql(primary, "SELECT application_name, sync_state FROM pg_stat_replication "
                        "WHERE state = 'streaming'", timeout=2.0)
        return dict(line.split("|", 1) for line in (out or "").splitlines() if "|" in line)

    def _has_data(self, member):
        return os.path.exists(os.path.join(self.data_dir(member), "PG_VERSION"))

    def _start_standby(self, member, primary):
        """Started as a standby of `primary`, or (no data left after a
        failed copy) left down and copied anew at the next chance."""
        self.upstream[member] = primary
        if not self._has_data(member):
            self.rebuild.add(member)
            return False
        self._write_role(member, primary)
        self.spawn(member)
        return True

    def _base_backup(self, member, source):
        data = self.data_dir(member)
        shutil.rmtree(data, ignore_errors=True)
        os.makedirs(data)
        os.chown(data, self.uid, self.gid)
        os.chmod(data, 0o700)
        ok, out = self._run(member, [BIN + "pg_basebackup", "-D", data, "-X", "stream", "-c",
                                     "fast", "--no-sync", "-d", self._conninfo(source)], 30.0)
        if not ok:
            self._note("pg_basebackup of %s from %s failed: %s" % (member, source, out[-300:]))
        return ok

    def endpoints(self):
        return ",".join("%s:%d" % (self.lab.address(m), self.PORT) for m in self.members)

    def url(self):
        return "postgresql://postgres@%s/postgres" % self.endpoints()

    def node_flags(self):
        return ["--coordinator", "postgres", "--postgres-url", self.url()]

    def serving(self, member):
        return self.psql(member, "SELECT 1", timeout=1.0) == "1"

    # -- processes ---------------------------------------------------------

    def _tree(self, member):
        proc = self.procs.get(member)
        if proc is None or not proc.alive():
            return []
        return [proc.pid] + _descendants(proc.pid)

    def _kill_tree(self, member):
        tree = self._tree(member)
        _signal_all(tree, signal.SIGCONT)
        _signal_all(tree, signal.SIGKILL)
        if member in self.procs:
            self.procs[member].kill()

    def _stop(self, member):
        """A fast shutdown (SIGINT to the postmaster), -9 after 10 s."""
        proc = self.procs.get(member)
        if proc is None or not proc.alive():
            return
        tree = self._tree(member)
        proc.signal(signal.SIGINT)
        try:
            proc.popen.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        _signal_all(tree, signal.SIGKILL)
        proc.kill()

    def pause(self, member):
        self._note("%s paused" % member)
        self.paused.add(member)
        _signal_all(self._tree(member), signal.SIGSTOP)

    def resume(self, member):
        self._note("%s resumed" % member)
        self.paused.discard(member)
        _signal_all(self._tree(member), signal.SIGCONT)
        self._settle()

    def kill(self, member):
        was_primary = member == self.primary
        self.down.add(member)
        self._kill_tree(member)
        if not was_primary:
            self._note("%s killed (a standby)" % member)
            return None
        return self._failover(member, prefer_sync=True)

    def promote_async(self):
        """The asynchronous standby falls behind (its WAL receiver stopped:
        primary_conninfo emptied and reloaded) for LAG_S, while the nodes go
        on renewing on the primary; then the primary is killed and that
        standby promoted: a new primary whose records are LAG_S old. Returns
        the fault's runtime targets: "member" (the old primary) and
        "failover" (what was done)."""
        old = self.primary
        lagging = [m for m in self.members if m not in (old, self.sync) and self._up(m)
                   and m not in self.stale][:1]
        for m in lagging:
            with open(os.path.join(self.data_dir(m), "nemesis.conf"), "w") as f:
                f.write("primary_conninfo = ''\nsynchronous_standby_names = ''\n")
            self.psql(m, "SELECT pg_reload_conf()")
        if lagging:
            time.sleep(self.LAG_S)
        self.down.add(old)
        self._kill_tree(old)
        done = self._failover(old, prefer_sync=False)
        for m in lagging:
            if m != self.primary:  # not promoted: made to follow again
                self.stale.add(m)
        self._settle()
        return {"member": old, "failover": ("%s left %.0f s behind; " % (
            lagging[0], self.LAG_S) if lagging else "") + done}

    # -- failover ------------------------------------------------------------

    def _failover(self, old, prefer_sync):
        standbys = [m for m in self.members if m != old]
        asynchronous = [m for m in standbys if m != self.sync]
        order = ([self.sync] if self.sync in standbys else []) + asynchronous
        if not prefer_sync:
            order.reverse()
        # A standby that answers (one just started may not have its pid file
        # yet) and follows the primary (not one started unrewound after a
        # rejoin failed, whose history may have forked from the primary's).
        candidates = [m for m in order if self._up(m) and m not in self.stale
                      and self.psql(m, "SELECT pg_is_in_recovery()") == "t"]
        if not candidates:
            return self._note("%s killed; no standby up to promote: no failover" % old)
        # What each standby had received when the primary died: a promoted one
        # behind another lacks writes the primary may have acknowledged.
        received = {m: _lsn(self.psql(m, "SELECT pg_last_wal_replay_lsn()")) for m in candidates}
        failed = []
        for new in candidates:
            began = time.monotonic()
            # The server removes standby.signal itself as it leaves recovery
            # (and stops if the file is gone by then): the role is written after.
            ok, out = self._run(new, [BIN + "pg_ctl", "-D", self.data_dir(new), "-w", "-t", "20",
                                      "promote"], 30.0)
            if ok or self.psql(new, "SELECT pg_is_in_recovery()") == "f":
                break
            failed.append("pg_ctl promote of %s failed: %s" % (new, out[-300:]))
        else:
            return self._note("%s killed; %s" % (old, "; ".join(failed)))
        self._write_role(new, None, "")
        # Until a checkpoint, the new primary's control file still names the
        # old timeline, and pg_rewind against it would find nothing to do
        # (pg_rewind's documentation asks for this CHECKPOINT).
        self.psql(new, "CHECKPOINT", timeout=20.0)
        kind = "synchronous" if new == self.sync else "asynchronous"
        self.primary, self.sync = new, None
        self.upstream[new] = None
        self.upstream[old] = None  # a former primary: rewound when it rejoins
        promoted = time.monotonic() - began
        behind = max([lsn - received[new] for lsn in received.values()
                      if lsn is not None and received[new] is not None], default=0)
        self._settle()
        return self._note("%s killed; %s%s standby %s promoted in %.1f s (%s); %s" % (
            old, "".join(f + "; " for f in failed), kind, new, promoted,
            "%d bytes of WAL behind the other standby" % behind if behind else
            "as far as any standby", self.describe()))

    def describe(self):
        return "primary %s, synchronous standby %s, standbys %s" % (
            self.primary, self.sync or "none", ",".join(
                "%s<-%s%s" % (m, self.upstream.get(m), "(stale)" if m in self.stale else "")
                for m in self.members if m != self.primary) or "none")

    def _rejoin(self, member):
        """`member` (stopped, or a live standby to stop) made a standby of
        the current primary: pg_rewind, or pg_basebackup if that fails; if
        the primary cannot be reached, started as its standby unrewound and
        left stale."""
        primary = self.primary
        began = time.monotonic()
        self._stop(member)
        stopped = time.monotonic()
        data = self.data_dir(member)
        # A standby killed in recovery: pg_rewind's single-user crash
        # recovery refuses standby mode, so it finishes recovery as a
        # primary would (on its own timeline), and is rewound from there.
        if os.path.exists(os.path.join(data, "standby.signal")):
            os.unlink(os.path.join(data, "standby.signal"))
        if primary in self.paused:  # it would hang: tried again once it is resumed
            ok, out = False, "the primary %s is paused" % primary
        else:
            ok, out = self._run(member, [BIN + "pg_rewind", "--no-sync", "-D", data,
                                         "--source-server", self._conninfo(primary)], 30.0)
        how = "pg_rewind"
        rewound = time.monotonic()
        if not ok:
            reachable = (primary not in self.paused and self.psql(primary, "SELECT 1") == "1"
                         and self._run(member, [BIN + "psql", "-X", "-A", "-t", "-d",
                                                self._conninfo(primary), "-c", "SELECT 1"],
                                       5.0)[0])
            if reachable and self._base_backup(member, primary):
                how = "pg_basebackup (pg_rewind: %s)" % out.splitlines()[-1][-160:] if out \
                    else "pg_basebackup"
            else:
                how = None
        if not ok:
            self._note("%s: pg_rewind from %s failed:\n%s" % (member, primary, out[-2000:]))
        self._start_standby(member, primary)
        if how and not self._comes_up(member) and not self._alive(member):
            # It stopped on the rewound copy (its recovery point lies on no
            # timeline of the primary's): copied anew. (One still starting
            # after 15 s, on a loaded machine, is left to finish.)
            self._note("%s did not start after %s: %s" % (
                member, how, self.procs[member].log()[-600:]))
            self._stop(member)
            how = "pg_basebackup (after %s, it did not start)" % how.split(" ")[0] \
                if self._base_backup(member, primary) else None
            if self._start_standby(member, primary) and how:
                self._comes_up(member)
        if member in self.rebuild:
            return self._note("%s: no data left after a failed copy from %s: down until it "
                              "can be copied" % (member, primary))
        if how is None:
            self.stale.add(member)
            return self._note("%s: primary %s unreachable, started as its standby unrewound "
                              "(%s)" % (member, primary, out.splitlines()[-1][-160:] if out
                                        else "no output"))
        self.stale.discard(member)
        return self._note("%s rejoined as a standby of %s by %s (stop %.1f s, pg_rewind %.1f s, "
                          "start %.1f s)" % (member, primary, how, stopped - began,
                                             rewound - stopped, time.monotonic() - rewound))

    def _comes_up(self, member, timeout=15.0):
        """True once `member` answers; False if it exits or stays silent."""
        wait_until(lambda: not self._alive(member) or
                   self.psql(member, "SELECT 1", timeout=1.0) == "1", timeout, 0.2)
        return self._alive(member) and self.psql(member, "SELECT 1", timeout=1.0) == "1"

    def _settle(self):
        """Every live standby follows the primary; the primary names a
        synchronous standby once one streams from it."""
        if not self._up(self.primary):
            return
        for m in sorted(self.rebuild - self.down):
            if not self._alive(m) and self._base_backup(m, self.primary):
                self.rebuild.discard(m)
                self.stale.discard(m)
                self._start_standby(m, self.primary)
                self._comes_up(m)
                self._note("%s copied anew from %s by pg_basebackup and started" % (
                    m, self.primary))
        for m in self.members:
            if m != self.primary and self._up(m) and (
                    self.upstream.get(m) != self.primary or m in self.stale):
                self._rejoin(m)
            elif (m != self.primary and not self._alive(m) and m not in self.down | self.rebuild
                  and m in self.procs):
                self._note("%s is down without a fault (it did not start)" % m)
                self._rejoin(m)
        if self.sync is None:
            candidates = [m for m in self.members if m != self.primary and self._up(m)
                          and m not in self.stale]
            if not candidates:
                return
            streaming = {}
            wait_until(lambda: streaming.update(self._streaming(self.primary)) or
                       any(m in streaming for m in candidates), 5.0, 0.2)
            chosen = [m for m in candidates if m in streaming]
            if chosen:
                self.sync = chosen[0]
                self._write_role(self.primary, None, self.sync)
                self.psql(self.primary, "SELECT pg_reload_conf()")
                self._note("%s named synchronous standby of %s" % (self.sync, self.primary))

    def restart(self, member):
        self.down.discard(member)
        if self._alive(member):
            return
        self._note("%s restarting" % member)
        if member == self.primary:
            self.spawn(member)
            self._settle()
            return
        if member in self.rebuild:
            pass  # copied anew by _settle below
        elif self.upstream.get(member) == self.primary and member not in self.stale:
            self.spawn(member)  # a standby killed and restarted: it follows as before
        else:
            self._rejoin(member)
        self._settle()

    def healed(self):
        """After a cut ends: a rejoin that could not reach the primary is
        tried again."""
        self._settle()

    def wipe(self, member):
        self.down.discard(member)
        if member == self.primary:
            self.spawn(member)
            self._settle()
            return "not wiped: it is still the primary (no standby was up to promote); " \
                   "restarted on its data"
        if self.primary in self.paused or not self._base_backup(member, self.primary):
            if self._start_standby(member, self.primary):
                self.stale.add(member)
            self._settle()
            return self._note("%s: wipe: no copy from %s (%s)" % (
                member, self.primary, "paused" if self.primary in self.paused
                else "pg_basebackup failed") + (
                "; restarted on its data as a stale standby" if member in self.stale
                else "; down until it can be copied" if member in self.rebuild else ""))
        self.stale.discard(member)
        self._start_standby(member, self.primary)
        self._settle()
        return self._note("%s wiped; copied anew from %s by pg_basebackup" % (
            member, self.primary))

    def leader(self):
        for m in [self.primary] + [m for m in self.members if m != self.primary]:
            if self.psql(m, "SELECT pg_is_in_recovery()", timeout=1.0) == "f":
                return m
        return None

    def logs(self, tail=3000):
        return super().logs(tail) + "\n-- failovers and rejoins:\n" + "\n".join(self.history)


def missing():
    """What running PostgreSQL here needs and this machine lacks ("" if
    nothing; "postgres" in SNOWID_TEST_PRETEND_MISSING pretends it is not
    installed, as tests/support/missing.h reads it)."""
    if "postgres" in os.environ.get("SNOWID_TEST_PRETEND_MISSING", "").split(","):
        return "PostgreSQL 15 is not installed (pretended missing)"
    if not os.path.exists(BIN + "postgres") or not os.path.exists(BIN + "pg_rewind"):
        return "PostgreSQL 15 is not installed (Debian package postgresql)"
    if not shutil.which("setpriv"):
        return "setpriv (util-linux) is not installed"
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        return "there is no postgres user to run PostgreSQL as"
    return ""
