-- worker: the LLM endpoint allowlist (pg_agents.llm_url_allowlist) and the
-- API key only ever sent to pg_agents.llm_url; approvals that show exactly
-- what runs (pg_agents.approval_max_input, no credential stored); MCP
-- scoping by workspace and by the run's user.  (sql/src/600_worker.sql,
-- 300_runs.sql, 700_mcp.sql, 000_schema.sql)

-- ---------------------------------------------------------------------------
-- Where the API key goes (docs/worker.md, "LLM endpoints and the API key")
-- ---------------------------------------------------------------------------
-- An agent's settings may name their own LLM endpoint (scope.llm_url) only
-- when a superuser listed it in pg_agents.llm_url_allowlist (or it is
-- pg_agents.llm_url itself).  Checked on every write of the scope (save,
-- create, restore, a direct UPDATE) and again by the worker before each
-- run, since the allowlist may change.  pg_agents.llm_api_key is only ever
-- sent to pg_agents.llm_url: an allowlisted agent endpoint gets no key.
CREATE FUNCTION agent._llm_url_allowed(url text) RETURNS boolean
LANGUAGE C STABLE STRICT PARALLEL SAFE
AS 'MODULE_PATHNAME', 'pg_agents_llm_url_allowed';
COMMENT ON FUNCTION agent._llm_url_allowed(text) IS
  'Internal: whether an agent may name this LLM endpoint: pg_agents.llm_url, or an entry of pg_agents.llm_url_allowlist (exact match once trailing slashes are trimmed).';

CREATE FUNCTION agent._agents_llm_url_check() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_url jsonb := NEW.scope -> 'llm_url';
BEGIN
  IF v_url IS NULL OR (TG_OP = 'UPDATE' AND v_url IS NOT DISTINCT FROM OLD.scope -> 'llm_url') THEN
    RETURN NEW;
  END IF;
  IF pg_catalog.jsonb_typeof(v_url) <> 'string' THEN
    RAISE EXCEPTION 'scope key "llm_url" must be a string'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF NOT agent._llm_url_allowed(v_url #>> '{}') THEN
    RAISE EXCEPTION 'scope llm_url "%" is not an allowed LLM endpoint', v_url #>> '{}'
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'An agent''s settings may only name an endpoint listed in pg_agents.llm_url_allowlist, which a superuser sets; the API key is only ever sent to pg_agents.llm_url.',
            HINT = 'Remove llm_url from the scope to use the cluster''s endpoint, or ask a superuser to add it to pg_agents.llm_url_allowlist.';
  END IF;
  RETURN NEW;
END
$$;
REVOKE ALL ON FUNCTION agent._agents_llm_url_check() FROM PUBLIC;
COMMENT ON FUNCTION agent._agents_llm_url_check() IS
  'Internal trigger: refuses (22023) an agent scope whose llm_url changed to an endpoint outside pg_agents.llm_url_allowlist.';

CREATE TRIGGER agents_llm_url_check BEFORE INSERT OR UPDATE OF scope ON agent.agents
  FOR EACH ROW EXECUTE FUNCTION agent._agents_llm_url_check();
COMMENT ON TRIGGER agents_llm_url_check ON agent.agents IS
  'scope.llm_url must be an endpoint a superuser allowed (pg_agents.llm_url_allowlist).';

-- ---------------------------------------------------------------------------
-- Approvals show what runs (agent.request_approval)
-- ---------------------------------------------------------------------------
CREATE FUNCTION agent._has_credential(input jsonb) RETURNS boolean
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
AS 'MODULE_PATHNAME', 'pg_agents_has_credential';
COMMENT ON FUNCTION agent._has_credential(jsonb) IS
  'Internal: whether redaction of credentials (agent.redact''s rules, without its size cuts) would change the value: a value under a credential-shaped key, or a credential-shaped string.';

-- ---------------------------------------------------------------------------
-- agent.request_approval (sql/src/300_runs.sql)
-- ---------------------------------------------------------------------------
CREATE OR REPLACE FUNCTION agent.request_approval(run_id bigint, tool text, input jsonb) RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  r     agent.runs%ROWTYPE;
  v_in  jsonb := coalesce(request_approval.input, '{}');
  v_key text;
  v_id  bigint;
  v_len bigint;
  v_max bigint;
BEGIN
  IF tool IS NULL THEN
    RAISE EXCEPTION 'tool name must not be empty' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- the approver sees exactly what will run: the whole input, or no approval
  v_len := pg_catalog.octet_length(v_in::text);
  v_max := pg_catalog.pg_size_bytes(pg_catalog.current_setting('pg_agents.approval_max_input'));
  IF v_len > v_max THEN
    RAISE EXCEPTION 'tool input of % bytes is too large to be approved', v_len
      USING ERRCODE = 'program_limit_exceeded',
            DETAIL = pg_catalog.format('An approval shows the whole input of the call it authorises, up to pg_agents.approval_max_input (%s bytes).', v_max),
            HINT = 'Make the change in smaller calls, or ask a superuser to raise pg_agents.approval_max_input.';
  END IF;
  IF agent._has_credential(v_in) THEN
    RAISE EXCEPTION 'tool input holds a credential-shaped value'
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'An approval stores the input exactly as it will run, and a credential is never stored: the call is refused.',
            HINT = 'Refer to the secret (e.g. by the name of a configured connection) instead of passing it.';
  END IF;
  v_key := agent.approval_key(tool, v_in);
  r := agent._lock_run(request_approval.run_id);
  IF r.status NOT IN ('running', 'waiting_approval') THEN
    RAISE EXCEPTION 'run % is not running', r.id
      USING ERRCODE = 'object_not_in_prerequisite_state',
            DETAIL = format('The run is %s; only a running run asks for an approval.', r.status);
  END IF;
  SELECT p.id INTO v_id FROM agent.approvals p
   WHERE p.run_id = r.id AND p.approval_key = v_key AND p.status = 'pending';
  IF NOT FOUND THEN
    INSERT INTO agent.approvals (workspace_id, run_id, approval_key, tool, input, status, expires_at)
    VALUES (r.workspace_id, r.id, v_key, tool, v_in, 'pending',
            now() + current_setting('pg_agents.approval_ttl')::interval)
    RETURNING id INTO v_id;
    PERFORM agent._audit_event('approval.request', 'success', 'approval', v_id::text, r.workspace_id,
                               (SELECT a.owner_id FROM agent.agents a WHERE a.id = r.agent_id),
                               jsonb_build_object('run_id', r.id, 'tool', tool, 'approval_key', v_key,
                                                  'input', agent.redact(v_in)),
                               format('run %s asks approval for %s', r.id, tool));
  END IF;
  IF r.status <> 'waiting_approval' THEN
    UPDATE agent.runs x SET status = 'waiting_approval', lease_until = NULL WHERE x.id = r.id RETURNING * INTO r;
    PERFORM agent._audit_run('run.wait', r, 'success', jsonb_build_object('status', 'waiting_approval'),
                             format('run %s waits for approval of %s', r.id, tool));
    PERFORM agent._runs_notify(r.id, r.agent_id, 'waiting_approval');
  END IF;
  RETURN v_key;
END
$$;
COMMENT ON FUNCTION agent.request_approval(bigint, text, jsonb) IS
  'Pauses a running run on a tool call that needs approval: stores a pending approval (key, the input exactly as it will run, expires_at = now() + pg_agents.approval_ttl), the run goes to waiting_approval. An input larger than pg_agents.approval_max_input (54000) or holding a credential-shaped value (22023) is refused. Asking twice for the same call reuses the pending approval. Returns the approval key.';
COMMENT ON COLUMN agent.approvals.input IS 'Tool input, exactly as the approved call runs (never cut; a call whose input holds a credential-shaped value or exceeds pg_agents.approval_max_input is refused).';

-- ---------------------------------------------------------------------------
-- MCP: personal servers serve only their user's runs; the catalogue and its
-- status inside the session's workspace (sql/src/700_mcp.sql)
-- ---------------------------------------------------------------------------
CREATE OR REPLACE FUNCTION agent._mcp_server_id(p_name text, p_workspace_id text, p_owner_id text DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_id bigint;
BEGIN
  IF p_workspace_id IS NULL THEN
    RAISE EXCEPTION 'workspace_id is required'
      USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Pass workspace_id or set pg_agents.workspace.';
  END IF;
  IF NOT agent._workspace_ok(p_workspace_id) THEN
    v_id := NULL;             -- another workspace: as if it did not exist
  ELSIF p_owner_id IS NULL THEN
    SELECT s.id INTO v_id FROM agent.mcp_servers s
     WHERE s.workspace_id = p_workspace_id AND s.scope = 'workspace' AND s.name = p_name;
  ELSE
    SELECT s.id INTO v_id FROM agent.mcp_servers s
     WHERE s.workspace_id = p_workspace_id AND s.scope = 'user' AND s.owner_id = p_owner_id
       AND s.name = p_name;
  END IF;
  IF v_id IS NULL THEN
    RAISE EXCEPTION 'MCP server "%" does not exist', p_name
      USING ERRCODE = 'undefined_object',
            DETAIL = CASE WHEN p_owner_id IS NULL
                          THEN format('No workspace server of that name in workspace "%s".', p_workspace_id)
                          ELSE format('No personal server of that name for user "%s" in workspace "%s".',
                                      p_owner_id, p_workspace_id) END;
  END IF;
  RETURN v_id;
END
$$;
REVOKE ALL ON FUNCTION agent._mcp_server_id(text, text, text) FROM PUBLIC;
COMMENT ON FUNCTION agent._mcp_server_id(text, text, text) IS
  'Internal: the id of a server by name (a personal one when owner_id is given), or an undefined_object error.';

CREATE OR REPLACE FUNCTION agent.mcp_add_server(name text, url text, headers jsonb DEFAULT '{}',
                                     scope text DEFAULT 'workspace',
                                     workspace_id text DEFAULT agent.current_workspace(),
                                     owner_id text DEFAULT NULL,
                                     description text DEFAULT NULL,
                                     refresh boolean DEFAULT true)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_id bigint;
BEGIN
  IF name IS NULL OR name !~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,47}$' THEN
    RAISE EXCEPTION 'invalid MCP server name "%"', name
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = 'A server name is 1 to 48 letters, digits, "_", "." or "-", starting with a letter or a digit.';
  END IF;
  IF scope IS NULL OR scope NOT IN ('workspace', 'user') THEN
    RAISE EXCEPTION 'invalid MCP server scope "%"', scope
      USING ERRCODE = 'invalid_parameter_value', DETAIL = 'A scope is workspace or user.';
  END IF;
  IF workspace_id IS NULL THEN
    RAISE EXCEPTION 'workspace_id is required'
      USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Pass workspace_id or set pg_agents.workspace.';
  END IF;
  IF NOT agent._workspace_ok(workspace_id) THEN
    RAISE EXCEPTION 'workspace "%" is not the session''s workspace', workspace_id
      USING ERRCODE = 'insufficient_privilege',
            DETAIL = 'An MCP server is added to the workspace named by pg_agents.workspace.';
  END IF;
  IF scope = 'user' AND owner_id IS NULL THEN
    RAISE EXCEPTION 'a user-scope MCP server needs an owner_id'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF scope = 'workspace' AND owner_id IS NOT NULL THEN
    RAISE EXCEPTION 'a workspace-scope MCP server has no owner_id'
      USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Use scope => ''user'' for a personal server.';
  END IF;
  IF url IS NULL OR agent._mcp_url_problem(url) IS NOT NULL THEN
    RAISE EXCEPTION 'URL of MCP server "%" is not allowed', name
      USING ERRCODE = 'invalid_parameter_value',
            DETAIL = coalesce(agent._mcp_url_problem(url), 'The URL is empty.');
  END IF;
  IF headers IS NULL OR jsonb_typeof(headers) <> 'object' THEN
    RAISE EXCEPTION 'headers of MCP server "%" must be a JSON object', name
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF EXISTS (SELECT 1 FROM agent.mcp_servers s
              WHERE s.workspace_id = mcp_add_server.workspace_id AND s.scope = mcp_add_server.scope
                AND s.owner_id IS NOT DISTINCT FROM mcp_add_server.owner_id
                AND s.name = mcp_add_server.name) THEN
    RAISE EXCEPTION 'MCP server "%" already exists', name
      USING ERRCODE = 'unique_violation',
            HINT = 'Remove it first with agent.mcp_remove_server, or choose another name.';
  END IF;
  INSERT INTO agent.mcp_servers (workspace_id, name, scope, owner_id, url, headers, description)
  VALUES (mcp_add_server.workspace_id, mcp_add_server.name, mcp_add_server.scope,
          mcp_add_server.owner_id, mcp_add_server.url, mcp_add_server.headers,
          mcp_add_server.description)
  RETURNING id INTO v_id;
  PERFORM agent._audit_event('mcp.add_server', 'success', 'mcp_server', v_id::text,
                             mcp_add_server.workspace_id, mcp_add_server.owner_id,
                             jsonb_build_object('name', mcp_add_server.name, 'scope', mcp_add_server.scope,
                                                'url', mcp_add_server.url,
                                                'header_names', (SELECT coalesce(jsonb_agg(k ORDER BY k), '[]')
                                                                   FROM jsonb_object_keys(mcp_add_server.headers) k)),
                             format('MCP server "%s" added', mcp_add_server.name));
  IF refresh THEN
    PERFORM agent.mcp_refresh(v_id);
  END IF;
  RETURN v_id;
END
$$;
REVOKE ALL ON FUNCTION agent.mcp_add_server(text, text, jsonb, text, text, text, text, boolean) FROM PUBLIC;
COMMENT ON FUNCTION agent.mcp_add_server(text, text, jsonb, text, text, text, text, boolean) IS
  'Adds an MCP server (https://, or http:// to a loopback host) and, unless refresh is false, connects to it at once and lists its tools; a server that cannot be reached is still added, with its error in agent.mcp_status. Returns its id.';

CREATE OR REPLACE FUNCTION agent.mcp_remove_server(server_id bigint) RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  s agent.mcp_servers%ROWTYPE;
BEGIN
  DELETE FROM agent.mcp_servers m WHERE m.id = server_id AND agent._workspace_ok(m.workspace_id) RETURNING * INTO s;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  PERFORM agent._audit_event('mcp.remove_server', 'success', 'mcp_server', s.id::text,
                             s.workspace_id, s.owner_id,
                             jsonb_build_object('name', s.name, 'scope', s.scope),
                             format('MCP server "%s" removed', s.name));
  RETURN true;
END
$$;
REVOKE ALL ON FUNCTION agent.mcp_remove_server(bigint) FROM PUBLIC;
COMMENT ON FUNCTION agent.mcp_remove_server(bigint) IS
  'Removes an MCP server and its tools; agents stop seeing them at their next turn. Returns false when there was no such server.';

CREATE OR REPLACE FUNCTION agent.mcp_set_enabled(server_id bigint, enabled boolean) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  UPDATE agent.mcp_servers s SET enabled = mcp_set_enabled.enabled
   WHERE s.id = server_id AND agent._workspace_ok(s.workspace_id);
  IF NOT FOUND THEN
    RAISE EXCEPTION 'MCP server % does not exist', server_id USING ERRCODE = 'undefined_object';
  END IF;
END
$$;
REVOKE ALL ON FUNCTION agent.mcp_set_enabled(bigint, boolean) FROM PUBLIC;
COMMENT ON FUNCTION agent.mcp_set_enabled(bigint, boolean) IS
  'Enables or disables an MCP server (a disabled server is neither refreshed nor offered to agents).';

CREATE OR REPLACE FUNCTION agent.mcp_set_tool_approval(server_id bigint, tool text, needs_approval boolean DEFAULT true)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  UPDATE agent.mcp_tools t SET needs_approval = mcp_set_tool_approval.needs_approval
   WHERE t.server_id = mcp_set_tool_approval.server_id AND t.name = tool
     AND agent._workspace_ok(t.workspace_id);
  IF NOT FOUND THEN
    RAISE EXCEPTION 'MCP tool "%" of server % does not exist', tool, server_id
      USING ERRCODE = 'undefined_object', HINT = 'Refresh the server first with agent.mcp_refresh.';
  END IF;
END
$$;
REVOKE ALL ON FUNCTION agent.mcp_set_tool_approval(bigint, text, boolean) FROM PUBLIC;
COMMENT ON FUNCTION agent.mcp_set_tool_approval(bigint, text, boolean) IS
  'Marks an MCP tool as needing human approval (a call pauses the run in waiting_approval), or not.';

CREATE OR REPLACE FUNCTION agent.mcp_refresh(server_id bigint)
RETURNS TABLE(id bigint, name text, connected boolean, tool_count integer, error text)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  s agent.mcp_servers%ROWTYPE;
  r jsonb;
  t jsonb;
  v_names text[] := '{}';
  v_name text;
BEGIN
  SELECT * INTO s FROM agent.mcp_servers m
   WHERE m.id = mcp_refresh.server_id AND agent._workspace_ok(m.workspace_id) FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'MCP server % does not exist', mcp_refresh.server_id USING ERRCODE = 'undefined_object';
  END IF;
  r := agent._mcp_list(s.id, s.url, s.headers);
  IF NOT (r->>'ok')::boolean THEN
    UPDATE agent.mcp_servers m SET last_error = r->>'error' WHERE m.id = s.id;
    RETURN QUERY SELECT s.id, s.name, false, NULL::integer, r->>'error';
    RETURN;
  END IF;
  FOR t IN SELECT * FROM jsonb_array_elements(r->'tools') LOOP
    v_name := t->>'name';
    IF v_name IS NULL OR v_name = ANY (v_names) THEN
      CONTINUE;
    END IF;
    v_names := v_names || v_name;
    INSERT INTO agent.mcp_tools AS mt (workspace_id, server_id, name, exposed_name, description,
                                       input_schema, annotations, refreshed_at)
    VALUES (s.workspace_id, s.id, v_name, agent._mcp_exposed_name(s.id, v_name), t->>'description',
            CASE WHEN jsonb_typeof(t->'inputSchema') = 'object' THEN t->'inputSchema'
                 ELSE '{"type": "object"}' END,
            t->'annotations', now())
    ON CONFLICT ON CONSTRAINT mcp_tools_pkey DO UPDATE
       SET description = EXCLUDED.description, input_schema = EXCLUDED.input_schema,
           annotations = EXCLUDED.annotations, refreshed_at = EXCLUDED.refreshed_at;
  END LOOP;
  DELETE FROM agent.mcp_tools mt WHERE mt.server_id = s.id AND NOT (mt.name = ANY (v_names));
  UPDATE agent.mcp_servers m
     SET last_error = NULL, tools_refreshed_at = now(),
         protocol_version = r->>'protocolVersion', server_info = r->'serverInfo'
   WHERE m.id = s.id;
  RETURN QUERY SELECT s.id, s.name, true, cardinality(v_names), NULL::text;
END
$$;
REVOKE ALL ON FUNCTION agent.mcp_refresh(bigint) FROM PUBLIC;
COMMENT ON FUNCTION agent.mcp_refresh(bigint) IS
  'Connects to one MCP server from this backend (initialize, tools/list to the last page) and replaces its tools in agent.mcp_tools; a failure is recorded in last_error and returned, never raised.';

CREATE OR REPLACE FUNCTION agent.mcp_refresh(server text DEFAULT NULL,
                                  workspace_id text DEFAULT agent.current_workspace(),
                                  owner_id text DEFAULT NULL)
RETURNS TABLE(id bigint, name text, connected boolean, tool_count integer, error text)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_id bigint;
BEGIN
  IF server IS NOT NULL THEN
    RETURN QUERY SELECT * FROM agent.mcp_refresh(agent._mcp_server_id(server, workspace_id, owner_id));
    RETURN;
  END IF;
  -- every enabled server of the workspace (of every workspace when NULL),
  -- personal ones limited to owner_id when it is given
  FOR v_id IN SELECT s.id FROM agent.mcp_servers s
               WHERE s.enabled
                 AND (mcp_refresh.workspace_id IS NULL OR s.workspace_id = mcp_refresh.workspace_id)
                 AND agent._workspace_ok(s.workspace_id)
                 AND (mcp_refresh.owner_id IS NULL OR s.scope = 'workspace' OR s.owner_id = mcp_refresh.owner_id)
               ORDER BY s.id LOOP
    RETURN QUERY SELECT * FROM agent.mcp_refresh(v_id);
  END LOOP;
END
$$;
REVOKE ALL ON FUNCTION agent.mcp_refresh(text, text, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.mcp_refresh(text, text, text) IS
  'Refreshes one MCP server by name, or with no name every enabled server of the workspace; one row per server: connected, tool count or error. Broken servers are skipped with their error, the others refresh.';

CREATE OR REPLACE FUNCTION agent.mcp_call(server_id bigint, tool text, arguments jsonb DEFAULT '{}')
RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  s agent.mcp_servers%ROWTYPE;
  r jsonb;
BEGIN
  SELECT * INTO s FROM agent.mcp_servers m
   WHERE m.id = mcp_call.server_id AND agent._workspace_ok(m.workspace_id);
  IF NOT FOUND THEN
    RAISE EXCEPTION 'MCP server % does not exist', mcp_call.server_id USING ERRCODE = 'undefined_object';
  END IF;
  IF tool IS NULL OR tool = '' THEN
    RAISE EXCEPTION 'tool name is required' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF arguments IS NOT NULL AND jsonb_typeof(arguments) <> 'object' THEN
    RAISE EXCEPTION 'arguments of MCP tool "%" must be a JSON object', tool
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  r := agent._mcp_call(s.id, s.url, s.headers, tool, coalesce(arguments, '{}'));
  IF (r->>'ok')::boolean THEN
    RETURN r->'result';
  END IF;
  IF r ? 'rpc_error' THEN
    RETURN agent._mcp_failed_result(r->>'error', r->'rpc_error');
  END IF;
  RAISE EXCEPTION 'could not call MCP tool "%" on server "%"', tool, s.name
    USING ERRCODE = 'connection_failure', DETAIL = r->>'error';
END
$$;
REVOKE ALL ON FUNCTION agent.mcp_call(bigint, text, jsonb) FROM PUBLIC;
COMMENT ON FUNCTION agent.mcp_call(bigint, text, jsonb) IS
  'Admin and testing: one tools/call from this backend. Returns the CallToolResult (isError true for a failed tool or a JSON-RPC error); raises connection_failure when the server cannot be reached.';

CREATE FUNCTION agent._mcp_run_user(p_run_id bigint) RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT CASE WHEN r.regime = 'manual' THEN r.requested_by ELSE a.owner_id END
    FROM agent.runs r JOIN agent.agents a ON a.id = r.agent_id
   WHERE r.id = p_run_id
$$;
REVOKE ALL ON FUNCTION agent._mcp_run_user(bigint) FROM PUBLIC;
COMMENT ON FUNCTION agent._mcp_run_user(bigint) IS
  'Internal: whose personal MCP servers serve the run: its requester for a manual run, the agent''s owner for an autonomous one.';

CREATE OR REPLACE FUNCTION agent.mcp_agent_tools(agent_id bigint, user_id text)
RETURNS TABLE(exposed_name text, server_id bigint, server text, tool text, description text,
              input_schema jsonb, needs_approval boolean, read_only boolean)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT t.exposed_name, s.id, s.name, t.name, t.description, t.input_schema,
         t.needs_approval OR agent._mcp_match(t.exposed_name, a.scope->'needs_approval'),
         coalesce((t.annotations->>'readOnlyHint')::boolean, false)
    FROM agent.agents a
    JOIN agent.mcp_servers s ON s.workspace_id = a.workspace_id
                            AND (s.scope = 'workspace'
                                 OR (s.scope = 'user' AND s.owner_id = mcp_agent_tools.user_id))
    JOIN agent.mcp_tools t ON t.server_id = s.id
   WHERE a.id = mcp_agent_tools.agent_id AND a.deleted_at IS NULL AND s.enabled
     AND (agent._mcp_match(s.name, a.scope->'mcp_servers')
          OR agent._mcp_match(t.exposed_name, a.scope->'mcp_tools'))
   ORDER BY t.exposed_name
$$;
REVOKE ALL ON FUNCTION agent.mcp_agent_tools(bigint, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.mcp_agent_tools(bigint, text) IS
  'MCP tools an agent may use in a run of user_id: enabled servers of its workspace and user_id''s own personal ones (none when NULL), filtered by the agent''s scope (mcp_servers: server names or patterns; mcp_tools: exposed names or patterns; none by default). needs_approval is the tool''s flag or a match in scope.needs_approval (names or * patterns). The worker passes agent._mcp_run_user(run).';

CREATE OR REPLACE FUNCTION agent.mcp_agent_tools(agent_id bigint)
RETURNS TABLE(exposed_name text, server_id bigint, server text, tool text, description text,
              input_schema jsonb, needs_approval boolean, read_only boolean)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT * FROM agent.mcp_agent_tools(mcp_agent_tools.agent_id,
                                      (SELECT a.owner_id FROM agent.agents a WHERE a.id = mcp_agent_tools.agent_id))
$$;
REVOKE ALL ON FUNCTION agent.mcp_agent_tools(bigint) FROM PUBLIC;
COMMENT ON FUNCTION agent.mcp_agent_tools(bigint) IS
  'MCP tools of the agent''s autonomous runs: agent.mcp_agent_tools(agent_id, <its owner>) (the workspace servers and its owner''s personal ones).';

CREATE OR REPLACE FUNCTION agent.mcp_agent_call(agent_id bigint, exposed_name text, arguments jsonb, user_id text)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_server_id bigint;
  v_tool text;
  s agent.mcp_servers%ROWTYPE;
  r jsonb;
BEGIN
  SELECT m.server_id, m.tool INTO v_server_id, v_tool
    FROM agent.mcp_agent_tools(mcp_agent_call.agent_id, mcp_agent_call.user_id) m
   WHERE m.exposed_name = mcp_agent_call.exposed_name;
  IF v_server_id IS NULL THEN
    RETURN jsonb_build_object('ok', false, 'denied', true,
                              'error', format('tool "%s" is not available to this agent', exposed_name),
                              'result', agent._mcp_failed_result(format('tool "%s" is not available to this agent', exposed_name)));
  END IF;
  SELECT * INTO s FROM agent.mcp_servers m WHERE m.id = v_server_id;
  IF arguments IS NULL OR jsonb_typeof(arguments) <> 'object' THEN
    arguments := '{}';
  END IF;
  r := agent._mcp_call(s.id, s.url, s.headers, v_tool, arguments);
  IF (r->>'ok')::boolean THEN
    RETURN jsonb_build_object('ok', NOT coalesce((r->'result'->>'isError')::boolean, false),
                              'server', s.name, 'tool', v_tool, 'result', r->'result');
  END IF;
  RETURN jsonb_build_object('ok', false, 'server', s.name, 'tool', v_tool, 'error', r->>'error',
                            'result', agent._mcp_failed_result(r->>'error', r->'rpc_error'));
END
$$;
REVOKE ALL ON FUNCTION agent.mcp_agent_call(bigint, text, jsonb, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.mcp_agent_call(bigint, text, jsonb, text) IS
  'Worker entry point: calls an MCP tool by its exposed name for an agent in a run of user_id (checked against agent.mcp_agent_tools(agent_id, user_id)); returns {"ok", "server", "tool", "result": CallToolResult, "error"?}; a refused, failed or unreachable call is a failed result, never an exception.';

CREATE OR REPLACE FUNCTION agent.mcp_agent_call(agent_id bigint, exposed_name text, arguments jsonb DEFAULT '{}')
RETURNS jsonb
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT agent.mcp_agent_call(mcp_agent_call.agent_id, mcp_agent_call.exposed_name, mcp_agent_call.arguments,
                              (SELECT a.owner_id FROM agent.agents a WHERE a.id = mcp_agent_call.agent_id))
$$;
REVOKE ALL ON FUNCTION agent.mcp_agent_call(bigint, text, jsonb) FROM PUBLIC;
COMMENT ON FUNCTION agent.mcp_agent_call(bigint, text, jsonb) IS
  'agent.mcp_agent_call(agent_id, exposed_name, arguments, <its owner>): a call as in the agent''s autonomous runs.';

CREATE OR REPLACE VIEW agent.mcp_status WITH (security_barrier) AS
  SELECT s.id AS server_id, s.workspace_id, s.scope, s.owner_id, s.name, s.url, s.description,
         s.enabled,
         (s.enabled AND s.last_error IS NULL AND s.tools_refreshed_at IS NOT NULL) AS connected,
         (SELECT count(*) FROM agent.mcp_tools t WHERE t.server_id = s.id)::integer AS tool_count,
         s.last_error, s.tools_refreshed_at, s.protocol_version, s.server_info
    FROM agent.mcp_servers s
   WHERE s.workspace_id = nullif(pg_catalog.current_setting('pg_agents.workspace', true), '')
      OR (nullif(pg_catalog.current_setting('pg_agents.workspace', true), '') IS NULL
          AND pg_catalog.current_setting('is_superuser') = 'on');
REVOKE ALL ON agent.mcp_status FROM PUBLIC;
COMMENT ON VIEW agent.mcp_status IS 'MCP servers without their headers: configured, connected, tool count, last error; the session''s workspace (pg_agents.workspace) only; every workspace for a superuser session that sets none.';
COMMENT ON COLUMN agent.mcp_status.server_id IS 'Server id.';
COMMENT ON COLUMN agent.mcp_status.workspace_id IS 'Workspace of the server.';
COMMENT ON COLUMN agent.mcp_status.scope IS 'workspace or user.';
COMMENT ON COLUMN agent.mcp_status.owner_id IS 'Owner of a personal server.';
COMMENT ON COLUMN agent.mcp_status.name IS 'Server name.';
COMMENT ON COLUMN agent.mcp_status.url IS 'Endpoint URL.';
COMMENT ON COLUMN agent.mcp_status.description IS 'Description.';
COMMENT ON COLUMN agent.mcp_status.enabled IS 'Whether the server is enabled.';
COMMENT ON COLUMN agent.mcp_status.connected IS 'Enabled, refreshed, and the last refresh succeeded.';
COMMENT ON COLUMN agent.mcp_status.tool_count IS 'Tools listed at the last successful refresh.';
COMMENT ON COLUMN agent.mcp_status.last_error IS 'Error of the last refresh.';
COMMENT ON COLUMN agent.mcp_status.tools_refreshed_at IS 'Last successful refresh.';
COMMENT ON COLUMN agent.mcp_status.protocol_version IS 'Negotiated MCP protocol version.';
COMMENT ON COLUMN agent.mcp_status.server_info IS 'serverInfo reported by the server.';

CREATE OR REPLACE FUNCTION agent.mcp_status(workspace_id text DEFAULT agent.current_workspace(),
                                 owner_id text DEFAULT NULL)
RETURNS jsonb
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
  WITH w AS (SELECT agent._session_workspace() AS ws),
  s AS (
    SELECT m.*, (m.enabled AND m.last_error IS NULL AND m.tools_refreshed_at IS NOT NULL) AS connected
      FROM agent.mcp_servers m, w
     WHERE m.workspace_id = mcp_status.workspace_id
       AND (w.ws IS NULL OR m.workspace_id = w.ws)
       AND (m.scope = 'workspace' OR m.owner_id = mcp_status.owner_id)
  )
  SELECT jsonb_build_object(
    'configuredServers', (SELECT coalesce(jsonb_agg(s.name ORDER BY s.name), '[]') FROM s WHERE s.enabled),
    'connectedServers', (SELECT coalesce(jsonb_agg(s.name ORDER BY s.name), '[]') FROM s WHERE s.connected),
    'totalTools', (SELECT count(*) FROM s JOIN agent.mcp_tools t ON t.server_id = s.id WHERE s.connected),
    'tools', (SELECT coalesce(jsonb_agg(jsonb_build_object('source', s.name, 'name', t.exposed_name,
                                                           'description', t.description)
                                        ORDER BY t.exposed_name), '[]')
                FROM s JOIN agent.mcp_tools t ON t.server_id = s.id WHERE s.connected),
    'errors', (SELECT coalesce(jsonb_object_agg(s.name, s.last_error), '{}')
                 FROM s WHERE s.enabled AND s.last_error IS NOT NULL))
$$;
REVOKE ALL ON FUNCTION agent.mcp_status(text, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.mcp_status(text, text) IS
  'MCP client status of a workspace (and of one user''s personal servers), shaped like /mcp/status: configuredServers, connectedServers, totalTools, tools [{source, name, description}], errors {server: error}. Only the session''s workspace (pg_agents.workspace): another workspace is reported empty, as if it had no server; a superuser session that sets none may name any.';

