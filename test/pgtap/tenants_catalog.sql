-- Tenants: the workspace boundary generated from the catalog (issue 30).
-- Rows of two workspaces (ws-cat-a, ws-cat-b) in every table, built through
-- the API as superuser.  For every relation of schema agent (table, view,
-- matview, partitioned table) and every set-returning function that one of
-- the roles below may reach, bound to ws-cat-a: no row of ws-cat-b is read,
-- updated or deleted, and inserting one is refused (42501); with no
-- workspace set nothing of a workspace is read.  The relations and
-- functions are enumerated at test time, so one added later without a
-- policy fails here; agent.planted shows that the check catches it.
--
-- A row "of ws-cat-b": workspace_id IS DISTINCT FROM 'ws-cat-a' where the
-- relation has that column (a NULL-workspace row is not the session's
-- either); for a relation without it, any row whose text names ws-cat-b or
-- holds its content marker (cat-b-secret).  Relations without workspace_id
-- are the cluster registries (resource types, relations, templates, audited
-- and watched tables, reader bindings), which hold no tenant content: the
-- marker check proves it for the fixtures.
BEGIN;
SELECT plan(16);

SET LOCAL client_min_messages = warning;
CREATE ROLE tc_nobody NOLOGIN;
CREATE ROLE tc_app NOLOGIN IN ROLE agents_app;
CREATE ROLE tc_exec NOLOGIN IN ROLE agents_executor;
CREATE ROLE tc_reader NOLOGIN IN ROLE agents_reader;
CREATE ROLE tc_tool NOLOGIN IN ROLE agents_tool;
CREATE ROLE tc_monitor NOLOGIN IN ROLE pg_monitor;
SELECT agent.bind_reader('tc_reader', 'ws-cat-a');

-- the fixtures, one set per workspace, through the API
CREATE TEMP TABLE tc_ids (ws text PRIMARY KEY, agent_id bigint, run_id bigint, approval text);
DO $$
DECLARE
  w text;
  m text;
  a bigint;
  r bigint;
BEGIN
  FOREACH w IN ARRAY ARRAY['ws-cat-a', 'ws-cat-b'] LOOP
    m := replace(w, 'ws-', '') || '-secret';
    PERFORM set_config('pg_agents.workspace', w, true);
    a := agent.create_agent(w, 'u' || right(w, 1), 'agent ' || m, jsonb_build_object('instructions', 'instructions ' || m));
    PERFORM agent.grant(a, 'page', 'p-' || m, 'read', 'u' || right(w, 1));
    PERFORM agent.share(a, 'user:x' || right(w, 1), 'interact', 'u' || right(w, 1));
    PERFORM agent.set_trigger(a, jsonb_build_object('kind', 'event', 'event_name', 'page.updated',
                                                    'prompt', 'prompt ' || m, 'enabled', false), 'u' || right(w, 1));
    r := agent.start_run(a, 'u' || right(w, 1), jsonb_build_object('prompt', 'prompt ' || m), 'manual', 'chat');
    UPDATE agent.runs SET status = 'running', started_at = now() WHERE id = r;
    INSERT INTO tc_ids VALUES (w, a, r, agent.request_approval(r, 'send_mail', jsonb_build_object('to', m)));
    PERFORM agent.send_to_run(r, 'follow-up ' || m, 'u' || right(w, 1));
    INSERT INTO agent.resource_acl (workspace_id, resource_type, resource_id, principal, access)
      VALUES (w, 'page', 'p-' || m, 'user:u-' || w, 'read');
    INSERT INTO agent.group_members (workspace_id, group_id, user_id) VALUES (w, 'g-' || m, 'u' || right(w, 1));
    INSERT INTO agent.event_overlaps (workspace_id, trigger_id, agent_id, automation, last_event)
      SELECT w, t.id, a, 'auto-' || m, 'page.updated' FROM agent.triggers t WHERE t.agent_id = a;
    -- a provider of the workspace (agent.provider_status)
    PERFORM agent.add_provider('prov-' || replace(w, 'ws-', ''), 'openai', 'http://127.0.0.1:9/v1', NULL,
                               jsonb_build_object('workspace_id', w));
  END LOOP;
  -- a cluster provider: every workspace may use it and read its status
  PERFORM agent.add_provider('prov-cat-cluster', 'openai', 'http://127.0.0.1:9/v1');
  -- a row of no workspace (counts in every workspace; a superuser's)
  PERFORM set_config('pg_agents.workspace', '', true);
  INSERT INTO agent.resource_acl (workspace_id, resource_type, resource_id, principal, access)
    VALUES (NULL, 'page', 'p-cat-b-secret-null', 'user:u-null', 'read');
END
$$;
SELECT tc_ids.agent_id AS b_agent FROM tc_ids WHERE ws = 'ws-cat-b' \gset
SELECT tc_ids.agent_id AS a_agent FROM tc_ids WHERE ws = 'ws-cat-a' \gset

-- Arguments for the set-returning functions that have arguments without
-- defaults: each names ws-cat-b's objects, as an attacker bound to
-- ws-cat-a would.  A function reachable by a role with no entry here fails.
CREATE TEMP TABLE tc_srf_args (proc text PRIMARY KEY, args text NOT NULL);
INSERT INTO tc_srf_args
SELECT v.proc, replace(replace(v.args, '$A', b.agent_id::text), '$R', b.run_id::text)
  FROM tc_ids b,
       (VALUES ('agent.visible_agents', $$'ub'$$),
               ('agent.readable_resources', $$$A, 'page', NULL$$),
               ('agent.claim_runs', $$0$$),
               ('agent.cron_upcoming', $$'0 9 * * *', 1, now(), 'UTC'$$),
               ('agent.activity', $$$A, 'ub', NULL, NULL, NULL, NULL, 10$$),
               ('agent.run_tree', $$$R$$),
               ('agent.conversation_messages', $$$R, 'ub'$$),
               ('agent.conversations_of', $$$A, 'ub'$$),
               ('agent.trigger_overlaps', $$$A, 'ub'$$),
               ('agent.run_stats', $$now() - interval '1 day'$$),
               ('agent.audit_events', $$NULL, NULL, NULL, NULL, NULL, NULL, NULL, 100$$),
               ('agent.run_detail', $$$R, 'ub'$$),
               ('agent.run_deltas', $$$R, 'ub', 0, -1$$),
               ('agent.cancel_runs', $$$A, NULL, NULL, 'ub'$$),
               ('agent.explain_access', $$$A, 'page', 'pb', NULL, NULL, NULL$$),
               ('agent.duplicate', $$$A, 'ub'$$),
               ('agent.fire_event', $$'page.updated', 'page', 'pb', '{}'::jsonb, 'ub', NULL, NULL$$),
               ('agent._fire_event_in', $$'ws-cat-b', 'page.updated', 'page', 'pb', '{}'::jsonb, 'ub', NULL, NULL$$),
               ('agent.follow_relation', $$'page', 'pb', 'parent'$$),
               ('agent.insights', $$$A, 'ub', now() - interval '1 day', now()$$)
       ) v(proc, args)
 WHERE b.ws = 'ws-cat-b';
GRANT SELECT ON tc_srf_args TO PUBLIC;

-- The check: every problem found, as one line each.  Runs as the caller
-- (a superuser) and takes each role in turn.
CREATE FUNCTION pg_temp.tc_matrix(p_rels regclass[], p_roles name[]) RETURNS SETOF text
LANGUAGE plpgsql AS $fn$
DECLARE
  v_role name;
  v_rel regclass;
  v_has_ws boolean;
  v_wb text;
  v_col name;
  v_row jsonb;
  n bigint;
  v_state text;
BEGIN
  FOREACH v_role IN ARRAY p_roles LOOP
    FOREACH v_rel IN ARRAY p_rels LOOP
      v_has_ws := EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = v_rel AND attname = 'workspace_id'
                                                       AND NOT attisdropped);
      -- (agent.provider_status: a row of no workspace is a cluster provider,
      -- which every workspace may use)
      v_wb := CASE WHEN v_rel = 'agent.provider_status'::regclass THEN $$t.workspace_id <> 'ws-cat-a'$$
                   WHEN v_has_ws THEN $$t.workspace_id IS DISTINCT FROM 'ws-cat-a'$$
                   ELSE $$(t::text LIKE '%ws-cat-b%' OR t::text LIKE '%cat-b-secret%')$$ END;
      -- read, bound to ws-cat-a, then with no workspace
      IF has_any_column_privilege(v_role, v_rel, 'SELECT') THEN
        BEGIN
          EXECUTE format('SET LOCAL ROLE %I', v_role);
          PERFORM set_config('pg_agents.workspace', 'ws-cat-a', true);
          EXECUTE format('SELECT count(*) FROM %s t WHERE %s', v_rel, v_wb) INTO n;
          IF n > 0 THEN
            RETURN NEXT format('%s reads %s rows of ws-cat-b in %s', v_role, n, v_rel);
          END IF;
          PERFORM set_config('pg_agents.workspace', '', true);
          -- (agent.reader_workspaces: the role's own bindings, no content)
          EXECUTE format('SELECT count(*) FROM %s t WHERE %s', v_rel,
                         CASE WHEN v_rel = 'agent.reader_workspaces'::regclass THEN 'false'
                              WHEN v_rel = 'agent.provider_status'::regclass THEN 't.workspace_id IS NOT NULL'
                              WHEN v_has_ws THEN 'true' ELSE v_wb END) INTO n;
          IF n > 0 THEN
            RETURN NEXT format('%s reads %s rows of %s with no workspace set', v_role, n, v_rel);
          END IF;
          RESET ROLE;
        EXCEPTION WHEN insufficient_privilege THEN
          NULL;   -- refused: nothing read
        END;
      END IF;
      -- update and delete of ws-cat-b's rows (rolled back)
      SELECT a.attname INTO v_col FROM pg_attribute a
       WHERE a.attrelid = v_rel AND a.attnum > 0 AND NOT a.attisdropped
         AND has_column_privilege(v_role, v_rel, a.attname, 'UPDATE')
       ORDER BY a.attnum LIMIT 1;
      IF v_col IS NOT NULL THEN
        n := 0;
        BEGIN
          EXECUTE format('SET LOCAL ROLE %I', v_role);
          PERFORM set_config('pg_agents.workspace', 'ws-cat-a', true);
          EXECUTE format('WITH u AS (UPDATE %s t SET %I = t.%I WHERE %s RETURNING 1) SELECT count(*) FROM u',
                         v_rel, v_col, v_col, v_wb) INTO n;
          RAISE EXCEPTION USING ERRCODE = 'P0099';
        EXCEPTION WHEN OTHERS THEN
          NULL;
        END;
        RESET ROLE;
        IF n > 0 THEN
          RETURN NEXT format('%s updates %s rows of ws-cat-b in %s', v_role, n, v_rel);
        END IF;
      END IF;
      IF has_table_privilege(v_role, v_rel, 'DELETE') THEN
        n := 0;
        BEGIN
          EXECUTE format('SET LOCAL ROLE %I', v_role);
          PERFORM set_config('pg_agents.workspace', 'ws-cat-a', true);
          EXECUTE format('WITH d AS (DELETE FROM %s t WHERE %s RETURNING 1) SELECT count(*) FROM d', v_rel, v_wb) INTO n;
          RAISE EXCEPTION USING ERRCODE = 'P0099';
        EXCEPTION WHEN OTHERS THEN
          NULL;
        END;
        RESET ROLE;
        IF n > 0 THEN
          RETURN NEXT format('%s deletes %s rows of ws-cat-b in %s', v_role, n, v_rel);
        END IF;
      END IF;
      -- insert of a copy of a ws-cat-b row: refused by the boundary (42501)
      IF has_any_column_privilege(v_role, v_rel, 'INSERT') THEN
        EXECUTE format('SELECT to_jsonb(t) FROM %s t WHERE %s LIMIT 1',
                       v_rel, CASE WHEN v_has_ws THEN $$t.workspace_id = 'ws-cat-b'$$ ELSE v_wb END) INTO v_row;
        IF v_row IS NULL THEN
          RETURN NEXT format('%s: no row of ws-cat-b in the fixtures to insert as %s', v_rel, v_role);
        ELSE
          v_state := 'inserted';
          BEGIN
            EXECUTE format('SET LOCAL ROLE %I', v_role);
            PERFORM set_config('pg_agents.workspace', 'ws-cat-a', true);
            EXECUTE format('INSERT INTO %s SELECT * FROM jsonb_populate_record(NULL::%s, $1)', v_rel, v_rel)
              USING v_row;
            RAISE EXCEPTION USING ERRCODE = 'P0099';
          EXCEPTION WHEN OTHERS THEN
            v_state := CASE WHEN SQLSTATE = 'P0099' THEN 'inserted' ELSE SQLSTATE END;
          END;
          RESET ROLE;
          IF v_state <> '42501' THEN
            RETURN NEXT format('%s inserting a row of ws-cat-b into %s: %s, not refused (42501)', v_role, v_rel, v_state);
          END IF;
        END IF;
      END IF;
    END LOOP;
  END LOOP;
END
$fn$;

-- Set-returning functions: each reachable one called as each role, bound to
-- ws-cat-a, with ws-cat-b's objects as arguments.
CREATE FUNCTION pg_temp.tc_srf_matrix(p_roles name[]) RETURNS SETOF text
LANGUAGE plpgsql AS $fn$
DECLARE
  v_role name;
  p record;
  v_args text;
  n bigint;
BEGIN
  FOREACH v_role IN ARRAY p_roles LOOP
    FOR p IN SELECT f.oid::regprocedure AS sig, f.oid::regproc AS name, f.pronargs, f.pronargdefaults
               FROM pg_proc f
              WHERE f.pronamespace = 'agent'::regnamespace AND f.proretset
                AND has_function_privilege(v_role, f.oid, 'EXECUTE')
              ORDER BY 1::text LOOP
      IF p.pronargs = p.pronargdefaults THEN
        v_args := '';
      ELSE
        SELECT a.args INTO v_args FROM tc_srf_args a WHERE a.proc = p.name::text;
        IF NOT FOUND THEN
          RETURN NEXT format('%s may call %s, which has no entry in tc_srf_args', v_role, p.sig);
          CONTINUE;
        END IF;
      END IF;
      n := 0;
      BEGIN
        EXECUTE format('SET LOCAL ROLE %I', v_role);
        PERFORM set_config('pg_agents.workspace', 'ws-cat-a', true);
        EXECUTE format($$SELECT count(*) FROM %s(%s) t WHERE t::text LIKE '%%ws-cat-b%%' OR t::text LIKE '%%cat-b-secret%%'$$,
                       p.name, v_args) INTO n;
        RAISE EXCEPTION USING ERRCODE = 'P0099';
      EXCEPTION WHEN OTHERS THEN
        NULL;   -- refused, or rolled back after counting
      END;
      RESET ROLE;
      IF n > 0 THEN
        RETURN NEXT format('%s reads %s rows of ws-cat-b through %s', v_role, n, p.sig);
      END IF;
    END LOOP;
  END LOOP;
END
$fn$;

CREATE TEMP VIEW tc_relations AS
  SELECT array_agg(c.oid::regclass ORDER BY c.relname) AS rels
    FROM pg_class c
   WHERE c.relnamespace = 'agent'::regnamespace AND c.relkind IN ('r', 'v', 'm', 'p', 'f')
     AND NOT c.relispartition;

SELECT is(ARRAY(SELECT pg_temp.tc_matrix((SELECT rels FROM tc_relations),
                                        ARRAY['tc_nobody', 'tc_app', 'tc_exec', 'tc_reader', 'tc_tool']::name[])),
          '{}'::text[],
          'every relation of schema agent: no role bound to ws-cat-a reads, updates, deletes or inserts a row of ws-cat-b, and nothing with no workspace');
SELECT is(ARRAY(SELECT pg_temp.tc_srf_matrix(ARRAY['tc_nobody', 'tc_app', 'tc_exec', 'tc_reader', 'tc_tool']::name[])),
          '{}'::text[],
          'every set-returning function of schema agent: nothing of ws-cat-b returned to a role bound to ws-cat-a');
SELECT ok((SELECT count(*) FROM unnest((SELECT rels FROM tc_relations)) r
            WHERE has_any_column_privilege('tc_app', r, 'SELECT')) >= 10,
          'the matrix covered the application''s relations');

-- pg_monitor: cluster-wide ids, counts, times and codes only.  Every text
-- or json column it reads is on this list of ids and codes; a column named
-- like content is not on it.
CREATE TEMP VIEW tc_monitor_cols AS
  SELECT format('%s.%s', c.oid::regclass, a.attname) AS col, c.oid::regclass AS rel, a.attname
    FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
   WHERE c.relnamespace = 'agent'::regnamespace
     AND has_column_privilege('tc_monitor', c.oid, a.attname, 'SELECT')
     AND (a.atttypid IN ('text'::regtype, 'varchar'::regtype, 'jsonb'::regtype, 'json'::regtype, 'name'::regtype)
          OR a.attname ~ '(prompt|instruction|input|output|body|content|message|settings|payload|answer|secret|header)');
SELECT is(ARRAY(SELECT col FROM tc_monitor_cols
                 WHERE col <> ALL (ARRAY[
                         -- ids and codes (docs/security.md, "pg_monitor")
                         'agent.queue_status.workspace_id', 'agent.run_metrics.workspace_id',
                         'agent.run_metrics.error_code', 'agent.run_metrics.status',
                         'agent.queue_status.status', 'agent.queue_status.waiting_input',
                         'agent.run_metrics.agent_name', 'agent.run_metrics.endpoint_host',
                         'agent.run_metrics.model', 'agent.run_metrics.origin', 'agent.run_metrics.provider',
                         'agent.worker_status.database', 'agent.worker_status.pause_reason',
                         'agent.worker_status.paused_changed_by', 'agent.worker_status.state',
                         'agent.provider_status.endpoint_host', 'agent.provider_status.kind',
                         'agent.provider_status.model', 'agent.provider_status.name',
                         'agent.provider_status.workspace_id',
                         -- run_stats' rollup: the same ids as run_metrics
                         'agent._run_rollup_visible.workspace_id', 'agent._run_rollup_visible.agent_name',
                         'agent._run_rollup_visible.endpoint_host', 'agent._run_rollup_visible.model',
                         'agent._run_rollup_visible.provider',
                         -- status lines in the worker's own words: "HTTP 400",
                         -- "transport error: <libcurl's reason>", "<activity>
                         -- failed: SQLSTATE xxxxx" (test/t/633, 622)
                         'agent.provider_status.last_error', 'agent.worker_status.last_error'])
                 ORDER BY 1), '{}'::text[],
  'pg_monitor reads no column that holds a workspace''s content');
-- and what it reads holds none of the fixtures' content: every relation
-- pg_monitor may read, row by row, without a content marker (but in the
-- agent's name, a label run_metrics shows by design: the fixtures name
-- their agents after the marker)
CREATE FUNCTION pg_temp.tc_monitor_content() RETURNS SETOF text
LANGUAGE plpgsql AS $fn$
DECLARE
  v_rel regclass;
  n bigint;
BEGIN
  FOR v_rel IN SELECT c.oid FROM pg_class c
                WHERE c.relnamespace = 'agent'::regnamespace AND c.relkind IN ('r', 'v', 'm', 'p')
                  AND has_any_column_privilege('tc_monitor', c.oid, 'SELECT') ORDER BY c.relname LOOP
    SET LOCAL ROLE tc_monitor;
    EXECUTE format($$SELECT count(*) FROM %s t WHERE (to_jsonb(t) - 'agent_name')::text ~ 'cat-[ab]-secret'$$, v_rel) INTO n;
    RESET ROLE;
    IF n > 0 THEN
      RETURN NEXT format('pg_monitor reads %s rows holding content in %s', n, v_rel);
    END IF;
  END LOOP;
END
$fn$;
SELECT is(ARRAY(SELECT pg_temp.tc_monitor_content()), '{}'::text[],
  'pg_monitor reads no workspace content in any relation it may read (prompts, instructions, error bodies)');

-- the check catches a planted table: workspace_id, rows of both, SELECT to
-- the application, no policy
CREATE TABLE agent.planted (workspace_id text, note text);
INSERT INTO agent.planted VALUES ('ws-cat-a', 'a'), ('ws-cat-b', 'cat-b-secret');
GRANT SELECT ON agent.planted TO agents_app;
SELECT is(ARRAY(SELECT pg_temp.tc_matrix(ARRAY['agent.planted'::regclass], ARRAY['tc_app']::name[])),
          ARRAY['tc_app reads 1 rows of ws-cat-b in agent.planted',
                'tc_app reads 2 rows of agent.planted with no workspace set'],
          'the matrix reports a planted table without a policy');
DROP TABLE agent.planted;

-- The attacks of issue 30, findings 1 and 2, one by one (agents_app bound
-- to ws-cat-a)
SET LOCAL ROLE tc_app;
SELECT set_config('pg_agents.workspace', 'ws-cat-a', true);
SELECT is((SELECT count(*)::int FROM agent.agents WHERE workspace_id = 'ws-cat-b'), 0,
          'attack: the application bound to ws-cat-a reads none of ws-cat-b''s agents (instructions)');
WITH u AS (UPDATE agent.agents SET status = 'suspended' WHERE id = :b_agent RETURNING 1)
SELECT is(count(*)::int, 0, 'attack: it cannot suspend ws-cat-b''s agent with a direct UPDATE') FROM u;
SELECT throws_ok(format($$INSERT INTO agent.access (agent_id, resource_type, resource_id, access)
                          VALUES (%s, 'page', 'planted', 'edit')$$, :b_agent),
                 '42501', NULL, 'attack: planting a grant on ws-cat-b''s agent is refused');
SELECT throws_ok($$INSERT INTO agent.group_members (workspace_id, group_id, user_id) VALUES ('ws-cat-b', 'g-cat-b-secret', 'mallory')$$,
                 '42501', 'permission denied to write a row of workspace ''ws-cat-b'' into agent.group_members',
                 'attack: adding a member to ws-cat-b''s group is refused, naming the workspace');
SELECT set_config('pg_agents.workspace', '', true);
SELECT is((SELECT count(*)::int FROM agent.agents), 0, 'attack: a session with no workspace reads no agent');
SELECT throws_ok($$INSERT INTO agent.resource_acl (resource_type, resource_id, principal, access)
                   VALUES ('page', 'everywhere', 'user:mallory', 'edit')$$,
                 '42501', NULL, 'attack: a row of no workspace from a session without workspace is refused');
RESET ROLE;

-- Finding 2: a direct write is versioned and audited as the API's own
-- write; the API's write is not recorded twice
CREATE TEMP TABLE tc_before AS
  SELECT (SELECT count(*) FROM agent.versions WHERE agent_id = :a_agent) AS versions,
         (SELECT count(*) FROM agent.audit_log WHERE action = 'agent.grant' AND target_id = :'a_agent') AS grants,
         (SELECT max(id) FROM agent.audit_log) AS last_audit;
SET LOCAL ROLE tc_app;
SELECT set_config('pg_agents.workspace', 'ws-cat-a', true);
SELECT lives_ok(format($$SELECT agent.grant(%s, 'page', 'p-more', 'read', 'ua')$$, :a_agent),
                'the API (SECURITY DEFINER) still grants in the session''s workspace');
RESET ROLE;
SELECT is(ARRAY[(SELECT count(*) FROM agent.versions WHERE agent_id = :a_agent) - versions,
                (SELECT count(*) FROM agent.audit_log WHERE action = 'agent.grant' AND target_id = :'a_agent') - grants],
          ARRAY[1, 1]::bigint[], 'the API''s grant: one version and one audit row, not two') FROM tc_before;
SET LOCAL ROLE tc_app;
SELECT set_config('pg_agents.workspace', 'ws-cat-a', true);
INSERT INTO agent.access (agent_id, resource_type, resource_id, access, granted_by)
  VALUES (:a_agent, 'page', 'p-direct', 'edit', 'ua');
UPDATE agent.agents SET status = 'suspended' WHERE id = :a_agent;
INSERT INTO agent.group_members (group_id, user_id) VALUES ('g-direct', 'ua2');
DELETE FROM agent.access WHERE agent_id = :a_agent AND resource_id = 'p-direct';
RESET ROLE;
SELECT is(ARRAY(SELECT format('%s %s %s %s', action, workspace_id, inputs->>'direct', coalesce(inputs->>'resource_id', inputs->>'to', inputs->'row'->>'user_id'))
                  FROM agent.audit_log, tc_before
                 WHERE id > last_audit AND (action <> 'agent.grant' OR inputs->>'resource_id' = 'p-direct')
                 ORDER BY id),
          ARRAY['agent.grant ws-cat-a true p-direct', 'agent.set_status ws-cat-a true suspended',
                'agent.group_members.insert ws-cat-a true ua2', 'agent.revoke ws-cat-a true p-direct'],
          'attack: direct writes of grants, statuses and group members are audited as the API''s (agent.grant, agent.set_status, agent.revoke)');
SELECT is(ARRAY(SELECT note FROM agent.versions, tc_before WHERE agent_id = :a_agent ORDER BY version DESC LIMIT 2),
          ARRAY['revoked page p-direct by a direct write', 'granted edit on page p-direct by a direct write'],
          'attack: a direct grant and its removal each write a version of the agent');

SELECT * FROM finish();
ROLLBACK;
