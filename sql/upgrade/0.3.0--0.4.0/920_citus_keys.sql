-- Issue 24 (Citus by workspace): every primary key and unique index of a
-- table to be distributed holds workspace_id (id-keyed tables: PRIMARY KEY
-- (id, workspace_id), the separate UNIQUE (workspace_id, id) gone), every
-- foreign key between agent tables is composite on (workspace_id, ...), and
-- runs.trigger_id's ON DELETE SET NULL is a trigger on agent.triggers
-- (sql/src/000_schema.sql and the other CREATE TABLE sites; docs/scaling.md).
-- Rebuilt in place: the foreign keys first (they depend on the keys they
-- reference), then the keys, then the foreign keys again.

ALTER TABLE agent.access          DROP CONSTRAINT access_workspace_id_agent_id_fkey;
ALTER TABLE agent.shares          DROP CONSTRAINT shares_workspace_id_agent_id_fkey;
ALTER TABLE agent.versions        DROP CONSTRAINT versions_workspace_id_agent_id_fkey;
ALTER TABLE agent.triggers        DROP CONSTRAINT triggers_workspace_id_agent_id_fkey;
ALTER TABLE agent.runs            DROP CONSTRAINT runs_workspace_id_agent_id_fkey,
                                  DROP CONSTRAINT runs_workspace_id_trigger_id_fkey,
                                  DROP CONSTRAINT runs_parent_run_id_fkey;
ALTER TABLE agent.run_steps       DROP CONSTRAINT run_steps_workspace_id_run_id_fkey;
ALTER TABLE agent.approvals       DROP CONSTRAINT approvals_workspace_id_run_id_fkey;
ALTER TABLE agent.event_overlaps  DROP CONSTRAINT event_overlaps_workspace_id_trigger_id_fkey;
ALTER TABLE agent.run_state       DROP CONSTRAINT run_state_workspace_id_run_id_fkey;
ALTER TABLE agent.mcp_tools       DROP CONSTRAINT mcp_tools_workspace_id_server_id_fkey;
ALTER TABLE agent.mcp_oauth       DROP CONSTRAINT mcp_oauth_workspace_id_server_id_fkey;
ALTER TABLE agent.mcp_elicitations DROP CONSTRAINT mcp_elicitations_run_id_fkey;
ALTER TABLE agent.assistants      DROP CONSTRAINT assistants_workspace_id_agent_id_fkey;
ALTER TABLE agent.conversations   DROP CONSTRAINT conversations_workspace_id_agent_id_fkey;
ALTER TABLE agent.messages        DROP CONSTRAINT messages_workspace_id_conversation_id_fkey;
ALTER TABLE agent.run_messages    DROP CONSTRAINT run_messages_workspace_id_run_id_fkey;

-- the keys, under their old names (the C code finds agents_pkey and
-- access_pkey by name; their leading columns are unchanged)
ALTER TABLE agent.agents DROP CONSTRAINT agents_pkey, DROP CONSTRAINT agents_workspace_id_id_key,
  ADD CONSTRAINT agents_pkey PRIMARY KEY (id, workspace_id);
ALTER TABLE agent.access DROP CONSTRAINT access_pkey,
  ADD CONSTRAINT access_pkey PRIMARY KEY (agent_id, resource_type, resource_id, workspace_id);
ALTER TABLE agent.shares DROP CONSTRAINT shares_pkey,
  ADD CONSTRAINT shares_pkey PRIMARY KEY (id, workspace_id);
DROP INDEX agent.shares_user_uq;
DROP INDEX agent.shares_group_uq;
CREATE UNIQUE INDEX shares_user_uq ON agent.shares (agent_id, user_id, workspace_id) WHERE user_id IS NOT NULL;
CREATE UNIQUE INDEX shares_group_uq ON agent.shares (agent_id, group_id, workspace_id) WHERE group_id IS NOT NULL;
ALTER TABLE agent.versions DROP CONSTRAINT versions_pkey, DROP CONSTRAINT versions_agent_id_version_key,
  ADD CONSTRAINT versions_pkey PRIMARY KEY (id, workspace_id),
  ADD CONSTRAINT versions_agent_id_version_key UNIQUE (agent_id, version, workspace_id);
ALTER TABLE agent.triggers DROP CONSTRAINT triggers_pkey, DROP CONSTRAINT triggers_workspace_id_id_key,
  ADD CONSTRAINT triggers_pkey PRIMARY KEY (id, workspace_id);
ALTER TABLE agent.runs DROP CONSTRAINT runs_pkey, DROP CONSTRAINT runs_workspace_id_id_key,
  ADD CONSTRAINT runs_pkey PRIMARY KEY (id, workspace_id);
ALTER TABLE agent.run_steps DROP CONSTRAINT run_steps_pkey, DROP CONSTRAINT run_steps_run_id_seq_key,
  ADD CONSTRAINT run_steps_pkey PRIMARY KEY (id, workspace_id),
  ADD CONSTRAINT run_steps_run_id_seq_key UNIQUE (run_id, seq, workspace_id);
ALTER TABLE agent.approvals DROP CONSTRAINT approvals_pkey,
  ADD CONSTRAINT approvals_pkey PRIMARY KEY (id, workspace_id);
ALTER TABLE agent.run_state DROP CONSTRAINT run_state_pkey,
  ALTER COLUMN run_id SET NOT NULL,
  ADD CONSTRAINT run_state_pkey PRIMARY KEY (run_id, workspace_id);
ALTER TABLE agent.mcp_servers DROP CONSTRAINT mcp_servers_pkey, DROP CONSTRAINT mcp_servers_workspace_id_id_key,
  ADD CONSTRAINT mcp_servers_pkey PRIMARY KEY (id, workspace_id);
ALTER TABLE agent.mcp_tools DROP CONSTRAINT mcp_tools_pkey,
  ADD CONSTRAINT mcp_tools_pkey PRIMARY KEY (server_id, name, workspace_id);
ALTER TABLE agent.mcp_oauth DROP CONSTRAINT mcp_oauth_pkey, DROP CONSTRAINT mcp_oauth_pending_state_key,
  ALTER COLUMN server_id SET NOT NULL,
  ADD CONSTRAINT mcp_oauth_pkey PRIMARY KEY (server_id, workspace_id),
  ADD CONSTRAINT mcp_oauth_pending_state_key UNIQUE (pending_state, workspace_id);
ALTER TABLE agent.mcp_elicitations DROP CONSTRAINT mcp_elicitations_pkey,
  ADD CONSTRAINT mcp_elicitations_pkey PRIMARY KEY (id, workspace_id);
ALTER TABLE agent.assistants DROP CONSTRAINT assistants_agent_id_key,
  ADD CONSTRAINT assistants_agent_id_key UNIQUE (agent_id, workspace_id);
ALTER TABLE agent.conversations DROP CONSTRAINT conversations_pkey, DROP CONSTRAINT conversations_workspace_id_id_key,
  ADD CONSTRAINT conversations_pkey PRIMARY KEY (id, workspace_id);
DROP INDEX agent.conversations_autonomous_idx;
CREATE UNIQUE INDEX conversations_autonomous_idx ON agent.conversations (agent_id, (coalesce(trigger_id, 0)), workspace_id)
  WHERE kind = 'autonomous';
ALTER TABLE agent.messages DROP CONSTRAINT messages_pkey,
  ADD CONSTRAINT messages_pkey PRIMARY KEY (id, workspace_id);
ALTER TABLE agent.run_messages DROP CONSTRAINT run_messages_pkey, DROP CONSTRAINT run_messages_run_id_seq_key,
  ADD CONSTRAINT run_messages_pkey PRIMARY KEY (id, workspace_id),
  ADD CONSTRAINT run_messages_run_id_seq_key UNIQUE (run_id, seq, workspace_id);

-- the foreign keys again, composite on workspace_id in the same position
ALTER TABLE agent.access ADD CONSTRAINT access_workspace_id_agent_id_fkey
  FOREIGN KEY (workspace_id, agent_id) REFERENCES agent.agents (workspace_id, id) ON DELETE CASCADE;
ALTER TABLE agent.shares ADD CONSTRAINT shares_workspace_id_agent_id_fkey
  FOREIGN KEY (workspace_id, agent_id) REFERENCES agent.agents (workspace_id, id) ON DELETE CASCADE;
ALTER TABLE agent.versions ADD CONSTRAINT versions_workspace_id_agent_id_fkey
  FOREIGN KEY (workspace_id, agent_id) REFERENCES agent.agents (workspace_id, id) ON DELETE CASCADE;
ALTER TABLE agent.triggers ADD CONSTRAINT triggers_workspace_id_agent_id_fkey
  FOREIGN KEY (workspace_id, agent_id) REFERENCES agent.agents (workspace_id, id) ON DELETE CASCADE;
ALTER TABLE agent.runs
  ADD CONSTRAINT runs_workspace_id_agent_id_fkey
    FOREIGN KEY (workspace_id, agent_id) REFERENCES agent.agents (workspace_id, id) ON DELETE CASCADE,
  ADD CONSTRAINT runs_workspace_id_trigger_id_fkey
    FOREIGN KEY (workspace_id, trigger_id) REFERENCES agent.triggers (workspace_id, id),
  ADD CONSTRAINT runs_workspace_id_parent_run_id_fkey
    FOREIGN KEY (workspace_id, parent_run_id) REFERENCES agent.runs (workspace_id, id) ON DELETE CASCADE;
ALTER TABLE agent.run_steps ADD CONSTRAINT run_steps_workspace_id_run_id_fkey
  FOREIGN KEY (workspace_id, run_id) REFERENCES agent.runs (workspace_id, id) ON DELETE CASCADE;
ALTER TABLE agent.approvals ADD CONSTRAINT approvals_workspace_id_run_id_fkey
  FOREIGN KEY (workspace_id, run_id) REFERENCES agent.runs (workspace_id, id) ON DELETE CASCADE;
ALTER TABLE agent.event_overlaps ADD CONSTRAINT event_overlaps_workspace_id_trigger_id_fkey
  FOREIGN KEY (workspace_id, trigger_id) REFERENCES agent.triggers (workspace_id, id) ON DELETE CASCADE;
ALTER TABLE agent.run_state ADD CONSTRAINT run_state_workspace_id_run_id_fkey
  FOREIGN KEY (workspace_id, run_id) REFERENCES agent.runs (workspace_id, id) ON DELETE CASCADE;
ALTER TABLE agent.mcp_tools ADD CONSTRAINT mcp_tools_workspace_id_server_id_fkey
  FOREIGN KEY (workspace_id, server_id) REFERENCES agent.mcp_servers (workspace_id, id) ON DELETE CASCADE;
ALTER TABLE agent.mcp_oauth ADD CONSTRAINT mcp_oauth_workspace_id_server_id_fkey
  FOREIGN KEY (workspace_id, server_id) REFERENCES agent.mcp_servers (workspace_id, id) ON DELETE CASCADE;
ALTER TABLE agent.mcp_elicitations ADD CONSTRAINT mcp_elicitations_workspace_id_run_id_fkey
  FOREIGN KEY (workspace_id, run_id) REFERENCES agent.runs (workspace_id, id) ON DELETE CASCADE;
ALTER TABLE agent.assistants ADD CONSTRAINT assistants_workspace_id_agent_id_fkey
  FOREIGN KEY (workspace_id, agent_id) REFERENCES agent.agents (workspace_id, id) ON DELETE CASCADE;
ALTER TABLE agent.conversations ADD CONSTRAINT conversations_workspace_id_agent_id_fkey
  FOREIGN KEY (workspace_id, agent_id) REFERENCES agent.agents (workspace_id, id) ON DELETE CASCADE;
ALTER TABLE agent.messages ADD CONSTRAINT messages_workspace_id_conversation_id_fkey
  FOREIGN KEY (workspace_id, conversation_id) REFERENCES agent.conversations (workspace_id, id) ON DELETE CASCADE;
ALTER TABLE agent.run_messages ADD CONSTRAINT run_messages_workspace_id_run_id_fkey
  FOREIGN KEY (workspace_id, run_id) REFERENCES agent.runs (workspace_id, id) ON DELETE CASCADE;

-- runs.trigger_id: cleared by a trigger, not by the foreign key
CREATE FUNCTION agent._triggers_clear_runs() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  -- (the runs of an agent being deleted go with it: left alone, so that
  -- their update does not check the foreign key to the deleted agent)
  UPDATE agent.runs r SET trigger_id = NULL
   WHERE r.workspace_id = OLD.workspace_id AND r.trigger_id = OLD.id
     AND EXISTS (SELECT 1 FROM agent.agents a WHERE a.workspace_id = r.workspace_id AND a.id = r.agent_id);
  RETURN OLD;
END
$$;
COMMENT ON FUNCTION agent._triggers_clear_runs() IS
  'Internal (trigger triggers_clear_runs): clears agent.runs.trigger_id of the runs of a trigger being deleted, in its workspace.';
CREATE TRIGGER triggers_clear_runs BEFORE DELETE ON agent.triggers
  FOR EACH ROW EXECUTE FUNCTION agent._triggers_clear_runs();

-- the ON CONFLICT targets of the widened keys
CREATE OR REPLACE FUNCTION agent.share(agent_id bigint, principal text, level text, by_user text)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  a   agent.agents%ROWTYPE;
  v_u text;
  v_g text;
BEGIN
  IF principal IS NULL OR principal !~ '^(user|group):.+$' THEN
    RAISE EXCEPTION 'invalid principal "%"', coalesce(principal, 'NULL')
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'An agent is shared with user:<id> or group:<id>.';
  END IF;
  IF level IS NULL OR level NOT IN ('full', 'edit', 'interact') THEN
    RAISE EXCEPTION 'invalid share level "%"', coalesce(level, 'NULL')
      USING ERRCODE = 'invalid_parameter_value', DETAIL = 'A level is full, edit or interact.';
  END IF;
  a := agent._agent_for(share.agent_id, by_user, 'share');
  IF principal LIKE 'user:%' THEN
    v_u := substr(principal, 6);
    INSERT INTO agent.shares (workspace_id, agent_id, user_id, level, created_by)
    VALUES (a.workspace_id, a.id, v_u, share.level, by_user)
    ON CONFLICT (agent_id, user_id, workspace_id) WHERE user_id IS NOT NULL
    DO UPDATE SET level = EXCLUDED.level, created_by = EXCLUDED.created_by, created_at = now();
  ELSE
    v_g := substr(principal, 7);
    INSERT INTO agent.shares (workspace_id, agent_id, group_id, level, created_by)
    VALUES (a.workspace_id, a.id, v_g, share.level, by_user)
    ON CONFLICT (agent_id, group_id, workspace_id) WHERE group_id IS NOT NULL
    DO UPDATE SET level = EXCLUDED.level, created_by = EXCLUDED.created_by, created_at = now();
  END IF;
  PERFORM agent._audit_event('agent.share', 'success', 'agent', a.id::text, a.workspace_id, a.owner_id,
                             jsonb_build_object('principal', principal, 'level', level, 'by_user', by_user),
                             format('%s shared agent %s with %s at %s', by_user, a.id, principal, level));
END
$$;

CREATE OR REPLACE FUNCTION agent._apply_settings(p_agent_id bigint, p_settings jsonb, p_by_user text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  s jsonb := p_settings;
BEGIN
  IF s ? 'delegation' THEN
    PERFORM agent._check_delegation(p_agent_id, s -> 'delegation');
  END IF;
  UPDATE agent.agents a SET
    name                 = CASE WHEN s ? 'name' THEN btrim(s ->> 'name') ELSE a.name END,
    instructions         = CASE WHEN s ? 'instructions' THEN s ->> 'instructions' ELSE a.instructions END,
    instruction_page_id  = CASE WHEN s ? 'instruction_page_id' THEN s ->> 'instruction_page_id' ELSE a.instruction_page_id END,
    model                = CASE WHEN s ? 'model' THEN s ->> 'model' ELSE a.model END,
    approval_mode        = CASE WHEN s ? 'approval_mode' THEN s ->> 'approval_mode' ELSE a.approval_mode END,
    scope                = CASE WHEN s ? 'provider' AND jsonb_typeof(s -> 'provider') = 'string'
                                  THEN coalesce(CASE WHEN s ? 'scope' THEN s -> 'scope' ELSE a.scope END, '{}')
                                       || jsonb_build_object('provider', s -> 'provider')
                                  WHEN s ? 'provider'
                                  THEN coalesce(CASE WHEN s ? 'scope' THEN s -> 'scope' ELSE a.scope END, '{}') - 'provider'
                                  WHEN s ? 'scope' THEN s -> 'scope' ELSE a.scope END,
    web_access           = CASE WHEN s ? 'web_access' THEN (s ->> 'web_access')::boolean ELSE a.web_access END,
    delegation           = CASE WHEN s ? 'delegation' THEN s -> 'delegation' ELSE a.delegation END,
    max_iterations       = CASE WHEN s ? 'max_iterations' THEN (s ->> 'max_iterations')::integer ELSE a.max_iterations END,
    hourly_run_cap       = CASE WHEN s ? 'hourly_run_cap' THEN (s ->> 'hourly_run_cap')::integer ELSE a.hourly_run_cap END,
    credit_limit_monthly = CASE WHEN s ? 'credit_limit_monthly' THEN (s ->> 'credit_limit_monthly')::integer ELSE a.credit_limit_monthly END,
    default_token_budget = CASE WHEN s ? 'default_token_budget' THEN (s ->> 'default_token_budget')::bigint ELSE a.default_token_budget END,
    updated_at           = now()
  WHERE a.id = p_agent_id;
  IF s ? 'access' THEN
    DELETE FROM agent.access g
     WHERE g.agent_id = p_agent_id
       AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(s -> 'access') e
                        WHERE e ->> 'resource_type' = g.resource_type AND e ->> 'resource_id' = g.resource_id);
    INSERT INTO agent.access AS g (workspace_id, agent_id, resource_type, resource_id, access, granted_by)
    SELECT DISTINCT ON (e ->> 'resource_type', e ->> 'resource_id')
           a.workspace_id, p_agent_id, e ->> 'resource_type', e ->> 'resource_id',
           coalesce(e ->> 'access', 'read'), p_by_user
      FROM agent.agents a, jsonb_array_elements(s -> 'access') WITH ORDINALITY AS x(e, n)
     WHERE a.id = p_agent_id
     ORDER BY e ->> 'resource_type', e ->> 'resource_id', n DESC
    ON CONFLICT (agent_id, resource_type, resource_id, workspace_id) DO UPDATE
      SET access = EXCLUDED.access, granted_by = EXCLUDED.granted_by, granted_at = now()
      WHERE g.access IS DISTINCT FROM EXCLUDED.access;
  END IF;
END
$$;
COMMENT ON FUNCTION agent._apply_settings(bigint, jsonb, text) IS
  'Internal: writes checked settings to the agent; an "access" list replaces its grants; a "delegation" list may name only agents of the agent''s workspace (agent._check_delegation).';

CREATE OR REPLACE FUNCTION agent._conversation_run_ended() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_conv    bigint;
  v_text    text;
  v_role    text;
  v_trig    bigint;
  v_tprompt text;
  v_start   text;
BEGIN
  IF NEW.status = 'succeeded' THEN
    v_role := 'assistant';
    v_text := coalesce(NEW.output ->> 'text', NEW.output #>> '{}', NEW.output::text, '');
  ELSE
    v_role := 'notice';
    v_text := pg_catalog.format('run %s ended %s%s', NEW.id, NEW.status,
                                coalesce(': ' || NEW.error, ''));
  END IF;
  IF NEW.regime = 'manual' THEN
    -- only a run made by agent.send_message: its user message is there
    SELECT m.conversation_id INTO v_conv
      FROM agent.messages m
     WHERE m.run_id = NEW.id AND m.role = 'user' AND m.workspace_id = NEW.workspace_id
       AND m.conversation_id = (CASE WHEN (NEW.input ->> 'conversation_id') ~ '^[0-9]{1,18}$'
                                     THEN (NEW.input ->> 'conversation_id')::bigint END)
     LIMIT 1;
    IF v_conv IS NULL THEN
      RETURN NULL;
    END IF;
    INSERT INTO agent.messages (workspace_id, conversation_id, role, content, run_id, tokens)
    VALUES (NEW.workspace_id, v_conv, v_role, v_text, NEW.id, (pg_catalog.length(v_text) + 3) / 4);
    RETURN NULL;
  END IF;
  IF NEW.trigger_id IS NOT NULL THEN
    SELECT CASE WHEN t.conversation = 'trigger' THEN t.id END, t.prompt INTO v_trig, v_tprompt
      FROM agent.triggers t WHERE t.id = NEW.trigger_id AND t.agent_id = NEW.agent_id;
  END IF;
  -- found, else made once (a concurrent first run waits on the unique index)
  SELECT c.id INTO v_conv FROM agent.conversations c
   WHERE c.agent_id = NEW.agent_id AND c.kind = 'autonomous' AND coalesce(c.trigger_id, 0) = coalesce(v_trig, 0);
  IF v_conv IS NULL THEN
    INSERT INTO agent.conversations AS c (workspace_id, agent_id, kind, trigger_id)
    VALUES (NEW.workspace_id, NEW.agent_id, 'autonomous', v_trig)
    ON CONFLICT (agent_id, (coalesce(trigger_id, 0)), workspace_id) WHERE kind = 'autonomous' DO NOTHING
    RETURNING c.id INTO v_conv;
    IF v_conv IS NULL THEN
      SELECT c.id INTO v_conv FROM agent.conversations c
       WHERE c.agent_id = NEW.agent_id AND c.kind = 'autonomous' AND coalesce(c.trigger_id, 0) = coalesce(v_trig, 0);
    END IF;
  END IF;
  -- what started it: the trigger label, and the prompt or the task (never
  -- the event payload, which may hold rows the reader may not see)
  v_start := agent._trigger_label(NEW.origin, NEW.input, NEW.trigger_id, NEW.parent_run_id)
             || coalesce(E'\n' || coalesce(NEW.input ->> 'prompt', v_tprompt, NEW.input ->> 'task'), '');
  -- both rows in one statement; no update of the conversation row, so that
  -- runs of one agent ending at once never wait on each other
  INSERT INTO agent.messages (workspace_id, conversation_id, role, content, run_id, tokens)
  SELECT NEW.workspace_id, v_conv, v.role, v.content, NEW.id, (pg_catalog.length(v.content) + 3) / 4
    FROM (VALUES (1, 'trigger', v_start), (2, v_role, v_text)) AS v(n, role, content)
   ORDER BY v.n;
  RETURN NULL;
END
$$;


-- the session-filled workspace of a direct INSERT: single-node only
-- Fills workspace_id of a row that belongs to an agent (or a run) when a
-- direct INSERT omits it: a single-node convenience.  On Citus every INSERT
-- names workspace_id (a distributed table routes the row before any trigger
-- runs), and the session's workspace is left alone: a reference table's
-- trigger runs on every node, where the session's settings are not set, and
-- would store a different row on each (docs/scaling.md).
CREATE OR REPLACE FUNCTION agent._fill_workspace() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF NEW.workspace_id IS NULL THEN
    IF TG_ARGV[0] = 'agent' THEN
      SELECT a.workspace_id INTO NEW.workspace_id FROM agent.agents a WHERE a.id = NEW.agent_id;
    ELSIF TG_ARGV[0] = 'run' THEN
      SELECT r.workspace_id INTO NEW.workspace_id FROM agent.runs r WHERE r.id = NEW.run_id;
    ELSIF pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NULL THEN
      NEW.workspace_id := nullif(current_setting('pg_agents.workspace', true), '');
    END IF;
  END IF;
  RETURN NEW;
END
$$;
