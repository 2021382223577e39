-- snowid segment mode on MariaDB (10.2 or later) or MySQL (8.0.16 or later):
-- one row per business tag, as sql/segments.sql for SQLite and PostgreSQL.
--
-- snowid runs it itself on first use, only if the table is missing, so an
-- account without CREATE works once an operator has applied this file ahead
-- (snowid then needs SELECT, INSERT and UPDATE on the table):
--
--   mariadb -h db.example -u admin -p ids < sql/segments.mysql.sql
--
-- A node takes numbers [max_id, max_id + increment) by raising max_id in a
-- transaction that holds the row's lock; never lower max_id by hand, or
-- numbers repeat. (Meituan Leaf's own leaf_alloc table is served as it is
-- with ?layout=leaf; this file is not for it.)
CREATE TABLE IF NOT EXISTS snowid_segments (
  -- 1 to 128 characters of UTF-8, as Leaf's biz_tag (include/snowid/segment_tag.h),
  -- compared code point for code point (trailing spaces aside, as MariaDB and
  -- MySQL compare a VARCHAR)
  tag         VARCHAR(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY,
  -- the first number no node has taken yet
  max_id      BIGINT       NOT NULL CHECK (max_id >= 0),
  -- the smallest range a node takes; nodes double it up to their max_step
  -- while a range lasts less than 15 minutes
  step        BIGINT       NOT NULL CHECK (step >= 1 AND step <= 1000000000),
  description VARCHAR(256) NOT NULL DEFAULT '',
  -- UTC (snowid's sessions use time_zone '+00:00'); set on every change
  updated_at  DATETIME     NOT NULL DEFAULT CURRENT_TIMESTAMP
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
