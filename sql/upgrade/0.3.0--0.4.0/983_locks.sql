-- 0.3.0 -> 0.4.0: issue 30, finding 7 (helper locks): no lock any role can
-- take.  The hourly cap, claims under pg_agents.max_runs_per_workspace, the
-- tick's periodic work and the creation of a workspace's assistant take row
-- locks of agent.locks (sql/src/020_locks.sql, made by 983_locks.include)
-- instead of advisory locks whose keys anyone can compute.  The whole new
-- definition of every function that took one, and the distribution plan
-- (agent.locks is local).

\ir ../../functions/agent._enqueue_run.sql

-- ---------------------------------------------------------------------------
-- The API trigger (issue 31): an application starts a run of a trigger of
-- kind api on behalf of a user.  The run is manual (it acts as by_user, who
-- needs the chat level), origin api, linked to the trigger; it goes through
-- the one queue (agent._enqueue_run), the agent's hourly run cap (counted
-- over its autonomous runs and its API-trigger runs of the last hour) and the
-- deduplication of events: the same payload fired again through the same
-- trigger within pg_agents.dedup_window queues nothing and returns the first
-- run's id.
-- ---------------------------------------------------------------------------
\ir ../../functions/agent.fire_trigger.sql
REVOKE ALL ON FUNCTION agent.fire_trigger(bigint, text, jsonb) FROM PUBLIC;
COMMENT ON FUNCTION agent.fire_trigger(bigint, text, jsonb) IS
  'Fires a trigger of kind api for by_user (who needs the chat level on the agent): queues a manual run, origin api, with the payload as its input; the agent''s hourly run cap and pg_agents.dedup_window apply as for events (the same payload again returns the first run''s id). A trigger of another workspace is 42704; another kind 42809; a disabled trigger or a suspended agent 55000.';

-- Fair claiming (docs/runs.md, "Fair claiming").  Each workspace has its
-- own queue, interactive runs first (priority), then oldest (id); a claim
-- serves the workspaces in turn:
--   - interactive runs before autonomous ones, whatever their workspace;
--   - then the run whose turn comes first: its workspace's runs running
--     now plus its place in the workspace's queue of that priority, so that
--     the workspace with the fewest runs in flight is served first and a
--     claim takes every workspace's next run before anyone's second;
--   - then the oldest.
-- The lone run of a workspace with nothing running waits only for
-- interactive runs and for the older next runs of other workspaces with
-- nothing running (one each), never behind a backlog.  pg_agents.max_runs_per_workspace (0: no cap) caps the runs
-- of a workspace that are running (waiting runs hold no slot): a workspace
-- at its cap is skipped, not waited for.
--
-- A session bound to a workspace (pg_agents.workspace) claims only that
-- workspace's runs.
--
-- When one workspace has queued runs, its queue is claimed in one statement
-- (interactive first, then oldest, LIMIT n FOR UPDATE SKIP LOCKED).  With
-- several, the claim runs in passes.  One pass:
--   1. the workspaces with queued runs, by a skip scan of runs_queue_ws_idx
--      (one index descent per workspace, however many runs each has queued),
--      and how many runs each has running (runs_lease_idx);
--   2. the first k queued runs of each workspace with room, k = n - W + 1
--      for W such workspaces (at least 1; less when the cap leaves less
--      room): never more than that from one workspace in one claim, and
--      n candidates whenever n runs can be claimed;
--   3. the candidates in that order, each locked by primary key with SKIP
--      LOCKED until n are locked, and claimed.
-- A candidate locked by a concurrent claimer (or claimed by one since the
-- candidates were read) is skipped: when a pass ends short because of that,
-- another pass runs without those candidates, so that a claim never comes
-- back short while claimable runs remain (each such pass excludes at least
-- one more run).  With the cap on, claims are serialised (the row of
-- agent.locks of purpose claim, locked until the transaction ends) so that
-- two claimers never both fill the same room; the running runs are then
-- counted by a statement that starts after the lock.
\ir ../../functions/agent.claim_runs.sql

\ir ../../functions/agent.tick.sql

\ir ../../functions/agent._assistant_for.sql

-- pg_agents: how the tables are laid out on a Citus cluster (docs/scaling.md,
-- "Which tables go where").  One source of truth: the procedure distributes
-- from agent.distribution_plan(), and test/pgtap/scaling_schema.sql checks
-- the catalog against it (every table of the extension exactly once, the
-- keys and foreign keys Citus accepts), without Citus.
\ir ../../functions/agent.distribution_plan.sql
