#!/usr/bin/env python3
"""The nemesis: real snowidd nodes leasing node ids from a real replicated
store, each process in a network namespace of its own, clients drawing IDs
from every node all along, a seeded schedule of faults (schedule.py), and
the checker (checker.py) over every answer.

    run.py --store etcd|zookeeper|redis|postgres|mariadb [--seconds S | --minutes M]
           [--seed S | --seeds S1,S2,...] [--nodes N] [--kinds K1,K2,...]
           [--snowidd PATH] [--keep]

One run per seed: a lab (netlab.py), the store's three members, N nodes
(3), a client process; the schedule of that seed over S seconds; then
everything healed, and every node must serve again within RECOVERY_S;
then the checker. A failing run prints its seed, the schedule with each
fault's start and end, the checker's findings, the command that replays it
(the same seed gives the same schedule; which member leads at a
partition-leader fault is asked at that moment), and keeps its directory
(logs, records). Exit 0: every run passed; 1: one failed; 77: something
the runs need is missing (root, ip, the store, snowidd), or 1 for that
under CI=true (tests/support/missing.h's rule).
"""

import argparse
import faulthandler
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import shutil
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import checker  # noqa: E402
import client  # noqa: E402
import netlab  # noqa: E402
import nodes as nodes_module  # noqa: E402
import schedule as schedule_module  # noqa: E402
import stores  # noqa: E402

# After the last heal, every node serves again within this: about 6 s
# (lease + 3 s + a renewal) on a quiet machine, 60 s at a load average of 100.
RECOVERY_S = 60.0
COUNT = 16  # IDs a request


class Runner:
    """One seed's run; the faults are applied from the main thread."""

    def __init__(self, lab, store, nodes, seed):
        self.lab, self.store, self.nodes = lab, store, nodes
        self.rng = random.Random("snowid-nemesis-run:%d" % seed)  # run-time choices
        self.log = []

    def _cut(self, fault):
        lab, kind = self.lab, fault["kind"]
        everyone = self.store.members + self.nodes.names
        if kind in ("partition-halves", "partition-majority"):
            lab.set_cut(lab.partition_pairs(fault["groups"]))
        elif kind == "partition-one-way":
            lab.one_way(fault["senders"], fault["receivers"])
        elif kind == "partition-member":
            member = fault["cut_member"]
            lab.set_cut(lab.partition_pairs([[member], [m for m in self.store.members
                                                        if m != member]]))
        elif kind == "partition-leader":
            leader = self.store.leader()
            fault["leader"] = leader or "unknown"
            leader = leader or self.rng.choice(self.store.members)
            lab.isolate(leader, everyone)
        elif kind == "partition-bridge":
            lab.bridge(fault["left"], fault["right"], fault["middle"])
        elif kind == "link-down":
            lab.link_down(fault["host"])

    def start(self, fault):
        kind = fault["kind"]
        if kind in schedule_module.NETWORK:
            self._cut(fault)
        elif kind == "node-kill":
            self.nodes.kill(fault["node"])
        elif kind == "node-pause":
            self.nodes.pause(fault["node"])
        elif kind == "node-clock-step":
            self.nodes.set_clock(fault["node"], fault["offset_ms"])
        elif kind == "node-clock-strobe":
            self.nodes.strobe(fault["node"], fault["offset_ms"], fault["period_ms"])
        elif kind in ("member-kill", "member-wipe", "member-restore"):
            failover = self.store.kill(fault["member"])  # a primary is failed over
            if failover:  # a store failed over by hand says what it did
                fault["failover"] = failover
        elif kind == "member-promote-async":
            fault.update(self.store.promote_async())  # the old primary, what was done
        elif kind == "member-pause":
            self.store.pause(fault["member"])

    def end(self, fault):
        kind = fault["kind"]
        if kind in schedule_module.NETWORK:
            self.lab.heal()
            if hasattr(self.store, "healed"):  # MariaDB: replicas it could not re-point
                done = self.store.healed()
                if done:
                    fault["done"] = done
        elif kind == "node-kill":
            self.nodes.restart(fault["node"])
        elif kind == "node-pause":
            self.nodes.resume(fault["node"])
        elif kind == "node-clock-step":
            self.nodes.set_clock(fault["node"], 0)
        elif kind == "node-clock-strobe":
            self.nodes.unstrobe(fault["node"])
        elif kind in ("member-kill", "member-promote-async"):
            done = self.store.restart(fault["member"])
            if done:
                fault["done"] = done
        elif kind == "member-wipe":
            fault["done"] = self.store.wipe(fault["member"])
        elif kind == "member-restore":
            fault["done"] = self.store.restore(fault["member"])
        elif kind == "member-pause":
            self.store.resume(fault["member"])

    def play(self, schedule):
        """Each fault at its time, each healed at its end; logs the times."""
        events = []
        for fault in schedule:
            entry = dict(fault)
            self.log.append(entry)
            events.append((fault["at"] + fault["duration"], 0, entry))
            events.append((fault["at"], 1, entry))
        events.sort(key=lambda e: (e[0], e[1], e[2]["id"]))
        began = time.monotonic()
        for at, starts, entry in events:
            delay = began + at - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            (self.start if starts else self.end)(entry)
            entry["start_ns" if starts else "end_ns"] = time.time_ns()


def summary_line(verdict):
    stats = verdict.stats
    return "%d requests, %d answered, %d IDs, %d issuers, %d tenures, %d duplicates" % (
        stats["requests"], stats["answered"], stats["ids"], stats["issuers"], stats["tenures"],
        stats["duplicates"])


def run_seed(args, seed, kinds, workdir):
    """One run; returns (verdict, fault log, recovery seconds or None)."""
    os.makedirs(workdir, exist_ok=True)
    with netlab.Lab.create() as lab:
        lab.add_host("client")
        lab.enter("client")  # the harness probes from the clients' namespace
        store = stores.STORES[args.store](lab, workdir)
        store.start()
        faketime = nodes_module.faketime_library() if set(kinds) & set(schedule_module.CLOCK) \
            else ""
        nodes = nodes_module.Nodes(lab, workdir, args.snowidd, store, args.nodes, faketime,
                                   args.sabotage)
        nodes.start_all()
        if not nodes.wait_serving(nodes.names, 60):
            raise RuntimeError("the nodes did not serve within 60 s\n" + nodes.logs())
        if "member-restore" in kinds:
            for member in store.members:  # what member-restore puts back
                store.back_up(member)
        layout = checker.Layout.from_info(nodes.info(nodes.names[0]))
        records_path = os.path.join(workdir, "records.bin")
        drawer = lab.spawn("client", [sys.executable, os.path.join(HERE, "client.py"),
                                      records_path, str(COUNT), "1.0", str(args.pace_ms),
                                      *["%s=%s" % (n, nodes.endpoint(n)) for n in nodes.names]],
                           os.path.join(workdir, "client.log"))
        time.sleep(1.0)
        schedule = schedule_module.generate(seed, args.seconds, nodes.names, store.members,
                                            store.lease_s, kinds)
        runner = Runner(lab, store, nodes, seed)
        try:
            runner.play(schedule)
        finally:
            for entry in runner.log:  # a fault left on by an exception is healed too
                if "start_ns" in entry and "end_ns" not in entry:
                    runner.end(entry)
                    entry["end_ns"] = time.time_ns()
        healed = time.monotonic()
        recovered = nodes.wait_serving(nodes.names, RECOVERY_S)
        recovery = time.monotonic() - healed if recovered else None
        stuck = [] if recovered else nodes.not_serving(nodes.names)
        time.sleep(1.0)  # the clients see every node serve
        drawer.stop()
        nodes.stop_all()
        verdict = checker.check(client.read_records(records_path), layout, runner.log)
        if recovery is None:
            verdict.fail("recovery", "%s did not serve within %.0f s of the last heal:\n%s"
                         % (", ".join(stuck) or "a node", RECOVERY_S, nodes.logs()))
        verdict.stats["recovery_s"] = recovery
        return verdict, runner.log


def print_schedule(log):
    print("schedule (at, duration: seconds from the schedule's start; start_ns, end_ns: "
          "when each was applied and healed; answered: requests answered/sent meanwhile):")
    for entry in log:
        print("  " + json.dumps(entry, sort_keys=True))


def print_failure(args, seed, verdict, log, workdir):
    print("FAILED: seed %d (--store %s --seconds %g --nodes %d)" % (
        seed, args.store, args.seconds, args.nodes))
    print_schedule(log)
    for rule, text in verdict.failures:
        print("  [%s] %s" % (rule, text))
    print("replay: tests/nemesis/run.py --store %s --seconds %g --nodes %d --seed %d%s%s" % (
        args.store, args.seconds, args.nodes, seed,
        (" --kinds " + ",".join(args.kinds)) if args.kinds else "",
        (" --sabotage " + args.sabotage) if args.sabotage else ""))
    print("logs and records kept in " + workdir)


def print_summary(args, results):
    ids = sum(v.stats["ids"] for _, v, _ in results)
    duplicates = sum(v.stats["duplicates"] for _, v, _ in results)
    by_kind, available = {}, {}
    for _, verdict, log in results:
        for entry in log:
            by_kind[entry["kind"]] = by_kind.get(entry["kind"], 0) + 1
        for kind, (answered, sent) in verdict.stats["availability"].items():
            a = available.setdefault(kind, [0, 0])
            a[0] += answered
            a[1] += sent
    print("nemesis %s: %d run(s) (seeds %s), %d IDs drawn, %d duplicates" % (
        args.store, len(results), ",".join(str(s) for s, _, _ in results), ids, duplicates))
    print("%-20s %7s %10s %13s" % ("fault kind", "faults", "requests", "availability"))
    for kind in sorted(available):
        answered, sent = available[kind]
        print("%-20s %7s %10d %12.1f%%" % (kind, by_kind.get(kind, "-"), sent,
                                           100.0 * answered / max(sent, 1)))
    recoveries = [v.stats["recovery_s"] for _, v, _ in results if v.stats["recovery_s"] is not None]
    if recoveries:
        print("recovery after the last heal: at most %.1f s" % max(recoveries))


def _has_option(binary, option):
    try:
        out = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return option in out.stdout + out.stderr


def missing(args, kinds):
    why = netlab.missing_prerequisite() or stores.missing(args.store)
    if not why and not os.access(args.snowidd, os.X_OK):
        why = "snowidd is not at %s (--snowidd or SNOWIDD)" % args.snowidd
    if not why and args.store == "redis" and not _has_option(args.snowidd, "--redis-sentinels"):
        why = "%s has no --redis-sentinels (a snowidd without Sentinel support)" % args.snowidd
    if not why and args.store == "mariadb" and not _has_option(args.snowidd, "--mysql-url"):
        why = "%s has no --mysql-url (a snowidd without MariaDB support)" % args.snowidd
    if not why and set(kinds) & set(schedule_module.CLOCK) and not nodes_module.faketime_library():
        why = "libfaketime is not installed (Debian package faketime): no clock faults"
    return why


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--store", choices=sorted(stores.STORES), required=True)
    p.add_argument("--seconds", type=float, default=45.0)
    p.add_argument("--minutes", type=float, help="the length of the schedule, in minutes")
    p.add_argument("--seed", type=int)
    p.add_argument("--seeds", help="comma-separated: one run each")
    p.add_argument("--nodes", type=int, default=3)
    p.add_argument("--kinds", type=lambda t: t.split(","), help="fault kinds (schedule.py)")
    p.add_argument("--snowidd", default=os.environ.get("SNOWIDD", "build/src/server/snowidd"))
    p.add_argument("--pace-ms", type=float, help="each client thread sends at most one "
                   "request every PACE_MS ms (default: 0, or 5 for runs over 5 minutes)")
    p.add_argument("--sabotage", choices=["shared-node-id"], default="",
                   help="run the nodes wrong on purpose (shared-node-id: static mode, every "
                   "node worker id 0) to see the checker fail")
    p.add_argument("--expect-failure", type=lambda t: set(t.split(",")), default=set(),
                   help="pass only if every run fails each of these checker rules "
                   "(unique, increasing, tenure, recovery)")
    p.add_argument("--keep", action="store_true", help="keep the run's directory on success")
    p.add_argument("--verbose", action="store_true", help="print every run's schedule")
    args = p.parse_args(argv)
    if args.minutes:
        args.seconds = args.minutes * 60.0
    for kind in args.kinds or ():
        if kind not in schedule_module.ALL_KINDS:
            p.error("--kinds: unknown fault kind %r (one of %s)" % (
                kind, ", ".join(schedule_module.ALL_KINDS)))
    if args.pace_ms is None:
        args.pace_ms = 5.0 if args.seconds > 300 else 0.0
    args.snowidd = os.path.abspath(args.snowidd)
    return args


def judge(args, seed, verdict, log, workdir):
    """Prints what a failing (or, with --expect-failure, a passing) run
    must say; removes the run's directory unless it is needed. True: the
    run passed."""
    if args.verbose:
        print_schedule(log)
    broken = {rule for rule, _ in verdict.failures}
    if args.expect_failure:
        for rule, text in verdict.failures[:3]:
            print("  as expected: [%s] %s" % (rule, text[:300]))
        if args.expect_failure <= broken:
            shutil.rmtree(workdir, ignore_errors=True)
            return True
        print_failure(args, seed, verdict, log, workdir)
        print("FAILED: the checker was expected to find %s and found %s" % (
            ",".join(sorted(args.expect_failure)), ",".join(sorted(broken)) or "nothing"))
        return False
    if verdict.ok:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        return True
    print_failure(args, seed, verdict, log, workdir)
    return False


def kinds_or_exit(args):
    """The fault kinds of the run, or an exit status: 2 for a kind the store
    lacks, 77 (1 under CI) when something the runs need is missing."""
    supported = stores.STORES[args.store].kinds
    unsupported = [k for k in args.kinds or () if k in schedule_module.OWN and k not in supported]
    if unsupported:
        print("--kinds: %s has no %s" % (args.store, ", ".join(unsupported)))
        return 2
    kinds = [k for k in args.kinds or schedule_module.ALL_KINDS
             if k not in schedule_module.OWN or k in supported]
    why = missing(args, kinds)
    if why and os.environ.get("CI") == "true":
        print("FAILED: %s (CI=true: a test that cannot run fails)" % why)
        return 1
    if why:
        print("SKIPPED: " + why)
        return 77
    return kinds


def main(argv):
    args = parse(argv)
    kinds = kinds_or_exit(args)
    if isinstance(kinds, int):
        return kinds
    if args.seeds:
        seeds = [int(s) for s in args.seeds.split(",")]
    else:
        seeds = [args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 31)]
    bound = args.seconds * 1.2 + 150  # a run: start, recovery, stop (about 25 s), check

    def terminate(signum, _frame):
        raise SystemExit(128 + signum)  # unwinds into Lab.close()

    def overdue(_signum, _frame):
        faulthandler.dump_traceback()
        raise RuntimeError("the run took longer than its bound (%.0f s): stopped" % bound)

    signal.signal(signal.SIGTERM, terminate)
    signal.signal(signal.SIGINT, terminate)  # also where a shell left it ignored
    signal.signal(signal.SIGALRM, overdue)
    faulthandler.register(signal.SIGUSR1)  # kill -USR1 PID: where is it?
    results, passed = [], 0
    for seed in seeds:
        workdir = tempfile.mkdtemp(prefix="snowid-nemesis-%s-%d-" % (args.store, seed))
        began = time.monotonic()
        signal.alarm(int(bound))
        print("seed %d: %s, %g s of faults, %d nodes (%s)" % (seed, args.store, args.seconds,
                                                              args.nodes, workdir), flush=True)
        try:
            verdict, log = run_seed(args, seed, kinds, workdir)
        except Exception as e:  # the lab is closed; say which seed and where
            traceback.print_exc()
            print("FAILED: seed %d could not run: %s\nlogs kept in %s" % (seed, e, workdir))
            return 1
        finally:
            signal.alarm(0)
        print("seed %d: %s; %.0f s wall" % (seed, summary_line(verdict),
                                            time.monotonic() - began), flush=True)
        results.append((seed, verdict, log))
        passed += judge(args, seed, verdict, log, workdir)
    print_summary(args, results)
    print("%d passed, %d failed" % (passed, len(results) - passed))
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
