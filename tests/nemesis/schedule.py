"""Fault schedules from a seed: the same seed and hosts give the same
schedule, so a failing run replays with --seed.

generate() returns a list of faults, each a dict: "id", "kind", "at" and
"duration" (seconds from the schedule's start), and the kind's targets.
Faults come in episodes of one or (sometimes) two at once, then a quiet
gap in which everything is healed; at most one cut of the network at a
time, at most one fault per process. Every fault ends by `seconds`.

Kinds (targets; what the runner does, runner.py):
  partition-halves    groups      nodes and members split in two halves, both ways
  partition-majority  groups      the members split majority/minority, each
                                  node on a random side
  partition-one-way   senders, receivers   what senders send to receivers is lost
  partition-member    member      one member cut from the other members only;
                                  nodes still reach it
  partition-leader    -           the store's leader (asked at the start)
                                  cut from every other member and node
  partition-bridge    left, right, middle  left and right cut from each other,
                                  middle (a member) reaches both
  link-down           host        a node's or member's link down
  node-kill           node        kill -9, restarted after `duration`
  node-pause          node        SIGSTOP for 1.5-3 leases, then SIGCONT
  node-clock-step     node, offset_ms      its clock stepped, back after `duration`
  node-clock-strobe   node, offset_ms, period_ms   its clock jumps between 0 and
                                  offset_ms every period_ms
  member-kill         member      kill -9, restarted after `duration`
  member-pause        member      SIGSTOP, then SIGCONT
  member-wipe         member      kill -9; after `duration` its data deleted
                                  (etcd: the member replaced) and restarted
  member-restore      member      kill -9; after `duration` restarted on a copy
                                  of its data taken at the run's start
                                  (ZooKeeper only)
  member-promote-async  -         the asynchronous replica or standby made
                                  the primary: PostgreSQL first leaves it 3 s
                                  behind; then the primary (whichever member
                                  it is then) killed -9 and that member
                                  promoted; after `duration` the old primary
                                  rejoins as a replica (postgres_store.py,
                                  mariadb_store.py)

With PostgreSQL and MariaDB, a member-kill or member-wipe that hits the
primary is a failover too (its synchronous or semi-sync replica promoted).
The kinds a store lacks (OWN) are left out before a seed draws anything, so
adding one changes no other store's schedules.
"""

import random

NETWORK = ("partition-halves", "partition-majority", "partition-one-way", "partition-member",
           "partition-leader", "partition-bridge", "link-down")
NODE = ("node-kill", "node-pause")
CLOCK = ("node-clock-step", "node-clock-strobe")
MEMBER = ("member-kill", "member-pause", "member-wipe", "member-restore")
DATA = ("member-wipe", "member-restore")
# A failover only a store with replicas promoted by hand has (its `kinds`);
# last in ALL_KINDS, so that the other stores' seeds draw what they drew.
FAILOVER = ("member-promote-async",)
OWN = DATA + FAILOVER  # only where the store has them (its `kinds`, stores.py)
ALL_KINDS = NETWORK + NODE + CLOCK + MEMBER + FAILOVER


def _targets(fault):
    """The processes a fault acts on (two faults never share one)."""
    for key in ("node", "member"):
        if key in fault:
            return {fault[key]}
    return set()


def _network_fault(rng, kind, nodes, members):
    if kind == "partition-halves":
        hosts = nodes + members
        rng.shuffle(hosts)
        return {"groups": [sorted(hosts[:len(hosts) // 2]), sorted(hosts[len(hosts) // 2:])]}
    if kind == "partition-majority":
        shuffled = list(members)
        rng.shuffle(shuffled)
        majority, minority = shuffled[:len(members) // 2 + 1], shuffled[len(members) // 2 + 1:]
        for node in nodes:
            (majority if rng.random() < 0.5 else minority).append(node)
        return {"groups": [sorted(majority), sorted(minority)]}
    if kind == "partition-one-way":
        hosts = nodes + members
        rng.shuffle(hosts)
        split = rng.randint(1, len(hosts) - 1)
        return {"senders": sorted(hosts[:split]), "receivers": sorted(hosts[split:])}
    if kind == "partition-member":
        return {"member": rng.choice(members)}
    if kind == "partition-leader":
        return {}
    if kind == "partition-bridge":
        shuffled = list(members)
        rng.shuffle(shuffled)
        left, middle, right = [shuffled[0]], shuffled[1], shuffled[2:]
        for node in nodes:
            (left if rng.random() < 0.5 else right).append(node)
        return {"left": sorted(left), "right": sorted(right), "middle": middle}
    return {"host": rng.choice(nodes + members)}  # link-down


def _fault(rng, kind, nodes, members, lease_s):
    fault = {"kind": kind, "duration": round(rng.uniform(2.0, 8.0), 1)}
    if kind in NETWORK:
        fault.update(_network_fault(rng, kind, nodes, members))
        if kind == "partition-member":  # one member's process is not a target
            fault["cut_member"] = fault.pop("member")
    elif kind == "node-kill":
        fault.update(node=rng.choice(nodes), duration=round(rng.uniform(0.5, 6.0), 1))
    elif kind == "node-pause":
        fault.update(node=rng.choice(nodes), duration=round(rng.uniform(1.5, 3.0) * lease_s, 1))
    elif kind in CLOCK:
        fault["node"] = rng.choice(nodes)
        fault["offset_ms"] = rng.choice((-1, 1)) * rng.choice((300, 1500, 4000))
        if kind == "node-clock-strobe":
            fault["period_ms"] = rng.choice((50, 200, 1000))
    elif kind in FAILOVER:  # its member is the primary when it starts
        fault["duration"] = round(rng.uniform(1.0, 6.0), 1)
    else:
        fault.update(member=rng.choice(members), duration=round(rng.uniform(1.0, 6.0), 1))
    return fault


def generate(seed, seconds, nodes, members, lease_s, kinds=ALL_KINDS, warmup=1.0,
             max_at_once=2):
    """The schedule of `seed` for a run of `seconds` (faults only: the runner
    adds its own start and recovery around it)."""
    rng = random.Random("snowid-nemesis:%d" % seed)
    kinds = [k for k in ALL_KINDS if k in kinds]
    schedule, t = [], warmup
    while t < seconds - 1.0 and kinds:
        episode = []
        for _ in range(max_at_once if rng.random() < 0.35 else 1):
            kind = rng.choice(kinds)
            if kind in NETWORK and any(f["kind"] in NETWORK for f in episode):
                continue
            fault = _fault(rng, kind, list(nodes), list(members), lease_s)
            if any(_targets(fault) & _targets(f) for f in episode):
                continue
            fault["at"] = round(t + (rng.uniform(0.0, 1.0) if episode else 0.0), 1)
            fault["duration"] = round(min(fault["duration"], seconds - fault["at"]), 1)
            if fault["duration"] >= 0.5:
                episode.append(fault)
        for fault in episode:
            fault["id"] = len(schedule)
            schedule.append(fault)
        end = max([f["at"] + f["duration"] for f in episode], default=t)
        t = round(end + rng.uniform(1.0, 4.0), 1)  # everything healed in between
    return schedule
