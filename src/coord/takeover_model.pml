/* The take-over of a leased node id, as a Promela model that SPIN checks
 * exhaustively: can two nodes ever issue the same ID (node id, time unit)
 * when the store's record may be rewound (a backup restored) or lost (wiped)
 * while a holder serves?
 *
 * WHAT IS MODELLED (lease_options.h, leased_claim.h, sql_claim.cc,
 * leased_coordinator.cc). Time passes in whole ticks, without end; the
 * store's clock is real time. The store keeps the record of one node id
 * {holder, lease_until (store time), reservation H} and the cluster's
 * `created` marker. Each node's clock reads real time + a constant offset
 * drawn at the start. Whenever it is scheduled, a node may (a node left
 * unscheduled is paused: a GC pause, a frozen VM, a store step that fails or
 * times out):
 *   claim    one store step: write `created` if absent (the later of the
 *            store's clock and the node's); take the id if nobody holds it,
 *            its lease has ended or the claim left there is the node's own;
 *            read H and `created`; set the floor by the RULE below;
 *   renew    fenced: applies only while the store names it holder with a live
 *            lease; moves the lease and the node's deadline;
 *   reserve  fenced write H := max(H, max(clock, floor) + RESERVE_AHEAD), the
 *            node's ceiling raised to it once the store holds it;
 *   issue    an ID in the unit its clock reads, if that unit is above its
 *            floor, at or below its ceiling, and real time is before its
 *            deadline: (time of its last successful claim or renewal) +
 *            LEASE_TTL - SAFETY_MARGIN (CLOCK_BOOTTIME in the code);
 *   stop     once its deadline has passed, freeing the id in the store or not
 *            (abandon() is best effort). A fenced step that fails stops it at
 *            once, as lose_claim() does today.
 * Faults, each at most once and at any moment: `backup` copies the store,
 * `restore` puts the copy back (the record and `created` rewound), `wipe`
 * empties it (the record and `created`).
 * The run starts in a cluster that has been serving: node 0 has held the id
 * since long ago and renewed at time 0.
 *
 * OTHER NODE IDS (IDS=2). Ids touch one another only through the nodes (one
 * id per node at a time), `created`, and faults, which hit every record at
 * once. So the model keeps one id's record, and IDS=2 adds what other ids
 * can do to it: the id may be one never used, while node 0 holds another
 * (then node 0 starts idle: a node busy elsewhere can only do less than an
 * idle one); and an idle node may claim another id at any time, writing
 * `created` if it is absent (claim_elsewhere()). Every run of a cluster with
 * any number of ids, seen from one id, is a run of this model; so 2 covers
 * them all. (A model with a record per id is the product of their runs, and
 * too large to search.)
 *
 * THE RULES (-DRULE=OLD or -DRULE=NEW):
 *   OLD, the stores' code before the takeover floor (up to e8bbf44): the
 *       floor is the H read, or with no H, created + LEASE_TTL +
 *       RESERVE_AHEAD; H follows the node's clock.
 *   NEW, the takeover rule (leased_claim.h; docs/design.md, "A node never
 *       trusts a store's record to be current"): a claim starts above
 *       max(H, max(store now, its clock) + LEASE_TTL + RESERVE_AHEAD); every
 *       H it writes is capped at (store now) + LEASE_TTL + RESERVE_AHEAD
 *       (RESERVATION_CAP; the code caps by its last reading of the store's
 *       clock, never later than now: more ways to fail here, none fewer); a
 *       node whose clock is more than MAX_CLOCK_OFFSET ahead of the store's
 *       (the code's min(reserve_ahead, max_peer_clock_offset)) neither
 *       claims, renews, writes nor issues (CLOCK_CHECK). Both on by default
 *       under NEW; either can be switched off to see what it is needed for.
 *   CONFIRM_TAKEOVER=1, an addition to NEW that these checks found needed
 *       (docs/takeover-model.md): a claim issues nothing until a fenced step
 *       that it sends LEASE_TTL or more after the claim has succeeded.
 *
 * THE PROPERTY, the assert in issue(): no ID is issued by two nodes. Rather
 * than a set of every issued ID, SPIN picks one unit to watch at the moment
 * a node issues an ID in it; every choice is explored, so every ID is watched
 * in some run, and the assert fails when a second node issues in the watched
 * unit. Once every clock is past it nobody can issue in it any more, and the
 * run ends (end_the_run()). A node is taken never to repeat its own IDs (its
 * own mark, src/server/service/cluster_marks.h, keeps it above them). IDs
 * issued before time 0 are not watched: they lie at or below the H of time
 * 0, and the backup is taken later.
 *
 * TIME WITHOUT END IN FINITELY MANY STATES. Every rule compares times with
 * the store's clock or with each other, never with a date, so the model
 * keeps each time as its distance from now (NOW is 0) and a tick subtracts 1
 * from all of them. A time that no later step can tell from an older one is
 * clamped (the age_* steps say which), so the states are finite and SPIN
 * explores runs of any length: a pause, a lease, a fault may come at any
 * tick. `elapsed` counts ticks for the trail's lines only; it is hidden from
 * the search.
 *
 * ABSTRACTED AWAY: the sequence bits (one ID per node per unit stands for
 * all of a unit's); graceful release and its lowered H; the peer clock check
 * (offsets within the bound pass it) and the check of a clock behind the
 * store's (it only delays a node); a record gone back reported as a loss
 * (a report; the node still serves); claim numbers (the stores name a claim
 * as holder, the model a node, so a restored record of a node's earlier
 * claim counts as its current one: more ways to fail, none fewer); when
 * renewals and writes are due (any time, a superset of the coordinator's
 * schedule); the node's own mark and audit log (so NEW stands on the store's
 * rule alone); message delays (a store step is atomic; a late reply is a
 * paused node). Nodes are interchangeable but for node 0's head start, so
 * the offsets of nodes 1.. are drawn in ascending order only.
 *
 * RUN (tests/model/check_takeover_model.sh runs every configuration):
 *   spin -a -DRULE=OLD -DWIPE=0 takeover_model.pml
 *   gcc -O2 -DSAFETY -o pan pan.c && ./pan -m1000000
 *   spin -t -DRULE=OLD -DWIPE=0 takeover_model.pml   (the trail, if any)
 * Sizes and switches, by -D: NODES (2-3), IDS (1-2), LEASE_TTL,
 * SAFETY_MARGIN, RESERVE_AHEAD, MAX_CLOCK_OFFSET (the offsets drawn and the
 * bound checked), FAST_CLOCK (node 0's offset instead of a drawn one, to go
 * beyond the bound), CLOCK_CHECK, RESERVATION_CAP, CONFIRM_TAKEOVER,
 * BACKUP_RESTORE, WIPE (0 leaves that fault out).
 */

#define OLD 0
#define NEW 1
#ifndef RULE
#define RULE NEW
#endif

#ifndef NODES
#define NODES 2
#endif
#ifndef IDS
#define IDS 1
#endif
/* In the proportions of snowid's defaults (lease_ttl 10 s, safety_margin
 * 1 s, reserve_ahead 3 s): much shorter leases hide the runs that need a
 * renewal between two faults. */
#ifndef LEASE_TTL
#define LEASE_TTL 7
#endif
#ifndef SAFETY_MARGIN
#define SAFETY_MARGIN 1
#endif
#ifndef RESERVE_AHEAD
#define RESERVE_AHEAD 2
#endif
#ifndef MAX_CLOCK_OFFSET
#define MAX_CLOCK_OFFSET 1
#endif
/* 0: node 0's offset is drawn like the others'; else it is FAST_CLOCK. */
#ifndef FAST_CLOCK
#define FAST_CLOCK 0
#endif
#ifndef CLOCK_CHECK
#define CLOCK_CHECK (RULE == NEW)
#endif
#ifndef RESERVATION_CAP
#define RESERVATION_CAP (RULE == NEW)
#endif
/* An addition to NEW (see THE RULES and node_confirm_from below). */
#ifndef CONFIRM_TAKEOVER
#define CONFIRM_TAKEOVER 0
#endif
#ifndef BACKUP_RESTORE
#define BACKUP_RESTORE 1
#endif
#ifndef WIPE
#define WIPE 1
#endif

#define NOW 0        /* every time is kept as its distance from now */
#define NOBODY 255   /* the holder of a free record */
#define ABSENT (-99) /* no reservation; no created marker */
#define PASSED (-99) /* a floor or a ceiling the node's clock has passed */
/* An H this far back, read as a floor, lies below every clock; so does a
 * `created` this far back plus LEASE_TTL + RESERVE_AHEAD. Older ones are
 * clamped here. The initial `created` is one: an operator wrote 0 (Unix
 * time) for a new cluster. */
#define STALE_RESERVATION (-MAX_CLOCK_OFFSET - 1)
#define STALE_CREATED (STALE_RESERVATION - LEASE_TTL - RESERVE_AHEAD)

#define MAX(a, b) ((a) > (b) -> (a) : (b))
#define MIN(a, b) ((a) < (b) -> (a) : (b))

/* ---- The store ---------------------------------------------------------- */

typedef Record {
  byte holder = NOBODY;
  short lease_until;          /* the lease has ended once <= NOW */
  short reservation = ABSENT; /* H: raised only, by its holder's fenced writes */
  short created = STALE_CREATED;
}

Record store;

#define NOT_TAKEN 0
#define TAKEN 1
#define RESTORED 2
byte backup_state = NOT_TAKEN;
Record backup;                /* the copy; back to its initial value once restored */
bit store_wiped;

/* ---- The nodes ---------------------------------------------------------- */

short clock_offset[NODES];    /* constant: node n's clock reads NOW + offset */
bit node_holds[NODES];        /* n believes it holds the id */
/* While n holds the id (all 0 otherwise): every ID it issues lies above its
 * floor and at or below its ceiling (the H it last wrote), and is issued
 * before its deadline (real time). */
short node_floor[NODES];
short node_ceiling[NODES];
short node_deadline[NODES];
/* CONFIRM_TAKEOVER: the time from which a successful fenced step confirms
 * the claim, CONFIRMED once one has. A restored backup can bring back a
 * claim that a wipe erased, but only while that claim's lease, at most
 * LEASE_TTL from the backup and so from the wipe and the newer claim, has
 * not ended; a fenced step after that finds the store naming another
 * holder, or none, and fails. */
#define CONFIRMED (-99)
short node_confirm_from[NODES];

/* ---- The watched unit --------------------------------------------------- */

bit watching;                 /* 0 until SPIN picks an issued ID to watch */
short watched_unit;
byte watched_issuer = NOBODY;
bit run_over;                 /* the watched unit is behind every clock */

hidden short elapsed;         /* ticks since the start, for the trail's lines */
hidden byte each;             /* loop index inside one step */
hidden short target;          /* the H a reserve step computes */
hidden byte someone_may_issue_it; /* end_the_run()'s finding */

#define clock_of(n) (NOW + clock_offset[n])
/* NEW's clock check. Offsets are constant: a node passes it at every claim,
 * renewal and write, or never. */
#define clock_trusted(n) (!CLOCK_CHECK || clock_of(n) - NOW <= MAX_CLOCK_OFFSET)
/* A fenced step of node n applies only while this holds. */
#define holds_in_store(n) (store.holder == n && store.lease_until > NOW)
#define serving(n) (!run_over && node_holds[n] && NOW < node_deadline[n] && clock_trusted(n))
#define past_deadline(n) (!run_over && node_holds[n] && NOW >= node_deadline[n])
#define claimable(n) \
  (!run_over && !node_holds[n] && clock_trusted(n) && \
   (store.holder == NOBODY || store.lease_until <= NOW || store.holder == n))
#define may_issue_watched(n) \
  (serving(n) && clock_of(n) > node_floor[n] && clock_of(n) <= node_ceiling[n] && \
   (!CONFIRM_TAKEOVER || node_confirm_from[n] == CONFIRMED) && \
   watched_issuer != n && (!watching || watched_unit == clock_of(n)))
/* A time as the trail prints it: ticks since the start. */
#define at(t) (elapsed + (t))

inline forget_claim(n) {
  node_holds[n] = 0;
  node_floor[n] = 0;
  node_ceiling[n] = 0;
  node_deadline[n] = 0;
  node_confirm_from[n] = 0
}

inline write_created_if_absent(n) {
  if
  :: store.created == ABSENT ->
     store.created = MAX(NOW, clock_of(n));
     printf("t=%d node %d writes created = %d\n", at(NOW), n, at(store.created))
  :: else
  fi
}

inline print_claim(n) {
  printf("t=%d node %d (clock %d) claims the id: deadline %d\n", at(NOW), n,
         at(clock_of(n)), at(node_deadline[n]));
  if
  :: store.reservation == ABSENT -> printf("      H read: none\n")
  :: store.reservation == STALE_RESERVATION ->
     printf("      H read: %d or older\n", at(store.reservation))
  :: else -> printf("      H read: %d\n", at(store.reservation))
  fi;
  if
  :: node_floor[n] < clock_of(n) -> printf("      floor below its clock\n")
  :: else -> printf("      floor: %d\n", at(node_floor[n]))
  fi
}

inline claim(n) {
#if RULE == OLD
  write_created_if_absent(n);
#endif
  store.holder = n;
  store.lease_until = NOW + LEASE_TTL;
  node_holds[n] = 1;
#if RULE == OLD
  /* Every ID of an earlier holder lies at or below the H it wrote, and a
   * store that lost H wrote `created` after every such ID's unit. */
  node_floor[n] = (store.reservation != ABSENT -> store.reservation
                   : store.created + LEASE_TTL + RESERVE_AHEAD);
#else
  /* Every ID an earlier holder issued or may still issue lies at or below
   * (store now) + LEASE_TTL + RESERVE_AHEAD, whatever the record says. NEW
   * does not read `created` (nor write it, here): the floor is later. */
  node_floor[n] = MAX(store.reservation, MAX(NOW, clock_of(n)) + LEASE_TTL + RESERVE_AHEAD);
#endif
  node_ceiling[n] = node_floor[n];
  node_deadline[n] = NOW + LEASE_TTL - SAFETY_MARGIN;
  node_confirm_from[n] = (CONFIRM_TAKEOVER -> NOW + LEASE_TTL : CONFIRMED);
  print_claim(n);
  if
  :: node_floor[n] < clock_of(n) -> node_floor[n] = PASSED
  :: else
  fi
}

inline confirm_if_due(n) {
  if
  :: node_confirm_from[n] != CONFIRMED && node_confirm_from[n] <= NOW ->
     node_confirm_from[n] = CONFIRMED;
     printf("t=%d node %d has its claim confirmed\n", at(NOW), n)
  :: else
  fi
}

inline renew(n) {
  if
  :: holds_in_store(n) ->
     store.lease_until = NOW + LEASE_TTL;
     node_deadline[n] = NOW + LEASE_TTL - SAFETY_MARGIN;
     confirm_if_due(n);
     printf("t=%d node %d renews: deadline %d\n", at(NOW), n, at(node_deadline[n]))
  :: else ->
     printf("t=%d node %d fails to renew and stops\n", at(NOW), n);
     forget_claim(n)
  fi
}

inline reserve(n) {
  target = MAX(clock_of(n), node_floor[n]) + RESERVE_AHEAD;
#if RESERVATION_CAP
  target = MIN(target, NOW + LEASE_TTL + RESERVE_AHEAD);
#endif
  target = MAX(target, node_ceiling[n]);
  if
  :: holds_in_store(n) ->
     store.reservation = MAX(store.reservation, target);
     node_ceiling[n] = target;
     confirm_if_due(n);
     printf("t=%d node %d writes H = %d\n", at(NOW), n, at(target))
  :: else ->
     printf("t=%d node %d fails to write H and stops\n", at(NOW), n);
     forget_claim(n)
  fi;
  target = 0
}

/* Only an issue in the watched unit changes the state; every other issue
 * would be a step that changes nothing, so it is left out. */
inline issue(n) {
  printf("t=%d node %d issues an ID in unit %d\n", at(NOW), n, at(clock_of(n)));
  assert(watched_issuer == NOBODY); /* fails when a second node issues in the watched unit */
  watching = 1;
  watched_unit = clock_of(n);
  watched_issuer = n
}

/* Gives the claim up after its deadline; frees the id if `free` and the
 * store still names it holder. */
inline stop_at_deadline(n, free) {
  if
  :: free && store.holder == n -> store.holder = NOBODY; store.lease_until = 0
  :: else
  fi;
  printf("t=%d node %d passes its deadline and stops\n", at(NOW), n);
  forget_claim(n)
}

proctype Node(byte me) {
end:
  do
  :: d_step { claimable(me) -> claim(me) }
  :: d_step { serving(me) -> renew(me) }
  :: d_step { serving(me) -> reserve(me) }
  :: d_step { may_issue_watched(me) -> issue(me) }
  :: d_step { past_deadline(me) -> stop_at_deadline(me, 1) }
  :: d_step { past_deadline(me) -> stop_at_deadline(me, 0) }
#if IDS > 1 && RULE == OLD
  /* claim_elsewhere(): another id's claim, seen from this one. */
  :: d_step { !run_over && !node_holds[me] && store.created == ABSENT ->
              write_created_if_absent(me) }
#endif
  od
}

/* ---- Time and faults ---------------------------------------------------- */

/* A record one tick later, clamping what no later step can tell apart:
 *  - a lease that has ended can never be renewed and lets anyone claim: it
 *    is the same as no holder;
 *  - OLD: an H at or below STALE_RESERVATION, read as a floor, is below
 *    every clock, as is any older one; so is a `created` at or below
 *    STALE_CREATED;
 *  - NEW: an H at or below NOW + LEASE_TTL + RESERVE_AHEAD is below every
 *    later floor: it is the same as no H; `created` is not read. */
inline age_record(r) {
  if
  :: r.lease_until > NOW + 1 -> r.lease_until--
  :: else -> r.holder = NOBODY; r.lease_until = 0
  fi;
  if
  :: r.reservation == ABSENT
#if RULE == OLD
  :: else -> r.reservation = MAX(r.reservation - 1, STALE_RESERVATION)
  fi;
  if
  :: r.created == ABSENT
  :: else -> r.created = MAX(r.created - 1, STALE_CREATED)
#else
  :: r.reservation != ABSENT && r.reservation - 1 <= NOW + LEASE_TTL + RESERVE_AHEAD ->
     r.reservation = ABSENT
  :: r.reservation - 1 > NOW + LEASE_TTL + RESERVE_AHEAD -> r.reservation--
#endif
  fi
}

/* A node one tick later: a deadline that has come stays come; a floor or a
 * ceiling below the clock is PASSED (every later unit is above the floor,
 * none at or below the ceiling, and every later write's target is above
 * both). */
inline age_node(n) {
  if
  :: !node_holds[n]
  :: else ->
     node_deadline[n] = MAX(node_deadline[n] - 1, NOW);
     if
     :: node_confirm_from[n] == CONFIRMED
     :: else -> node_confirm_from[n] = MAX(node_confirm_from[n] - 1, NOW)
     fi;
     if
     :: node_floor[n] - 1 < clock_of(n) -> node_floor[n] = PASSED
     :: else -> node_floor[n]--
     fi;
     if
     :: node_ceiling[n] - 1 < clock_of(n) -> node_ceiling[n] = PASSED
     :: else -> node_ceiling[n]--
     fi
  fi
}

/* Once every clock is past the watched unit, no node can issue in it again
 * (a node issues only in the unit its clock reads): nothing is left to
 * check, and every such run ends in one final state. */
inline end_the_run() {
  someone_may_issue_it = 0;
  for (each : 0 .. NODES - 1) {
    someone_may_issue_it = someone_may_issue_it || clock_of(each) <= watched_unit
  }
  if
  :: !someone_may_issue_it ->
     store.holder = NOBODY; store.lease_until = 0; store.reservation = ABSENT;
     store.created = ABSENT;
     backup.holder = NOBODY; backup.lease_until = 0; backup.reservation = ABSENT;
     backup.created = ABSENT;
     for (each : 0 .. NODES - 1) {
       forget_claim(each);
       clock_offset[each] = 0
     }
     backup_state = RESTORED; store_wiped = 1;
     watched_unit = 0; watched_issuer = 0;
     run_over = 1
  :: else
  fi;
  each = 0;
  someone_may_issue_it = 0
}

inline time_passes() {
  elapsed++;
  age_record(store);
  age_record(backup);
  for (each : 0 .. NODES - 1) {
    age_node(each)
  }
  each = 0;
  if
  :: watching ->
     watched_unit--;
     end_the_run()
  :: else
  fi
}

inline copy_record(from, to) {
  to.holder = from.holder;
  to.lease_until = from.lease_until;
  to.reservation = from.reservation;
  to.created = from.created
}

proctype World() {
end:
  do
  :: d_step { !run_over -> time_passes() }
  :: d_step {
       !run_over && BACKUP_RESTORE && backup_state == NOT_TAKEN ->
       copy_record(store, backup);
       backup_state = TAKEN;
       printf("t=%d backup taken\n", at(NOW))
     }
  :: d_step {
       !run_over && backup_state == TAKEN ->
       copy_record(backup, store);
       backup.holder = NOBODY; backup.lease_until = 0; backup.reservation = ABSENT;
       backup.created = STALE_CREATED;
       backup_state = RESTORED;
       printf("t=%d backup restored\n", at(NOW))
     }
  :: d_step {
       !run_over && WIPE && !store_wiped ->
       store.holder = NOBODY; store.lease_until = 0; store.reservation = ABSENT;
       store.created = ABSENT;
       store_wiped = 1;
       printf("t=%d store wiped\n", at(NOW))
     }
  od
}

/* Draws the offsets (nodes 1.. in ascending order: any other order is the
 * same run with the nodes renamed), gives node 0 its head start (with
 * IDS=2, or the id is one never used), and starts the nodes and time. */
init {
  byte n;
  atomic {
#if FAST_CLOCK
    clock_offset[0] = FAST_CLOCK;
#else
    select(n : 0 .. 2 * MAX_CLOCK_OFFSET);
    clock_offset[0] = n - MAX_CLOCK_OFFSET;
#endif
    for (n : 1 .. NODES - 1) {
      clock_offset[n] = (n == 1 -> -MAX_CLOCK_OFFSET : clock_offset[n - 1]);
      do
      :: clock_offset[n] < MAX_CLOCK_OFFSET -> clock_offset[n]++
      :: break
      od
    }
    n = 0;
#if IDS > 1
    if
    :: printf("t=0 the id was never used; node 0 holds another\n")
    :: true ->
#endif
       /* Node 0 claimed the id long ago, has issued up to the unit before
        * its clock's, and renewed and wrote H at time 0. */
       node_holds[0] = 1;
       node_confirm_from[0] = CONFIRMED;
       node_floor[0] = PASSED;
       node_deadline[0] = NOW + LEASE_TTL - SAFETY_MARGIN;
       node_ceiling[0] = clock_of(0) + RESERVE_AHEAD;
#if RESERVATION_CAP
       node_ceiling[0] = MIN(node_ceiling[0], NOW + LEASE_TTL + RESERVE_AHEAD);
#endif
       store.holder = 0;
       store.lease_until = NOW + LEASE_TTL;
       store.reservation = node_ceiling[0];
       printf("t=0 node 0 (clock %d) holds the id from before: H %d, deadline %d\n",
              clock_of(0), node_ceiling[0], node_deadline[0])
#if IDS > 1
    fi;
#endif
    for (n : 0 .. NODES - 1) {
      run Node(n)
    }
    n = 0;
    run World()
  }
}
