CREATE OR REPLACE VIEW agent.run_metrics WITH (security_barrier) AS
  SELECT r.id AS run_id, r.workspace_id, r.agent_id, a.name AS agent_name, r.origin, r.trigger_id,
         r.parent_run_id, r.status,
         coalesce(a.scope ->> 'llm_provider', nullif(pg_catalog.current_setting('pg_agents.llm_provider', true), ''),
                  'openai') AS provider,
         pg_catalog.substring(coalesce(a.scope ->> 'llm_url', pg_catalog.current_setting('pg_agents.llm_url', true)),
                              '^[A-Za-z][A-Za-z0-9+.-]*://(?:[^@/?#]*@)?(\[[^]/]*\]|[^/:?#]*)') AS endpoint_host,
         r.model, r.created_at, r.started_at, r.finished_at,
         pg_catalog.date_part('epoch', r.started_at - r.created_at) * 1000 AS queue_ms,
         pg_catalog.date_part('epoch', r.finished_at - r.started_at) * 1000 AS duration_ms,
         r.tokens_in, r.tokens_out, r.tokens_cached, r.tokens_total, r.attempts,
         agent.run_error_code(r.error) AS error_code,
         coalesce(s.llm_calls, 0) AS llm_calls, s.llm_ms, coalesce(s.retries, 0) AS retries
    FROM agent.runs r
    JOIN agent.agents a ON a.workspace_id = r.workspace_id AND a.id = r.agent_id
    LEFT JOIN LATERAL (
      SELECT count(*) FILTER (WHERE st.kind = 'llm') AS llm_calls,
             pg_catalog.array_agg(pg_catalog.date_part('epoch', st.finished_at - st.started_at) * 1000 ORDER BY st.seq)
               FILTER (WHERE st.kind = 'llm' AND st.finished_at IS NOT NULL) AS llm_ms,
             count(*) FILTER (WHERE st.kind = 'error' AND st.status = 'retry') AS retries
        FROM agent.run_steps st
       WHERE st.workspace_id = r.workspace_id AND st.run_id = r.id AND st.kind IN ('llm', 'error')) s ON true
   WHERE (SELECT pg_catalog.pg_has_role('pg_monitor', 'USAGE'))
      OR (r.workspace_id = agent.current_workspace()
          AND (SELECT agent._may_read_workspace(agent.current_workspace())));
COMMENT ON VIEW agent.run_metrics IS
  'One row per run, without its content: ids, status, provider kind and endpoint host (the agent''s scope, else the settings, as they are now), model, times, queue wait and duration (ms), tokens, attempts, error code, LLM calls with their latencies (ms) and retries. Rows of the workspaces the querying role may read; every workspace for pg_monitor and superusers.';
