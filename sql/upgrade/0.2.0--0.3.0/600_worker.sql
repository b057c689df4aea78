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
SET search_path = pg_catalog
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
-- MCP: personal servers serve only their user's runs; status of the session's
-- workspace only (sql/src/700_mcp.sql)
-- ---------------------------------------------------------------------------
-- The user whose personal MCP servers serve a run: the requester of a
-- manual run, the agent's owner for an autonomous one.
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

CREATE FUNCTION agent.mcp_agent_tools(agent_id bigint, user_id text)
RETURNS TABLE(exposed_name text, server_id bigint, server text, tool text, description text,
              input_schema jsonb, needs_approval boolean, read_only boolean)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog
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
SET search_path = pg_catalog
AS $$
  SELECT * FROM agent.mcp_agent_tools(mcp_agent_tools.agent_id,
                                      (SELECT a.owner_id FROM agent.agents a WHERE a.id = mcp_agent_tools.agent_id))
$$;
REVOKE ALL ON FUNCTION agent.mcp_agent_tools(bigint) FROM PUBLIC;
COMMENT ON FUNCTION agent.mcp_agent_tools(bigint) IS
  'MCP tools of the agent''s autonomous runs: agent.mcp_agent_tools(agent_id, <its owner>) (the workspace servers and its owner''s personal ones).';

CREATE FUNCTION agent.mcp_agent_call(agent_id bigint, exposed_name text, arguments jsonb, user_id text)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog
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
SET search_path = pg_catalog
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

CREATE OR REPLACE FUNCTION agent.mcp_status(workspace_id text DEFAULT agent.current_workspace(),
                                 owner_id text DEFAULT NULL)
RETURNS jsonb
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog
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
