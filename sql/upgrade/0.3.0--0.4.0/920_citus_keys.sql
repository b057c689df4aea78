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
\ir ../../functions/agent._triggers_clear_runs.sql
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

\ir ../../functions/agent._apply_settings.sql



-- the session-filled workspace of a direct INSERT: single-node only
-- Fills workspace_id of a row that belongs to an agent (or a run) when a
-- direct INSERT omits it: a single-node convenience.  On Citus every INSERT
-- names workspace_id (a distributed table routes the row before any trigger
-- runs), and the session's workspace is left alone: a reference table's
-- trigger runs on every node, where the session's settings are not set, and
-- would store a different row on each (docs/scaling.md).
\ir ../../functions/agent._fill_workspace.sql
