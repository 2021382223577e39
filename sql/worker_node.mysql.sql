-- node_id_policy = "disposable" on MariaDB or MySQL (coordinator = "mysql"):
-- Baidu uid-generator's WORKER_NODE table, with its columns and types as its
-- own script (src/main/scripts/WORKER_NODE.sql) creates them. A table that
-- uid-generator already uses serves snowid unchanged: each start of snowidd
-- inserts one row and takes its ID as the node id, as uid-generator's
-- DisposableWorkerIdAssigner does; ids are never reused.
--
-- snowid runs this itself on first use if the table is missing, so an account
-- without CREATE on the database works once an operator has applied this file
-- ahead (snowid then needs SELECT and INSERT on the table):
--
--   mariadb -h db.example -u admin ids < sql/worker_node.mysql.sql
--
-- Never lower AUTO_INCREMENT and never reuse a deleted row's ID: a node id is
-- unique only because no two starts ever get the same one.
CREATE TABLE IF NOT EXISTS WORKER_NODE (
  ID BIGINT NOT NULL AUTO_INCREMENT COMMENT 'auto increment id',
  HOST_NAME VARCHAR(64) NOT NULL COMMENT 'host name',
  PORT VARCHAR(64) NOT NULL COMMENT 'port',
  TYPE INT NOT NULL COMMENT 'node type: ACTUAL or CONTAINER',
  LAUNCH_DATE DATE NOT NULL COMMENT 'launch date',
  MODIFIED TIMESTAMP NOT NULL COMMENT 'modified time',
  CREATED TIMESTAMP NOT NULL COMMENT 'created time',
  PRIMARY KEY (ID)
) COMMENT = 'DB WorkerID Assigner for UID Generator', ENGINE = INNODB;
