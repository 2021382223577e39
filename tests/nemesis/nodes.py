"""snowidd nodes in the lab: each in a namespace of its own (n1, n2, ...),
in cluster mode against a store of stores.py, with the chaos tests' short
lease (the store's lease_s, a 500 ms safety margin), a state directory of
its own, HTTP on its address, no gRPC, no segment store. Node i prefers
worker id i - 1; a restart keeps its state directory.

Clocks: with libfaketime (Debian package faketime) each node runs under
libfaketimeMT with a timestamp file of its own (FAKETIME_NO_CACHE: every
clock read reads it, so a step takes effect at once; CLOCK_MONOTONIC is not
faked), as tests/support/faketime.cc runs the clock chaos tests' nodes.
set_clock() replaces the file by rename, so a read never sees it empty.
"""

import json
import os
import threading
import urllib.error
import urllib.request

from netlab import wait_until

PORT = 8080
FAKETIME_DIRS = ("/usr/lib/x86_64-linux-gnu/faketime/", "/usr/lib/aarch64-linux-gnu/faketime/")


def faketime_library():
    """libfaketimeMT's path, or "" (also when SNOWID_TEST_PRETEND_MISSING
    names faketime, as tests/support/missing.h reads it)."""
    if "faketime" in os.environ.get("SNOWID_TEST_PRETEND_MISSING", "").split(","):
        return ""
    for directory in FAKETIME_DIRS:
        if os.path.exists(directory + "libfaketimeMT.so.1"):
            return directory + "libfaketimeMT.so.1"
    return ""


def faketime_offset(ms):
    sign = "-" if ms < 0 else "+"
    return "%s%d.%03d000" % (sign, abs(ms) // 1000, abs(ms) % 1000)


class Nodes:
    def __init__(self, lab, workdir, binary, store, count=3, faketime="", sabotage=""):
        self.lab, self.workdir, self.binary, self.store = lab, workdir, binary, store
        self.sabotage = sabotage
        self.names = ["n%d" % (i + 1) for i in range(count)]
        self.faketime = faketime
        # A fifth of the lease, as the defaults have it (2 s of 10 s): a node
        # whose store member stops answering moves on to the next member in
        # time to renew (with the default 2 s and a 2 s lease it cannot).
        self.store_timeout_ms = store.lease_s * 200
        self.procs = {}
        self._strobes = {}
        for i, name in enumerate(self.names):
            lab.add_host(name)
            os.makedirs(self.state_dir(name), exist_ok=True)
            if faketime:
                self.set_clock(name, 0)

    def state_dir(self, name):
        return os.path.join(self.workdir, name + "-state")

    def clock_file(self, name):
        return os.path.join(self.workdir, name + ".faketime")

    def url(self, name, path):
        return "http://%s:%d%s" % (self.lab.address(name), PORT, path)

    def endpoint(self, name):
        return "%s:%d" % (self.lab.address(name), PORT)

    def argv(self, name):
        if self.sabotage == "shared-node-id":  # a misconfigured fleet: no store, one id
            return [self.binary, "--worker-id", "0", "--state-dir", self.state_dir(name),
                    "--http", self.endpoint(name), "--grpc", "off", "--segment-store", "off"]
        return [self.binary, *self.store.node_flags(), "--cluster", "nemesis", "--worker-id",
                str(self.names.index(name)), "--lease-ttl-s", str(self.store.lease_s),
                "--lease-safety-margin-ms", "500", "--claim-timeout-ms", "3600000",
                "--store-request-timeout-ms", str(self.store_timeout_ms),
                "--state-dir", self.state_dir(name), "--http", self.endpoint(name),
                "--grpc", "off", "--segment-store", "off"]

    def env(self, name):
        # The test run's own settings (SNOWID_CHAOS_*, SNOWID_TEST_*) are not
        # snowidd's: it reads every SNOWID_* variable as an option and refuses
        # one it does not know, as the C++ test support's child_environment.
        env = {key: value for key, value in os.environ.items()
               if not key.startswith(("SNOWID_CHAOS_", "SNOWID_TEST_"))}
        if self.faketime:
            env.update(LD_PRELOAD=self.faketime, FAKETIME_DONT_FAKE_MONOTONIC="1",
                       FAKETIME_TIMESTAMP_FILE=self.clock_file(name), FAKETIME_NO_CACHE="1")
        return env

    def start(self, name):
        log = os.path.join(self.workdir, name + ".log")
        self.procs[name] = self.lab.spawn(name, self.argv(name), log, env=self.env(name))

    def start_all(self):
        for name in self.names:
            self.start(name)

    def serving(self, name):
        """True if the node answers a request for an ID. Not /readyz: after
        a store lost its data, a node keeps issuing (above its own marks)
        but reports the loss on /readyz until an operator confirms it."""
        try:
            with urllib.request.urlopen(self.url(name, "/v1/ids?count=1&format=binary"),
                                        timeout=1.0) as reply:
                return reply.status == 200
        except (OSError, urllib.error.URLError):
            return False

    def exited(self, names):
        """The nodes among `names` whose process has ended."""
        return [n for n in names if n in self.procs and not self.procs[n].alive()]

    def wait_serving(self, names, timeout):
        """True once every node of `names` answers; False at `timeout`, or at
        once when one of them has exited (its log says why)."""
        return wait_until(lambda: all(self.serving(n) for n in names) or self.exited(names),
                          timeout, 0.2) and not self.exited(names)

    def not_serving(self, names):
        return [n for n in names if not self.serving(n)]

    def info(self, name):
        with urllib.request.urlopen(self.url(name, "/v1/info"), timeout=2.0) as reply:
            return json.loads(reply.read())

    def kill(self, name):
        self.procs[name].kill()

    def restart(self, name):
        if not self.procs[name].alive():
            self.start(name)

    def pause(self, name):
        self.procs[name].signal(19)  # SIGSTOP

    def resume(self, name):
        self.procs[name].signal(18)  # SIGCONT

    def set_clock(self, name, offset_ms):
        path = self.clock_file(name)
        with open(path + ".new", "w") as f:
            f.write(faketime_offset(offset_ms) + "\n")
        os.rename(path + ".new", path)

    def strobe(self, name, offset_ms, period_ms):
        """The clock jumps between 0 and offset_ms every period_ms until
        unstrobe() (a thread writing the file; no process is started)."""
        stop = threading.Event()

        def run():
            on = False
            while not stop.wait(period_ms / 1000.0):
                on = not on
                self.set_clock(name, offset_ms if on else 0)

        thread = threading.Thread(target=run, daemon=True)
        self._strobes[name] = (stop, thread)
        thread.start()

    def unstrobe(self, name):
        stop, thread = self._strobes.pop(name)
        stop.set()
        thread.join()
        self.set_clock(name, 0)

    def stop_all(self):
        """SIGTERM to each live node (it gives its id back), SIGKILL after 5 s."""
        for name in self.names:
            if name in self.procs:
                self.procs[name].stop()

    def logs(self, tail=3000):
        return "\n".join("-- %s (%s):\n%s" % (n, self.procs[n].log_path,
                                              self.procs[n].log()[-tail:])
                         for n in self.names if n in self.procs)
