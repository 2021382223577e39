-- snowid cluster mode on PostgreSQL (coordinator = "postgres"): one row per
-- (cluster, node id).
--
-- snowid runs this itself on first use if the table is missing, so a role
-- without CREATE on the schema works once an operator has applied this file
-- ahead (snowid then needs SELECT, INSERT and UPDATE on the table):
--
--   psql "postgresql://admin@db.example:5432/ids" -f sql/node_claims.sql
--
-- Never lower a reservation by hand: a node whose claim ends issues IDs up to
-- its reservation, and the next holder of that node id starts above it.
CREATE TABLE IF NOT EXISTS snowid_node_claims (
  -- the snowid cluster name, [A-Za-z0-9_.-]+
  cluster     VARCHAR(128) NOT NULL,
  -- the node id; -1 is the cluster's created marker (its reservation column
  -- holds the Unix ms at which the cluster first claimed in this database)
  node_id     BIGINT       NOT NULL,
  -- the claim identity of the holder (random per claim); NULL: unclaimed
  holder      VARCHAR(64),
  -- the holder's record (JSON: host, pid, addresses, clock)
  record      TEXT,
  -- the end of the holder's lease, Unix ms by the DATABASE's clock
  lease_until BIGINT       NOT NULL DEFAULT 0,
  -- the reservation H, Unix ms: IDs of this node id lie at or below it
  reservation BIGINT       NOT NULL DEFAULT 0,
  -- counts the writes, so that every conditional UPDATE changes the row
  writes      BIGINT       NOT NULL DEFAULT 0,
  PRIMARY KEY (cluster, node_id)
);
