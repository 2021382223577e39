"""The nemesis's checker: what every history must show, whatever the faults.

check(records, layout, faults) takes the clients' records (client.Record:
send and receive time, node, status, Snowid-Issuer, IDs) and returns a
Verdict: `failures` (empty for a good history) and `stats`.

What is checked, and why each rule holds for snowid:
1. Every ID is unique over the run (every batch of every node and issuer).
2. Each issuer (one snowidd process) answers strictly increasing IDs: within
   a batch, and from a batch to any batch it answered after the first was
   received (the invariant of src/server/service/issuer.h).
3. Tenures do not overlap. The node id is decoded from each ID (the layout
   of /v1/info). Under one node id, the batches sorted by ID fall into runs
   of one issuer each: the tenures (one claim generation, as far as a client
   can see). For consecutive tenures A (lower IDs) and B: no ID of A is at
   or above B's first ID, and A's last request was sent no later than B's
   first answer was received (+ `slack_ns`). A node stops issuing before
   its lease could expire and a successor claims only after it expired, so
   a request sent to A after B was seen issuing under the same node id is
   a node issuing past its lease: the checker cannot tell when A read the
   request, so it takes the earliest time (the send) for A and the latest
   (the receipt) for B, and flags only what no timing can explain.
4. Availability per fault kind: the fraction of requests sent during the
   kind's windows that were answered with IDs (reported, not judged).

Every rule is checked on whatever history it is given: checker_test.py
feeds it histories with a duplicate, overlapping tenures and decreasing IDs
and sees each caught.
"""

import collections


class Layout:
    """Where the node id sits in an ID (from /v1/info's "layout")."""

    def __init__(self, sequence_bits=12, node_bits=10, sequence_position="low"):
        self.sequence_bits, self.node_bits = sequence_bits, node_bits
        self.sequence_position = sequence_position
        self.mask = (1 << node_bits) - 1

    @classmethod
    def from_info(cls, info):
        layout = info["layout"]
        return cls(layout["sequence_bits"], layout["datacenter_bits"] + layout["worker_bits"],
                   layout.get("sequence_position", "low"))

    def node_id(self, value):
        if self.sequence_position == "high":
            return value & self.mask
        return (value >> self.sequence_bits) & self.mask


class Verdict:
    def __init__(self):
        self.failures = []
        self.stats = {}

    def fail(self, rule, text, limit=20):
        same = [f for f in self.failures if f[0] == rule]
        if len(same) < limit:
            self.failures.append((rule, text))
        elif len(same) == limit:
            self.failures.append((rule, "... (further failures of this rule left out)"))

    @property
    def ok(self):
        return not self.failures


class Batch:
    __slots__ = ("record", "first", "last")

    def __init__(self, record):
        self.record, self.first, self.last = record, record.ids[0], record.ids[-1]


def _ms(ns):
    return "%.3f" % (ns / 1e9)


def check_unique(batches, verdict):
    """Rule 1: sweep the batches by first ID; only batches whose ranges
    overlap can share an ID, and those are compared exactly."""
    active, duplicates = [], 0
    for batch in sorted(batches, key=lambda b: b.first):
        active = [a for a in active if a.last >= batch.first]
        for other in active:
            common = set(other.record.ids) & set(batch.record.ids)
            if common:
                duplicates += len(common)
                verdict.fail("unique", "%d ID(s) answered twice, e.g. %d: %r and %r" % (
                    len(common), min(common), other.record, batch.record))
        active.append(batch)
    verdict.stats["duplicates"] = duplicates


def check_increasing(batches, verdict):
    """Rule 2, per issuer, in the order the requests were sent."""
    by_issuer = collections.defaultdict(list)
    for batch in batches:
        ids = batch.record.ids
        if any(ids[i] >= ids[i + 1] for i in range(len(ids) - 1)):
            verdict.fail("increasing", "a batch not strictly increasing: %r" % batch.record)
        by_issuer[batch.record.issuer].append(batch)
    for issuer, own in by_issuer.items():
        own.sort(key=lambda b: b.record.t_send)
        highest = None  # the highest last ID of the batches received so far
        received = []  # (t_recv, last), in send order
        for batch in own:
            for t_recv, last in received:
                if t_recv <= batch.record.t_send and (highest is None or last > highest[1]):
                    highest = (t_recv, last)
            received = [(t, l) for t, l in received if t > batch.record.t_send]
            if highest is not None and batch.first <= highest[1]:
                verdict.fail("increasing", "issuer %016x answered %d after %d (sent at %s, the "
                             "earlier batch received at %s): %r" % (
                                 issuer, batch.first, highest[1], _ms(batch.record.t_send),
                                 _ms(highest[0]), batch.record))
            received.append((batch.record.t_recv, batch.last))


def tenures(batches, layout, verdict):
    """Rule 3's tenures: {node id: [(issuer, [batches])...] in ID order}."""
    by_node = collections.defaultdict(list)
    for batch in batches:
        node = layout.node_id(batch.first)
        if layout.node_id(batch.last) != node:
            verdict.fail("tenure", "a batch under two node ids: %r" % batch.record)
        by_node[node].append(batch)
    result = {}
    for node, own in by_node.items():
        own.sort(key=lambda b: b.first)
        runs = []
        for batch in own:
            if runs and runs[-1][0] == batch.record.issuer:
                runs[-1][1].append(batch)
            else:
                runs.append((batch.record.issuer, [batch]))
        result[node] = runs
    return result


def check_tenures(batches, layout, verdict, slack_ns):
    """Rule 3: consecutive tenures of a node id, in ID and in real time."""
    per_node = tenures(batches, layout, verdict)
    count = 0
    for node, runs in sorted(per_node.items()):
        count += len(runs)
        for (issuer_a, a), (issuer_b, b) in zip(runs, runs[1:]):
            last_send = max(x.record.t_send for x in a)
            first_recv = min(x.record.t_recv for x in b)
            a_last = max(x.last for x in a)
            if a_last >= b[0].first:
                verdict.fail("tenure", "node id %d: issuer %016x's IDs reach %d, issuer %016x's "
                             "start at %d" % (node, issuer_a, a_last, issuer_b, b[0].first))
            if last_send > first_recv + slack_ns:
                verdict.fail("tenure", "node id %d: issuer %016x was asked at %s and answered "
                             "with IDs below those issuer %016x had answered by %s (%.3f s "
                             "earlier): two holders at once" % (
                                 node, issuer_a, _ms(last_send), issuer_b, _ms(first_recv),
                                 (last_send - first_recv) / 1e9))
    verdict.stats["tenures"] = count
    verdict.stats["node_ids"] = len(per_node)


def availability(records, faults):
    """{kind: (answered, sent)} for requests sent inside each kind's windows,
    and "none" for those sent while no fault was on; each fault gets its own
    figure too, as "answered": "A/S". One sweep over the records in send
    order."""
    windows = sorted((f for f in faults if "start_ns" in f and "end_ns" in f),
                     key=lambda f: f["start_ns"])
    table = collections.defaultdict(lambda: [0, 0])
    per_fault = collections.defaultdict(lambda: [0, 0])
    active, upcoming = [], 0
    for r in sorted(records, key=lambda r: r.t_send):
        while upcoming < len(windows) and windows[upcoming]["start_ns"] <= r.t_send:
            active.append(windows[upcoming])
            upcoming += 1
        active = [f for f in active if f["end_ns"] >= r.t_send]
        for kind in {f["kind"] for f in active} or {"none"}:
            table[kind][1] += 1
            table[kind][0] += r.status == 200
        for f in active:
            per_fault[id(f)][1] += 1
            per_fault[id(f)][0] += r.status == 200
    for f in windows:
        f["answered"] = "%d/%d" % tuple(per_fault[id(f)])
    return {k: tuple(v) for k, v in table.items()}


def check(records, layout, faults=(), slack_ns=0):
    """The verdict on one run's records."""
    verdict = Verdict()
    batches = [Batch(r) for r in records if r.status == 200 and r.ids]
    verdict.stats["requests"] = len(records)
    verdict.stats["answered"] = len(batches)
    verdict.stats["ids"] = sum(len(b.record.ids) for b in batches)
    verdict.stats["issuers"] = len({b.record.issuer for b in batches})
    check_unique(batches, verdict)
    check_increasing(batches, verdict)
    check_tenures(batches, layout, verdict, slack_ns)
    verdict.stats["availability"] = availability(records, faults)
    return verdict
