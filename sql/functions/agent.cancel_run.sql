CREATE OR REPLACE FUNCTION agent.cancel_run(run_id bigint, by_user text) RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET pg_agents.acting_user = ''
AS $$
DECLARE
  r      agent.runs%ROWTYPE;
  v_need text;
  v_n    integer;
BEGIN
  -- the audit rows of this call name by_user as actor (docs/audit.md)
  PERFORM pg_catalog.set_config('pg_agents.acting_user', coalesce(cancel_run.by_user, ''), true);
  r := agent._lock_run(cancel_run.run_id);
  v_need := CASE WHEN r.regime = 'manual' AND r.requested_by = by_user THEN 'chat' ELSE 'edit_settings' END;
  IF NOT coalesce(agent.user_can(by_user, r.agent_id, v_need), false) THEN
    RAISE EXCEPTION 'user "%" may not cancel run %', by_user, r.id
      USING ERRCODE = 'insufficient_privilege',
            DETAIL = 'Cancelling one''s own manual run requires the chat level; any other run the edit level.';
  END IF;
  IF NOT agent._run_is_active(r.status) THEN
    RETURN 0;
  END IF;
  SELECT count(*) INTO v_n
    FROM agent.runs d
   WHERE d.workspace_id = r.workspace_id AND d.root_run_id = r.root_run_id AND agent._run_is_active(d.status)
     AND (d.id = r.id OR d.id IN (WITH RECURSIVE t(id) AS (
                                    SELECT c.id FROM agent.runs c
                                     WHERE c.workspace_id = r.workspace_id AND c.parent_run_id = r.id
                                    UNION ALL
                                    SELECT c.id FROM agent.runs c JOIN t ON c.parent_run_id = t.id
                                     WHERE c.workspace_id = r.workspace_id)
                                  SELECT t.id FROM t));
  PERFORM agent._finish_run(r.id, 'cancelled', NULL, format('cancelled by %s', by_user));
  RETURN v_n;
END
$$;

COMMENT ON FUNCTION agent.cancel_run(bigint, text) IS
  'Cancels an active run and its active descendants (one''s own manual run: chat level; otherwise edit level). Returns how many runs were cancelled (0 when it had already ended).';
