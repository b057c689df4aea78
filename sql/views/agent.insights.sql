CREATE OR REPLACE VIEW agent.insights AS
SELECT g.workspace_id, g.agent_id, a.name AS agent_name, g.day, g.status, g.runs,
       g.tokens_in, g.tokens_out, g.tokens_in + g.tokens_out AS tokens, g.avg_duration,
       sum(g.runs) OVER w AS day_runs,
       round(sum(CASE WHEN agent._run_failed(g.status) THEN g.runs ELSE 0 END) OVER w
             / nullif(sum(CASE WHEN NOT agent._run_is_active(g.status) THEN g.runs ELSE 0 END) OVER w, 0), 4)
         AS day_failure_rate,
       g.tokens_cached
FROM (
  SELECT r.workspace_id, r.agent_id, (r.created_at AT TIME ZONE 'UTC')::date AS day, r.status,
         count(*) AS runs, sum(r.tokens_in)::bigint AS tokens_in, sum(r.tokens_out)::bigint AS tokens_out,
         avg(r.finished_at - r.started_at) AS avg_duration, sum(r.tokens_cached)::bigint AS tokens_cached
    FROM agent.runs r
   WHERE (SELECT agent._session_workspace()) IS NULL
      OR (r.workspace_id = (SELECT agent._session_workspace())
          AND (SELECT agent._may_read_workspace(agent._session_workspace())))
   GROUP BY 1, 2, 3, 4
) g
JOIN agent.agents a ON a.workspace_id = g.workspace_id AND a.id = g.agent_id
WINDOW w AS (PARTITION BY g.agent_id, g.day);
REVOKE ALL ON agent.insights FROM PUBLIC;
COMMENT ON VIEW agent.insights IS
  'Runs per agent, UTC day (of created_at) and status, for analytics: runs, own tokens (the run''s own tokens_in + tokens_out, never the rolled-up tokens_total, so that sums do not count a child twice), average duration, and the day''s run count and failure rate (failed, budget_exceeded, expired over finished runs). Scoped to the session''s workspace (pg_agents.workspace; a non-superuser session that sets none is refused, a superuser one sees every workspace), and only to one the role may read (agents_app: any; agents_reader: those bound by agent.bind_reader).';
