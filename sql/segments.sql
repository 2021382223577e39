-- snowid segment mode: one row per business tag.
--
-- The same statement works on PostgreSQL (9.5 or later) and SQLite (3.35 or
-- later). snowid runs it itself on first use: on PostgreSQL only if the table
-- is missing, so a role without CREATE on the schema works once an operator
-- has applied this file ahead (snowid then needs SELECT, INSERT and UPDATE):
--
--   psql "postgresql://admin@db.example:5432/ids" -f sql/segments.sql
--   sqlite3 /var/lib/snowid/segments.db < sql/segments.sql
--
-- A node takes numbers [max_id, max_id + increment) by raising max_id in one
-- UPDATE ... RETURNING; never lower max_id by hand, or numbers repeat.
CREATE TABLE IF NOT EXISTS snowid_segments (
  -- 1 to 128 characters of UTF-8, as Leaf's biz_tag (include/snowid/segment_tag.h)
  tag         VARCHAR(128) NOT NULL PRIMARY KEY,
  -- the first number no node has taken yet
  max_id      BIGINT       NOT NULL CHECK (max_id >= 0),
  -- the smallest range a node takes; nodes double it up to their max_step
  -- while a range lasts less than 15 minutes
  step        BIGINT       NOT NULL CHECK (step >= 1 AND step <= 1000000000),
  description VARCHAR(256) NOT NULL DEFAULT '',
  -- UTC; set on every change
  updated_at  TIMESTAMP    NOT NULL DEFAULT CURRENT_TIMESTAMP
);
