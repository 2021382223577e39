"""A network of namespaces for the nemesis: one host a namespace, all joined
to one bridge, and cuts between them made of routes.

    with Lab.create() as lab:
        lab.add_host("n1"); lab.add_host("m1"); lab.add_host("client")
        proc = lab.spawn("m1", ["etcd", ...], log_path)
        lab.partition([["n1"], ["m1"]])      # both directions
        lab.heal()

Layout. A run holds a *slot* (an flock on /run/snowid-nemesis/slot-N.lock,
released by the kernel when the run dies) and names every namespace it
creates "snowid-nemN-<host>". Namespace "snowid-nemN-lab" holds the bridge
br0; each host's namespace holds eth0, the far end of a veth pair whose near
end (v-<host>) is a port of br0, with an address in 10.77.0.0/24. That /24
exists only inside these namespaces: no link reaches the root namespace, so
nothing a run sends can leave the lab. Interface names live inside the
namespaces, so runs in other slots (other tests, other worktrees) never
collide with this one.

Cleaning up. close() (also reached on SIGINT/SIGTERM, which the runner turns
into exceptions, and at interpreter exit) kills every process the lab
started and every process still inside its namespaces, then deletes the
namespaces. A run killed with SIGKILL leaves its namespaces behind; its
children die with it (PR_SET_PDEATHSIG), and the next Lab.create() on the
machine deletes the namespaces of every slot whose lock nobody holds: those
of a dead run, never those of a live one.

Cuts are neighbour entries: in host A, a permanent ARP entry giving host
B's address a MAC address nobody has (02:00:00:00:00:01) sends what A sends
to B into the bridge addressed to no one, so it vanishes silently, as over
a cut cable: no ICMP, no error at A, a TCP connect that times out. B's
packets to A still arrive (a cut is one direction; partition() cuts both).
The lab keeps the set of directed pairs (A cannot reach B) currently cut and
changes the entries to match any new set, so cuts compose: partition(),
one_way(), isolate(), bridge(), and heal(). link_down() takes a host's eth0
down. Why not something else: Debian 12 installs neither nftables nor
iptables, this kernel has no tc classifiers, actions or netem, and a
blackhole route fails the sender at once (EINVAL) instead of dropping;
neighbour entries need only iproute2. One direction cut still breaks TCP
both ways (the handshake needs both); what is one way is whose packets
are lost.

Service addresses. move_service() puts a second address of the /24 (.250
up) on a host's eth0 and moves it to another host, as a virtual IP moves
at a failover: deleted from the old holder, added to the new, and the
neighbour entry for it flushed in every other host (what a gratuitous ARP
would update), so the next packet to it asks again and reaches the new
holder. A cut of a host cuts the service addresses it holds too, and a
service address moved during a cut is cut or not as its new holder is.

Processes start as `ip netns exec NS argv...` (ip execs argv, so the pid is
the program's own) and are killed, paused and resumed by pid.

Needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN) and iproute2.
"""

import ctypes
import errno
import fcntl
import os
import signal
import subprocess
import time

SUBNET = "10.77.0"
LOCK_DIR = "/run/snowid-nemesis"
NAME_PREFIX = "snowid-nem"
SLOTS = 64
NOWHERE = "02:00:00:00:00:01"  # a MAC address no host of the lab has
PR_SET_PDEATHSIG = 1
CLONE_NEWNET = 0x40000000

_libc = ctypes.CDLL(None, use_errno=True)


def _die_with_parent():
    """preexec_fn: the child gets SIGKILL when the thread that spawned it
    ends (spawn only from the main thread)."""
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def missing_prerequisite():
    """What keeps this machine from running a lab ("" if nothing; "netns" in
    SNOWID_TEST_PRETEND_MISSING pretends root is missing, as
    tests/support/missing.h's helpers do for their tools)."""
    if "netns" in os.environ.get("SNOWID_TEST_PRETEND_MISSING", "").split(","):
        return "root is needed for network namespaces (ip netns; pretended missing)"
    if os.geteuid() != 0:
        return "root is needed for network namespaces (ip netns)"
    if subprocess.run(["which", "ip"], capture_output=True).returncode != 0:
        return "ip (iproute2) is not installed"
    return ""


def ip(*args, check=True):
    """Runs `ip ARGS`; raises with ip's message if it fails and `check`."""
    done = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and done.returncode != 0:
        raise RuntimeError("ip %s: %s" % (" ".join(args), done.stderr.strip()))
    return done.stdout


def _namespaces():
    return [line.split()[0] for line in ip("netns", "list").splitlines() if line.strip()]


def _kill_inside(namespace):
    """SIGKILLs every process inside `namespace` (by pid) but this one."""
    for pid in ip("netns", "pids", namespace, check=False).split():
        if int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), signal.SIGKILL)
        except ProcessLookupError:
            pass


def _delete_slot(slot):
    prefix = "%s%d-" % (NAME_PREFIX, slot)
    names = [n for n in _namespaces() if n.startswith(prefix)]
    for name in names:
        _kill_inside(name)
    for name in names:
        ip("netns", "del", name, check=False)
    return names


def _take_lock(slot):
    fd = os.open(os.path.join(LOCK_DIR, "slot-%d.lock" % slot), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        os.close(fd)
        if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return None
        raise
    return fd


def clean_dead_runs():
    """Deletes the namespaces of every slot no live run holds; returns them."""
    os.makedirs(LOCK_DIR, exist_ok=True)
    slots = set()
    for name in _namespaces():
        rest = name[len(NAME_PREFIX):] if name.startswith(NAME_PREFIX) else ""
        digits = rest.split("-", 1)[0]
        if digits.isdigit():
            slots.add(int(digits))
    removed = []
    for slot in sorted(slots):
        fd = _take_lock(slot)
        if fd is None:
            continue  # a live run's
        try:
            removed += _delete_slot(slot)
        finally:
            os.close(fd)
    return removed


class Proc:
    """A process the lab started in a host's namespace."""

    def __init__(self, host, argv, popen, log_path):
        self.host, self.argv, self.popen, self.log_path = host, argv, popen, log_path

    @property
    def pid(self):
        return self.popen.pid

    def alive(self):
        return self.popen.poll() is None

    def signal(self, sig):
        if self.alive():
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass

    def kill(self):
        """SIGKILL (a paused process too) and reap."""
        self.signal(signal.SIGCONT)
        self.signal(signal.SIGKILL)
        try:
            self.popen.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass

    def stop(self, timeout=5.0):
        """SIGTERM, then SIGKILL after `timeout` s; returns the exit status."""
        self.signal(signal.SIGCONT)
        self.signal(signal.SIGTERM)
        try:
            return self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return self.popen.returncode

    def log(self):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""


class Lab:
    """Namespaces on one bridge, cuts between them, processes inside them."""

    def __init__(self, slot, lock_fd):
        self.slot = slot
        self._lock_fd = lock_fd
        self.hosts = {}  # name -> address
        self.services = {}  # service address -> the host that holds it now
        self._down = set()  # hosts whose link is down
        self._cut = set()  # (a, b): a cannot send to b
        self._procs = []
        self._closed = False
        self._own_ns = os.open("/proc/self/ns/net", os.O_RDONLY)  # for close()
        self.lab_ns = self.namespace("lab")
        ip("netns", "add", self.lab_ns)
        ip("-n", self.lab_ns, "link", "set", "lo", "up")
        ip("-n", self.lab_ns, "link", "add", "br0", "type", "bridge")
        ip("-n", self.lab_ns, "link", "set", "br0", "up")

    @classmethod
    def create(cls):
        """A lab in the first free slot, after deleting dead runs' leftovers."""
        clean_dead_runs()
        for slot in range(SLOTS):
            fd = _take_lock(slot)
            if fd is None:
                continue
            _delete_slot(slot)  # a crash of an earlier run in this slot
            try:
                return cls(slot, fd)
            except BaseException:
                _delete_slot(slot)
                os.close(fd)
                raise
        raise RuntimeError("all %d nemesis slots are taken by live runs" % SLOTS)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def namespace(self, host):
        return "%s%d-%s" % (NAME_PREFIX, self.slot, host)

    def add_host(self, name):
        """A namespace for `name` joined to the bridge; returns its address."""
        if name in self.hosts or len(self.hosts) >= 200:
            raise ValueError("host %r exists or the lab is full" % name)
        address = "%s.%d" % (SUBNET, len(self.hosts) + 10)
        ns = self.namespace(name)
        ip("netns", "add", ns)
        self.hosts[name] = address
        near = ("v-" + name)[:15]
        ip("-n", self.lab_ns, "link", "add", near, "type", "veth", "peer", "name", "eth0",
           "netns", ns)
        ip("-n", self.lab_ns, "link", "set", near, "master", "br0", "up")
        ip("-n", ns, "link", "set", "lo", "up")
        ip("-n", ns, "addr", "add", address + "/24", "dev", "eth0")
        ip("-n", ns, "link", "set", "eth0", "up")
        return address

    def address(self, host):
        return self.hosts[host]

    def enter(self, host):
        """Moves the calling thread into `host`'s namespace (threads it starts
        later inherit it), so the harness can probe the lab's addresses."""
        fd = os.open("/run/netns/" + self.namespace(host), os.O_RDONLY)
        try:
            if _libc.setns(fd, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "setns into " + host)
        finally:
            os.close(fd)

    # -- processes -------------------------------------------------------

    def spawn(self, host, argv, log_path, env=None):
        """Starts argv in `host`'s namespace, stdout and stderr appended to
        log_path. Call from the main thread (the child dies with its thread)."""
        log = open(log_path, "ab")
        try:
            popen = subprocess.Popen(["ip", "netns", "exec", self.namespace(host), *argv],
                                     stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                     env=env, preexec_fn=_die_with_parent)
        finally:
            log.close()
        proc = Proc(host, argv, popen, log_path)
        self._procs.append(proc)
        return proc

    def run(self, host, argv, timeout=10.0):
        """Runs argv in `host`'s namespace to its end; returns (status, output)."""
        try:
            done = subprocess.run(["ip", "netns", "exec", self.namespace(host), *argv],
                                  capture_output=True, text=True, timeout=timeout,
                                  preexec_fn=_die_with_parent)
        except subprocess.TimeoutExpired:
            return -1, "timed out after %.0f s" % timeout
        return done.returncode, done.stdout + done.stderr

    # -- cuts --------------------------------------------------------------

    def set_cut(self, pairs):
        """Makes exactly `pairs` ((a, b): a's packets to b are dropped) cut."""
        pairs = {(a, b) for a, b in pairs if a != b}
        for a, b in sorted(self._cut - pairs):
            for address in self.addresses(b):
                ip("-n", self.namespace(a), "neigh", "del", address, "dev", "eth0", check=False)
        for a, b in sorted(pairs - self._cut):
            self._drop(a, b)
        self._cut = pairs

    def _drop(self, a, b):
        for address in self.addresses(b):
            ip("-n", self.namespace(a), "neigh", "replace", address, "lladdr", NOWHERE, "nud",
               "permanent", "dev", "eth0")

    # -- service addresses -------------------------------------------------

    def addresses(self, host):
        """`host`'s own address and the service addresses it holds now."""
        return [self.hosts[host]] + sorted(a for a, h in self.services.items() if h == host)

    def service_address(self, index=0):
        """A service address of the lab's subnet, never a host's (hosts
        take .10 to .209)."""
        return "%s.%d" % (SUBNET, 250 + index)

    def move_service(self, address, host):
        """Moves the service address `address` to `host`'s eth0 (from the
        host holding it, if one does), as a virtual IP moves: deleted from
        the old holder, added to the new, and in every other host the
        neighbour entry of the address flushed, so that the next packet
        asks for its MAC address again and reaches the new holder (the
        gratuitous ARP of a keepalived or a MaxScale would update it
        instead); a host cut from `host` gets the cut's entry for it."""
        old = self.services.get(address)
        if old == host:
            return
        if old is not None:
            ip("-n", self.namespace(old), "addr", "del", address + "/24", "dev", "eth0",
               check=False)
        ip("-n", self.namespace(host), "addr", "add", address + "/24", "dev", "eth0")
        self.services[address] = host
        for other in self.hosts:
            if other == host:
                continue
            if (other, host) in self._cut and other not in self._down:
                ip("-n", self.namespace(other), "neigh", "replace", address, "lladdr", NOWHERE,
                   "nud", "permanent", "dev", "eth0")
            else:
                ip("-n", self.namespace(other), "neigh", "del", address, "dev", "eth0",
                   check=False)

    def cut_pairs(self):
        return set(self._cut)

    @staticmethod
    def partition_pairs(groups):
        """Pairs cutting every group from every other, both directions."""
        pairs = set()
        for i, group in enumerate(groups):
            for other in groups[i + 1:]:
                for a in group:
                    for b in other:
                        pairs |= {(a, b), (b, a)}
        return pairs

    def partition(self, groups):
        """Hosts in different groups cannot reach each other; hosts in no
        group reach everyone."""
        self.set_cut(self.partition_pairs(groups))

    def one_way(self, senders, receivers):
        """What `senders` send to `receivers` is dropped; the reverse is not."""
        self.set_cut({(a, b) for a in senders for b in receivers})

    def isolate(self, host, from_hosts):
        """`host` cut from `from_hosts` both ways; others still reach it."""
        self.partition([[host], [h for h in from_hosts if h != host]])

    def bridge(self, left, right, middle):
        """`left` and `right` cut from each other; `middle` reaches both."""
        self.set_cut(self.partition_pairs([left, right]) - {(middle, h) for h in self.hosts}
                     - {(h, middle) for h in self.hosts})

    def link_down(self, host):
        ip("-n", self.namespace(host), "link", "set", "eth0", "down")
        self._down.add(host)

    def link_up(self, host):
        ip("-n", self.namespace(host), "link", "set", "eth0", "up")
        self._down.discard(host)
        for a, b in self._cut:  # taking a link down flushes its neighbour entries
            if a == host:
                self._drop(a, b)

    def heal(self):
        """No cut, every link up."""
        self.set_cut(set())
        for host in sorted(self._down):
            self.link_up(host)

    # -- the end -----------------------------------------------------------

    def close(self):
        """Kills what the lab started and what is inside its namespaces,
        deletes the namespaces, and gives the slot back. Idempotent."""
        if self._closed:
            return
        self._closed = True
        _libc.setns(self._own_ns, CLONE_NEWNET)  # out of enter()'s namespace
        os.close(self._own_ns)
        for proc in self._procs:
            proc.kill()
        _delete_slot(self.slot)
        os.close(self._lock_fd)


def wait_until(predicate, timeout, interval=0.1):
    """Calls predicate until it is true (returns True) or timeout s pass."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)
