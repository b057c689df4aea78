CREATE OR REPLACE FUNCTION agent.add_usage(run_id bigint, tokens_in int, tokens_out int, model text DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  r         agent.runs%ROWTYPE;
  v_t       bigint;
  v_left    bigint;
  v_cur     bigint;
  v_n       integer := 0;
  v_release bigint := 0;
  v_parent  bigint;
  v_active  boolean;
  v_total   bigint;
  v_reserved bigint;
  v_budget  bigint;
BEGIN
  IF add_usage.tokens_in IS NULL OR add_usage.tokens_out IS NULL
     OR add_usage.tokens_in < 0 OR add_usage.tokens_out < 0 THEN
    RAISE EXCEPTION 'token counts must be non-negative'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  r := agent._lock_run(add_usage.run_id);
  v_t := add_usage.tokens_in::bigint + add_usage.tokens_out;
  -- walk up the chain (the tree is locked), one indexed UPDATE per run: every
  -- run on it adds the tokens to tokens_total; a parent's reservation for its
  -- active child on the chain shrinks by what the child used of its budget
  -- (at most 16 ancestors)
  v_cur := r.id;
  LOOP
    UPDATE agent.runs x
       SET tokens_total = x.tokens_total + v_t,
           tokens_reserved = greatest(0, x.tokens_reserved - v_release),
           tokens_in = x.tokens_in + CASE WHEN v_n = 0 THEN add_usage.tokens_in ELSE 0 END,
           tokens_out = x.tokens_out + CASE WHEN v_n = 0 THEN add_usage.tokens_out ELSE 0 END,
           model = CASE WHEN v_n = 0 THEN coalesce(add_usage.model, x.model) ELSE x.model END
      FROM agent.agents a
     WHERE x.workspace_id = r.workspace_id AND x.id = v_cur AND a.workspace_id = r.workspace_id AND a.id = x.agent_id
    RETURNING x.parent_run_id, agent._run_is_active(x.status), x.tokens_total, x.tokens_reserved,
              coalesce(x.token_budget, a.default_token_budget)
      INTO v_parent, v_active, v_total, v_reserved, v_budget;
    EXIT WHEN NOT FOUND;
    IF v_n = 0 THEN
      v_left := v_budget - v_total - v_reserved;
    END IF;
    EXIT WHEN v_parent IS NULL OR v_n >= 16;
    v_release := CASE WHEN v_active THEN least(v_t, greatest(0, v_budget - (v_total - v_t))) ELSE 0 END;
    v_cur := v_parent;
    v_n := v_n + 1;
  END LOOP;
  RETURN v_left;
END
$$;
