-- pg_agents: run bookkeeping, delegation and approvals (docs/runs.md, docs/delegation.md).
--
-- Locking rule: every function that touches more than one run of a
-- delegation tree first locks the tree's root run (FOR UPDATE), then the runs
-- it changes.  Work on one tree is serialised, work on different trees runs
-- in parallel, and no two functions take run locks in opposite orders.
-- agent.claim_runs only locks queued runs, one by one, with SKIP LOCKED.
-- (A run whose root_run_id names no existing run is its own root.)
--
-- Token accounting: a run's effective budget is its token_budget, or its
-- agent's default_token_budget when NULL.  tokens_total is the run's own
-- usage plus all its descendants'.  tokens_reserved is the part of its active
-- children's budgets they have not used yet; the remaining envelope of a run
-- is  budget - tokens_total - tokens_reserved.

-- Levels come from the access module (sql/src/100_access.sql): agent.user_can
-- and agent.activity_scope.

-- ---------------------------------------------------------------------------
-- Internal helpers
-- ---------------------------------------------------------------------------

CREATE FUNCTION agent._run_is_active(status text) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT $1 IN ('queued', 'running', 'waiting_approval', 'waiting_input', 'waiting_children') $$;
COMMENT ON FUNCTION agent._run_is_active(text) IS
  'Internal: whether a run status is not terminal (queued, running, waiting_approval, waiting_input, waiting_children).';

CREATE FUNCTION agent._runs_notify(p_run_id bigint, p_agent_id bigint, p_status text) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  PERFORM pg_notify('agent_runs', json_build_object('run_id', p_run_id, 'agent_id', p_agent_id,
                                                    'status', p_status)::text);
  IF p_status = 'queued' THEN
    PERFORM agent._request_wake();  -- the worker's latch is set at commit (sql/src/400_events.sql)
  END IF;
END
$$;
REVOKE ALL ON FUNCTION agent._runs_notify(bigint, bigint, text) FROM PUBLIC;
COMMENT ON FUNCTION agent._runs_notify(bigint, bigint, text) IS
  'Internal: NOTIFY agent_runs with {"run_id","agent_id","status"} (delivered at commit); a re-queued run also wakes the worker at commit.';

-- Locks the root run of a tree (the tree mutex).  Returns false when
-- p_skip_locked and the root is locked by someone else.
\ir ../functions/agent._lock_tree.sql
REVOKE ALL ON FUNCTION agent._lock_tree(bigint, boolean) FROM PUBLIC;
COMMENT ON FUNCTION agent._lock_tree(bigint, boolean) IS
  'Internal: locks the root run of a delegation tree (every multi-run change takes it first).';

-- Looks a run up and locks its tree; raises 42704 for an unknown run.
\ir ../functions/agent._lock_run.sql
REVOKE ALL ON FUNCTION agent._lock_run(bigint) FROM PUBLIC;
COMMENT ON FUNCTION agent._lock_run(bigint) IS
  'Internal: locks the tree of a run, then the run, and returns it (42704 when unknown or of another workspace than the session''s).';

-- Appends a step to a run (the caller holds the tree lock).
\ir ../functions/agent._runs_add_step.sql
REVOKE ALL ON FUNCTION agent._runs_add_step(bigint, text, text, jsonb, jsonb, text, boolean) FROM PUBLIC;
COMMENT ON FUNCTION agent._runs_add_step(bigint, text, text, jsonb, jsonb, text, boolean) IS
  'Internal: appends a step (next seq) to a run whose tree the caller has locked.';

\ir ../functions/agent._audit_run.sql
REVOKE ALL ON FUNCTION agent._audit_run(text, agent.runs, text, jsonb, text, text) FROM PUBLIC;
COMMENT ON FUNCTION agent._audit_run(text, agent.runs, text, jsonb, text, text) IS
  'Internal: audits a run state change through agent._audit_event (target_type run).';

-- ---------------------------------------------------------------------------
-- Ending a run (the one path: finish_run, cancel_run, deny, tick)
-- ---------------------------------------------------------------------------

-- The end of runs once their row is updated (status, output, error,
-- finished_at): pending approvals expired, the trigger's last status, audit
-- row, notification.  agent._finish_run calls it for one run; the worker
-- (agent._worker_finish_replies) for a batch of runs, in id order.
\ir ../functions/agent._finish_runs_effects.sql
REVOKE ALL ON FUNCTION agent._finish_runs_effects(agent.runs[]) FROM PUBLIC;
COMMENT ON FUNCTION agent._finish_runs_effects(agent.runs[]) IS
  'Internal: the end of runs whose row is updated (agent._finish_run, the worker''s batch): pending approvals expired, the trigger''s last status, error and first run time, one run.finish audit row and one agent_runs notification per run, in order.';

\ir ../functions/agent._finish_run.sql
REVOKE ALL ON FUNCTION agent._finish_run(bigint, text, jsonb, text) FROM PUBLIC;
COMMENT ON FUNCTION agent._finish_run(bigint, text, jsonb, text) IS
  'Internal: ends an active run (tree lock held): cancels active children, returns unused budget to the parent, records the result on the parent''s delegate step, re-queues a waiting parent, updates the trigger, audits, notifies.';



-- ---------------------------------------------------------------------------
-- Starting, claiming, leasing
-- ---------------------------------------------------------------------------

\ir ../functions/agent.start_run.sql
COMMENT ON FUNCTION agent.start_run(bigint, text, jsonb, text, text) IS
  'Queues a run of an agent: manual runs (chat, api, draft) require the chat level of requested_by; autonomous runs (api, schedule, event, mention) are refused for a suspended agent. Returns the run id.';

-- Queue marks (docs/runs.md, "The queue and long transactions").  Runs are
-- queued in id order, so the index entries of claimed runs pile up at the
-- low end of each workspace's queue of one priority; while a snapshot held
-- open elsewhere keeps them, a claim that reads the queue from its head
-- walks them all.  agent.run_queue_marks keeps, per workspace and
-- priority, an id below which that queue has no queued run: a claim starts
-- its scan there (one B-tree descent), past the dead prefix.
--
-- Raising a mark must never pass a run that is or may become queued:
--   - a run queued again below its mark or candidate (lease recovery,
--     resume, requeue, retry, an UPDATE by hand) is noted in
--     agent.run_queue_returns in the same transaction (trigger
--     runs_queue_mark, agent._queue_mark_lower): a claim reads its queue
--     from the lowest of the mark and the runs noted there, and a step
--     folds them into the mark (an INSERT: the trigger never waits for a
--     claimer);
--   - a mark is raised in two steps (agent._queue_advance): first a
--     candidate is taken (the first queued run in view, or the next run id
--     when none is), with the transactions that hold agent.runs or its id
--     sequence open for writing at that moment (pg_locks: a transaction
--     that took a run id, or claimed runs that may come back if it rolls
--     back, holds RowExclusiveLock on one of them until it ends); the mark
--     becomes the candidate (or the first queued run then in view, if
--     lower) only once all of those have ended, so that what they queued
--     is in view by then.
-- A claim takes a step when it has walked about 256 ids past the mark or
-- its candidate, so the marks are written once per 256 runs or so (each
-- write a row version that a held snapshot keeps too).
\ir ../tables/agent.run_queue_marks.sql
-- The marks of the queue of all workspaces (workspace ''; runs_queue_idx),
-- which the claim of several workspaces reads its walk from: made here, so
-- that no claim ever inserts one (two claimers inserting the same mark: the
-- second would wait for the first's transaction), for the priorities the
-- runs take (10: interactive, 0: autonomous); another is walked from its
-- start.
INSERT INTO agent.run_queue_marks (workspace_id, priority, low_id)
VALUES ('', 10, '-9223372036854775808'), ('', 0, '-9223372036854775808')
ON CONFLICT DO NOTHING;

\ir ../tables/agent.run_queue_returns.sql

-- A run queued again below its queue's mark or candidate: noted for the
-- claims (an INSERT, which waits for no one).  A step that takes a new
-- candidate while this transaction is open waits for it (it holds
-- agent.runs for writing); one already taken at or below this run's id, or
-- a mark raised to at most that candidate, never passes the run.
\ir ../functions/agent._queue_mark_lower.sql
CREATE TRIGGER runs_queue_mark AFTER UPDATE OF status, priority, workspace_id ON agent.runs
  FOR EACH ROW WHEN (NEW.status = 'queued' AND (OLD.status <> 'queued' OR OLD.priority <> NEW.priority
                                                OR OLD.workspace_id <> NEW.workspace_id))
  EXECUTE FUNCTION agent._queue_mark_lower();

-- One step of the marks of a workspace (see above); p_prios: priorities of
-- runs just claimed, whose marks are made if missing.  A mark locked by
-- another transaction is left alone.
\ir ../functions/agent._queue_advance.sql
REVOKE ALL ON FUNCTION agent._queue_advance(text, smallint[]) FROM PUBLIC;
COMMENT ON FUNCTION agent._queue_advance(text, smallint[]) IS
  'Internal (agent.claim_runs): one step of the queue marks of a workspace: a candidate whose writers have all ended becomes the mark (or the first queued run in view, if lower); then a new candidate (the first queued run in view, or the next run id) is taken with the virtual transactions holding agent.runs or its id sequence for writing. Makes the marks of p_prios if missing; skips marks locked by others.';

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
\ir ../functions/agent.claim_runs.sql

\ir ../functions/agent.renew_lease.sql
COMMENT ON FUNCTION agent.renew_lease(bigint) IS
  'Extends the lease of a running run to now() + pg_agents.run_lease (long runs call it before the lease ends); returns the new lease end.';

\ir ../functions/agent.wait_for_children.sql
COMMENT ON FUNCTION agent.wait_for_children(bigint) IS
  'The executor of a running run that has delegated parks it in waiting_children (lease released; returns true) until its last active child ends, which re-queues it; returns false (run stays running) when no child is active.';

-- ---------------------------------------------------------------------------
-- Usage and the end of a run
-- ---------------------------------------------------------------------------

\ir ../functions/agent.add_usage.sql
COMMENT ON FUNCTION agent.add_usage(bigint, int, int, text) IS
  'Adds token usage to a run and rolls it up to every ancestor''s tokens_total (same transaction). Returns the run''s remaining budget (budget - tokens_total - tokens_reserved): at 0 or below the executor makes no further model call and ends the run budget_exceeded.';

CREATE FUNCTION agent.finish_run(run_id bigint, status text, output jsonb DEFAULT NULL, error text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
  r agent.runs%ROWTYPE;
BEGIN
  IF status IS NULL OR status NOT IN ('succeeded', 'failed', 'budget_exceeded', 'cancelled', 'expired') THEN
    RAISE EXCEPTION 'invalid final status "%"', status
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'A run ends succeeded, failed, budget_exceeded, cancelled or expired.';
  END IF;
  r := agent._lock_run(run_id);
  IF NOT agent._run_is_active(r.status) THEN
    RAISE EXCEPTION 'run % has already ended', r.id
      USING ERRCODE = 'object_not_in_prerequisite_state',
            DETAIL = format('The run ended %s.', r.status);
  END IF;
  PERFORM agent._finish_run(r.id, status, output, error);
END
$$;
COMMENT ON FUNCTION agent.finish_run(bigint, text, jsonb, text) IS
  'Ends an active run with a terminal status (succeeded, failed, budget_exceeded, cancelled, expired): unused reserved budget returns to the parent, the parent''s delegate step gets the result, a parent waiting for its children is re-queued when the last one ends, active children are cancelled, the trigger''s last_status/last_error/last_run_at are written; audited and notified.';

-- ---------------------------------------------------------------------------
-- Re-run and cancel
-- ---------------------------------------------------------------------------

\ir ../functions/agent.rerun.sql

\ir ../functions/agent.cancel_run.sql

-- ---------------------------------------------------------------------------
-- Maintenance, called by agent.tick()
-- ---------------------------------------------------------------------------

\ir ../functions/agent._tick_runs.sql
REVOKE ALL ON FUNCTION agent._tick_runs(timestamptz) FROM PUBLIC;
COMMENT ON FUNCTION agent._tick_runs(timestamptz) IS
  'Internal (called by agent.tick): re-queues running runs whose lease ended before p_now, fails them ("run abandoned after N attempts") at pg_agents.max_attempts, cancels the waiting runs of deleted agents, expires pending approvals past expires_at (their waiting runs end expired). Trees locked by others are left for the next tick. Returns {"reclaimed","abandoned","approvals_expired","cancelled_deleted"}.';

-- ---------------------------------------------------------------------------
-- Delegation (checks in C: src/delegation.c)
-- ---------------------------------------------------------------------------

CREATE FUNCTION agent.delegation_depth_limit() RETURNS integer
LANGUAGE C STABLE PARALLEL SAFE
AS 'MODULE_PATHNAME', 'pg_agents_delegation_depth_limit';
COMMENT ON FUNCTION agent.delegation_depth_limit() IS
  'The delegation depth in force: pg_agents.max_delegation_depth, negative values falling back to 3 and values above 5 clamped to 5 (0: no delegation).';

CREATE FUNCTION agent._delegate(p_parent_run_id bigint, p_child_agent_id bigint, p_task text,
                                p_attachments jsonb, p_token_budget bigint, p_raise boolean)
RETURNS jsonb
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'pg_agents_delegate';
REVOKE ALL ON FUNCTION agent._delegate(bigint, bigint, text, jsonb, bigint, boolean) FROM PUBLIC;
COMMENT ON FUNCTION agent._delegate(bigint, bigint, text, jsonb, bigint, boolean) IS
  'Internal: checks and creates a child run (src/delegation.c); p_raise chooses between raising a refusal and returning it.';

CREATE FUNCTION agent.delegate(parent_run_id bigint, child_agent_id bigint, task text,
                               attachments jsonb DEFAULT '[]', token_budget int DEFAULT NULL)
RETURNS bigint
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT (agent._delegate($1, $2, $3, coalesce($4, '[]'::jsonb), $5, true) ->> 'child_run_id')::bigint
$$;
COMMENT ON FUNCTION agent.delegate(bigint, bigint, text, jsonb, int) IS
  'Queues a child run of a running run (of the session''s workspace: another workspace''s run is unknown, 42704) for an agent in the parent agent''s delegation list (active, same workspace): autonomous, origin delegation, depth + 1, input {task, attachments, parent_run_id} (an attachment naming a resource the child may not read is replaced by {resource_type, resource_id, withheld}), budget reserved from the parent''s envelope, audited. Refusals raise (depth 54000, cycle 42P19, budget 54000, unlisted 42501, ...). Writes no step on the parent (the caller records its tool step). Returns the child run id.';

CREATE FUNCTION agent.try_delegate(parent_run_id bigint, child_agent_id bigint, task text,
                                   attachments jsonb DEFAULT '[]', token_budget int DEFAULT NULL)
RETURNS jsonb
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT agent._delegate($1, $2, $3, coalesce($4, '[]'::jsonb), $5, false)
$$;
COMMENT ON FUNCTION agent.try_delegate(bigint, bigint, text, jsonb, int) IS
  'Like agent.delegate, for executors, with the step bookkeeping: an accepted delegation gets a delegate step on the parent whose output becomes the child''s result when it ends; a refusal is returned ({"ok": false, "reason", "error", "detail", "sqlstate"}) instead of raised, and its denied audit row and denied step on the parent are kept. Success: {"ok": true, "child_run_id", "token_budget", "depth", "status"}.';

\ir ../functions/agent.delegation_context.sql
REVOKE ALL ON FUNCTION agent.delegation_context(bigint) FROM PUBLIC;
COMMENT ON FUNCTION agent.delegation_context(bigint) IS
  'For the executor: where a run stands in its delegation tree: {"depth", "max_depth", "chain" (agent ids from the root), "can_delegate", "delegates" (agents it may hand work to now: listed, active, same workspace, not on the chain, and only below the depth limit), "remaining_budget"}. The delegate_to_agent tool is offered only when can_delegate. A run of another workspace than the session''s is unknown (42704).';

-- ---------------------------------------------------------------------------
-- Approvals (keys in C: src/approval.c)
-- ---------------------------------------------------------------------------

ALTER TABLE agent.approvals ADD COLUMN reason text;
COMMENT ON COLUMN agent.approvals.reason IS
  'Why the call was denied, as the denying user gave it (agent.deny); the model is told it with the refusal.';

CREATE FUNCTION agent.canonical_json(input jsonb) RETURNS text
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
AS 'MODULE_PATHNAME', 'pg_agents_canonical_json';
COMMENT ON FUNCTION agent.canonical_json(jsonb) IS
  'Canonical JSON text of a jsonb value: object keys sorted by bytes at every depth, arrays in order, numbers normalised (1.0 = 1), no white space.';

CREATE FUNCTION agent.approval_key(tool text, input jsonb) RETURNS text
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
AS 'MODULE_PATHNAME', 'pg_agents_approval_key';
COMMENT ON FUNCTION agent.approval_key(text, jsonb) IS
  'Deterministic approval key of a tool call: lowercase hex SHA-256 of the canonical JSON of [tool, input]; the same for the same logical input whatever the key order.';

\ir ../functions/agent.request_approval.sql
COMMENT ON FUNCTION agent.request_approval(bigint, text, jsonb) IS
  'Pauses a running run on a tool call that needs approval: stores a pending approval (key, the input exactly as it will run, expires_at = now() + pg_agents.approval_ttl), the run goes to waiting_approval. An input larger than pg_agents.approval_max_input (54000) or holding a credential-shaped value (22023) is refused. Asking twice for the same call reuses the pending approval. Returns the approval key.';

-- Finds the one pending approval a user decides (shared by approve and deny).
\ir ../functions/agent._approval_to_decide.sql
REVOKE ALL ON FUNCTION agent._approval_to_decide(text, text, bigint) FROM PUBLIC;
COMMENT ON FUNCTION agent._approval_to_decide(text, text, bigint) IS
  'Internal: the single pending approval with that key (and run) the user may decide, locked; explains every other case.';

\ir ../functions/agent._record_decision.sql
REVOKE ALL ON FUNCTION agent._record_decision(agent.approvals, text, text) FROM PUBLIC;
COMMENT ON FUNCTION agent._record_decision(agent.approvals, text, text) IS
  'Internal: records an approve or deny decision on one approval and its audit row.';

\ir ../functions/agent.approve.sql

-- A denied call is refused to the model and the run goes on (the human
-- approval page: the model hears that the person said no); an agent whose
-- scope says "deny_ends_run": true keeps the 0.3.0 behaviour (the run fails).
\ir ../functions/agent.deny.sql

\ir ../functions/agent.deny_2.sql

-- The SPEC's two-argument forms (the run id is needed only when a key is
-- pending on several runs the user may decide).
CREATE FUNCTION agent.approve(approval_key text, by_user text) RETURNS bigint
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$ SELECT agent.approve($1, $2, NULL::bigint) $$;
COMMENT ON FUNCTION agent.approve(text, text) IS
  'Approves the one pending tool call with that key the user may decide (edit level); see agent.approve(text, text, bigint). Returns the run id.';

CREATE FUNCTION agent.deny(approval_key text, by_user text) RETURNS bigint
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$ SELECT agent.deny($1, $2, NULL::bigint) $$;
COMMENT ON FUNCTION agent.deny(text, text) IS
  'Denies the one pending tool call with that key the user may decide (edit level): the model is told the person declined it and the run goes on (or fails "denied by <user>" when the agent''s scope has "deny_ends_run": true); see agent.deny(text, text, bigint, text). Returns the run id.';

\ir ../functions/agent.consume_approval.sql
COMMENT ON FUNCTION agent.consume_approval(bigint, text, jsonb) IS
  'For the executor, before a gated tool call: true exactly once for an approved, not yet consumed approval of that run with that tool and input (consumed_at is set); false otherwise (ask with agent.request_approval), and for a run of another workspace than the session''s.';

\ir ../functions/agent.consume_refusal.sql
COMMENT ON FUNCTION agent.consume_refusal(bigint, text, jsonb) IS
  'For the executor, before a gated tool call: the decision {"status": "denied" | "expired", "decided_by", "reason"} exactly once for a denied (or expired), not yet delivered approval of that run with that tool and input (consumed_at is set), so that the model is told once and a later identical call asks again; NULL otherwise.';

-- ---------------------------------------------------------------------------
-- Delegation records (called from src/delegation.c with the tree locked)
-- ---------------------------------------------------------------------------

\ir ../functions/agent._delegation_granted.sql
REVOKE ALL ON FUNCTION agent._delegation_granted(bigint, bigint, bigint, text, jsonb, bigint, boolean) FROM PUBLIC;
COMMENT ON FUNCTION agent._delegation_granted(bigint, bigint, bigint, text, jsonb, bigint, boolean) IS
  'Internal: records an accepted delegation (audit row on the child run; with p_record_step, the delegate step on the parent).';

-- What a child run receives of one attachment: a resource reference the
-- child may read, as given; one it may not read, withheld (its other fields,
-- such as a row's content, are dropped).  A reference is
-- {"resource_type", "resource_id", ...} or the short form {"<type>": "<id>"}
-- for a built-in or registered resource type; anything else is the parent's
-- own data, like the task text, and passes as given.
CREATE FUNCTION agent._delegation_attachment(p_child_agent_id bigint, p_attachment jsonb) RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_type   text;
  v_id     text;
  v_key    text;
  v_val    jsonb;
  v_ok     boolean;
  v_reason text;
BEGIN
  IF jsonb_typeof(p_attachment) IS DISTINCT FROM 'object' THEN
    RETURN p_attachment;
  END IF;
  IF p_attachment ? 'resource_type' OR p_attachment ? 'resource_id' THEN
    IF jsonb_typeof(p_attachment -> 'resource_type') IS DISTINCT FROM 'string'
       OR coalesce(jsonb_typeof(p_attachment -> 'resource_id'), 'null') NOT IN ('string', 'number') THEN
      RETURN jsonb_build_object('resource_type', p_attachment -> 'resource_type',
                                'resource_id', p_attachment -> 'resource_id', 'withheld', 'invalid_reference');
    END IF;
    v_type := p_attachment ->> 'resource_type';
    v_id := p_attachment ->> 'resource_id';
  ELSE
    SELECT e.key, e.value INTO v_key, v_val FROM jsonb_each(p_attachment) e;
    IF (SELECT count(*) FROM jsonb_object_keys(p_attachment)) <> 1
       OR coalesce(jsonb_typeof(v_val), 'null') NOT IN ('string', 'number')
       OR NOT (v_key IN ('page', 'collection', 'skill', 'agent')
               OR EXISTS (SELECT 1 FROM agent.resource_tables t WHERE t.resource_type = v_key)) THEN
      RETURN p_attachment;
    END IF;
    v_type := v_key;
    v_id := v_val #>> '{}';
  END IF;
  SELECT x.allowed, x.reason INTO v_ok, v_reason
    FROM agent.explain_access(p_child_agent_id, v_type, v_id, 'read', 'autonomous') x;
  IF v_ok THEN
    RETURN p_attachment;
  END IF;
  RETURN jsonb_build_object('resource_type', v_type, 'resource_id', v_id, 'withheld', coalesce(v_reason, 'not_granted'));
END
$$;
REVOKE ALL ON FUNCTION agent._delegation_attachment(bigint, jsonb) FROM PUBLIC;
COMMENT ON FUNCTION agent._delegation_attachment(bigint, jsonb) IS
  'Internal (agent.delegate): one attachment as the child run receives it: a resource reference ({"resource_type", "resource_id", ...}, or {"<type>": "<id>"} for a built-in or registered type) that the child agent may not read autonomously becomes {"resource_type", "resource_id", "withheld": <reason of agent.explain_access>} (its other fields dropped); a malformed reference is withheld as invalid_reference; anything else passes as given.';

\ir ../functions/agent._delegation_refused.sql
REVOKE ALL ON FUNCTION agent._delegation_refused(bigint, bigint, text, text, text, text) FROM PUBLIC;
COMMENT ON FUNCTION agent._delegation_refused(bigint, bigint, text, text, text, text) IS
  'Internal: records a refused delegation (denied step on the parent, denied audit row on the parent run).';

-- ---------------------------------------------------------------------------
-- Privileges: the functions that change runs, or that take a user name on
-- trust, are for the application and the executor roles (GRANT EXECUTE to
-- them); the pure ones are public.
-- ---------------------------------------------------------------------------
REVOKE ALL ON FUNCTION agent.start_run(bigint, text, jsonb, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION agent.claim_runs(int) FROM PUBLIC;
REVOKE ALL ON FUNCTION agent.renew_lease(bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION agent.wait_for_children(bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION agent.add_usage(bigint, int, int, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION agent.finish_run(bigint, text, jsonb, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION agent.rerun(bigint, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION agent.cancel_run(bigint, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION agent.delegate(bigint, bigint, text, jsonb, int) FROM PUBLIC;
REVOKE ALL ON FUNCTION agent.try_delegate(bigint, bigint, text, jsonb, int) FROM PUBLIC;
REVOKE ALL ON FUNCTION agent.request_approval(bigint, text, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION agent.approve(text, text, bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION agent.deny(text, text, bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION agent.approve(text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION agent.deny(text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION agent.consume_approval(bigint, text, jsonb) FROM PUBLIC;

-- ---------------------------------------------------------------------------
-- Retention (docs/runs.md): ended delegation trees, whole, with their steps
-- ---------------------------------------------------------------------------

\ir ../functions/agent.purge_runs.sql
REVOKE ALL ON FUNCTION agent.purge_runs(integer) FROM PUBLIC;
COMMENT ON FUNCTION agent.purge_runs(integer) IS
  'Deletes up to batch_size delegation trees whose every run ended (terminal status, finished_at) more than pg_agents.run_retention_days ago (0 keeps them forever), with their steps, approvals, messages and state; a tree with an active run, or a run ended since, is kept whole; trees locked by others are left for the next call. Returns the runs deleted (call again until 0). Recorded as run.purge. Superuser only.';
