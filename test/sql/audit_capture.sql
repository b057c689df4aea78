-- Audit triggers: what is recorded for INSERT, UPDATE and DELETE, with every
-- column; the refusals of the append-only log; the errors of the API.
\set SHOW_CONTEXT never
CREATE TABLE public.audit_rt_tickets (
    id bigint PRIMARY KEY, workspace_id text, owner text, title text,
    priority text, api_key text, meta jsonb, due date, score numeric);
SELECT agent.audit_table('public.audit_rt_tickets', 'ticket', 'owner');
SELECT * FROM agent.audited_tables WHERE table_name = 'public.audit_rt_tickets'::regclass;

-- a human through the application
BEGIN;
SELECT agent.set_identity('user:alice', 'ws-rt', NULL, 'frontend');
INSERT INTO audit_rt_tickets VALUES
  (1, 'ws-rt', 'alice', 'Printer on fire', 'high', 'k-123', '{"tags": ["hw"], "password": "pw"}', '2026-12-01', 1.50);
COMMIT;
-- an agent run, on behalf of alice
BEGIN;
SELECT agent.set_identity('agent:7', 'ws-rt', 4242, 'tool', 'alice');
UPDATE audit_rt_tickets SET priority = 'low', score = 2 WHERE id = 1;
UPDATE audit_rt_tickets SET priority = 'low' WHERE id = 1;   -- changes nothing
DELETE FROM audit_rt_tickets WHERE id = 1;
COMMIT;
-- the system, no workspace GUC: the row's workspace_id column is used
BEGIN;
SELECT agent.set_identity('system');
INSERT INTO audit_rt_tickets (id, workspace_id, title) VALUES (2, 'ws-rt', 'Cron ticket');
COMMIT;
-- no identity at all: a human, db_user still recorded
INSERT INTO audit_rt_tickets (id, title) VALUES (3, 'Anonymous');

SELECT actor_kind, actor_id, on_behalf_of, db_user, run_id, surface, action, status,
       error_code, target_type, target_id, owner_id, workspace_id, inputs, changes, summary,
       at IS NOT NULL AS has_at, txid IS NOT NULL AS has_txid
  FROM agent.audit_log WHERE target_type = 'ticket' AND summary LIKE '% public.audit_rt_tickets%'
 ORDER BY id;

-- one transaction, one txid
BEGIN;
INSERT INTO audit_rt_tickets (id, title) VALUES (4, 'a');
UPDATE audit_rt_tickets SET title = 'b' WHERE id = 4;
SELECT count(DISTINCT txid) AS txids, bool_and(txid = txid_current()) AS current_txid
  FROM agent.audit_log WHERE target_type = 'ticket' AND target_id = '4';
COMMIT;

-- composite primary key: target_id is a JSON array
CREATE TABLE public.audit_rt_pairs (a int, b text, v text, PRIMARY KEY (a, b));
SELECT agent.audit_table('public.audit_rt_pairs');
INSERT INTO audit_rt_pairs VALUES (1, 'x"y', 'v');
SELECT target_type, target_id, changes FROM agent.audit_log
 WHERE summary LIKE 'insert public.audit_rt_pairs%';

-- TRUNCATE of an audited table is recorded too
TRUNCATE audit_rt_pairs;
SELECT action, target_type, target_id, summary FROM agent.audit_log
 WHERE summary LIKE 'truncate public.audit_rt_pairs%';

-- the log is append-only, for its owner and superusers too
UPDATE agent.audit_log SET summary = 'rewritten' WHERE target_type = 'ticket';
DELETE FROM agent.audit_log WHERE target_type = 'ticket';
DELETE FROM agent.audit_log WHERE false;
TRUNCATE agent.audit_log;
SET session_replication_role = replica;
DELETE FROM agent.audit_log WHERE target_type = 'ticket';
RESET session_replication_role;

-- API errors
SELECT agent.audit_table('agent.audit_log');
CREATE VIEW public.audit_rt_view AS SELECT 1 AS x;
SELECT agent.audit_table('public.audit_rt_view');
SELECT agent.audit_table('public.audit_rt_tickets', '  ');
SELECT agent.audit_table('public.audit_rt_tickets', 'ticket', 'no_such_column');
SELECT agent.audit_table(NULL);
SELECT agent.unaudit_table(NULL);
SELECT agent._audit_event('x.test', 'maybe');
SELECT agent._audit_event(NULL);
BEGIN;
SET LOCAL pg_agents.run_id = 'not-a-number';
INSERT INTO audit_rt_tickets (id, title) VALUES (9, 'x');
ROLLBACK;
SELECT * FROM agent.audit_events(actor_kind => 'robot');
SELECT * FROM agent.audit_events(status => 'fine');
SELECT * FROM agent.audit_events(lim => 0);
SELECT agent._audit_trigger();

-- removing the trigger
SELECT agent.unaudit_table('public.audit_rt_tickets');
SELECT agent.unaudit_table('public.audit_rt_tickets');
INSERT INTO audit_rt_tickets (id, title) VALUES (10, 'not audited');
SELECT count(*) FROM agent.audit_log WHERE target_type = 'ticket' AND target_id = '10';
SELECT action, target_type, target_id, summary FROM agent.audit_log
 WHERE action IN ('audit.table', 'audit.untable') AND target_id = 'public.audit_rt_tickets' ORDER BY id;

SELECT agent.unaudit_table('public.audit_rt_pairs');
DROP VIEW public.audit_rt_view;
DROP TABLE public.audit_rt_tickets, public.audit_rt_pairs;
