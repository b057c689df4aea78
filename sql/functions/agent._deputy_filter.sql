CREATE OR REPLACE FUNCTION agent._deputy_filter(p_agent_id bigint, p_by_user text, p_settings jsonb, p_refuse boolean)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  a         agent.agents%ROWTYPE;
  s         jsonb := p_settings;
  e         jsonb;
  v_list    jsonb;
  v_dropped jsonb := '[]';
  v_down    jsonb := '[]';
  v_want    integer;
  v_have    integer;
  v_own     integer;
  v_page    text;
  v_ws      text;
  v_live    boolean;
BEGIN
  IF p_by_user IS NULL OR s IS NULL THEN
    RETURN jsonb_build_object('settings', s, 'dropped', v_dropped, 'downgraded', v_down);
  END IF;
  v_ws := nullif(pg_catalog.current_setting('pg_agents.workspace', true), '');
  IF v_ws IS NULL THEN
    SELECT x.workspace_id INTO v_ws FROM agent.agents x WHERE x.id = p_agent_id;
  END IF;
  SELECT * INTO a FROM agent.agents x WHERE x.workspace_id = v_ws AND x.id = p_agent_id;

  IF jsonb_typeof(s -> 'access') = 'array' AND p_by_user IS DISTINCT FROM a.owner_id THEN
    v_list := '[]';
    FOR e IN SELECT x FROM jsonb_array_elements(s -> 'access') x LOOP
      v_want := CASE coalesce(e ->> 'access', 'read') WHEN 'edit' THEN 2 ELSE 1 END;
      SELECT CASE g.access WHEN 'edit' THEN 2 ELSE 1 END INTO v_have
        FROM agent.access g
       WHERE g.workspace_id = a.workspace_id AND g.agent_id = p_agent_id AND g.resource_type = e ->> 'resource_type'
         AND g.resource_id = e ->> 'resource_id';
      v_have := coalesce(v_have, 0);
      IF v_want > v_have THEN
        IF NOT agent._user_reads(p_agent_id, p_by_user, e ->> 'resource_type', e ->> 'resource_id') THEN
          v_own := 0;
        ELSIF v_want = 2 AND NOT agent._user_reads(p_agent_id, p_by_user, e ->> 'resource_type',
                                                   e ->> 'resource_id', 'edit') THEN
          v_own := 1;
        ELSE
          v_own := v_want;
        END IF;
      ELSE
        v_own := v_want;
      END IF;
      IF v_own >= v_want THEN
        v_list := v_list || e;
      ELSIF p_refuse THEN
        RAISE EXCEPTION 'user "%" cannot % % "%"', p_by_user, CASE v_want WHEN 2 THEN 'edit' ELSE 'read' END,
              e ->> 'resource_type', e ->> 'resource_id'
          USING ERRCODE = 'insufficient_privilege',
                DETAIL = 'A user grants an agent only what they may read (for edit: edit) themselves.',
                HINT = 'Grants the agent already holds are kept; only a new grant, or read raised to edit, is checked.';
      ELSIF greatest(v_have, v_own) = 0 THEN
        v_dropped := v_dropped || jsonb_build_object('kind', 'access', 'resource_type', e ->> 'resource_type',
                                                     'resource_id', e ->> 'resource_id',
                                                     'access', coalesce(e ->> 'access', 'read'),
                                                     'reason', 'no_read_access');
      ELSE
        v_list := v_list || jsonb_set(e, '{access}', '"read"');
        v_down := v_down || jsonb_build_object('kind', 'access', 'resource_type', e ->> 'resource_type',
                                               'resource_id', e ->> 'resource_id', 'from', 'edit', 'to', 'read',
                                               'reason', 'no_edit_access');
      END IF;
    END LOOP;
    s := jsonb_set(s, '{access}', v_list);
  END IF;

  v_page := s ->> 'instruction_page_id';
  IF v_page IS NOT NULL AND v_page IS DISTINCT FROM a.instruction_page_id
     AND NOT agent._user_reads(p_agent_id, p_by_user, 'page', v_page) THEN
    IF p_refuse THEN
      RAISE EXCEPTION 'user "%" cannot read page "%"', p_by_user, v_page
        USING ERRCODE = 'insufficient_privilege',
              DETAIL = 'An instruction page is set only by a user who can read it.';
    END IF;
    s := s - 'instruction_page_id';
    v_dropped := v_dropped || jsonb_build_object('kind', 'instruction_page', 'resource_type', 'page',
                                                 'resource_id', v_page, 'reason', 'no_read_access');
  END IF;

  IF jsonb_typeof(s -> 'delegation') = 'array' THEN
    v_list := '[]';
    FOR e IN SELECT x FROM jsonb_array_elements(s -> 'delegation') x LOOP
      -- an unknown, deleted or other workspace's agent is kept here, so that
      -- agent._check_delegation refuses it as not existing (42704)
      -- the lookup apart from the level check: a function that queries
      -- inside a routed query would run on the shard's node under Citus
      v_live := jsonb_typeof(e) = 'number'
                AND EXISTS (SELECT 1 FROM agent.agents x
                             WHERE x.workspace_id = a.workspace_id AND x.id = (e #>> '{}')::numeric
                               AND x.deleted_at IS NULL);
      IF coalesce(a.delegation, '[]') @> jsonb_build_array(e)
         OR NOT v_live
         OR agent._level_rank(agent._user_level(p_by_user, (e #>> '{}')::bigint)) >= 1 THEN
        v_list := v_list || e;
      ELSIF p_refuse THEN
        RAISE EXCEPTION 'user "%" cannot delegate to agent %', p_by_user, e #>> '{}'
          USING ERRCODE = 'insufficient_privilege',
                DETAIL = 'A user adds to the delegable agents only agents they may use themselves.';
      ELSE
        v_dropped := v_dropped || jsonb_build_object('kind', 'delegation', 'agent_id', e, 'reason', 'no_access');
      END IF;
    END LOOP;
    s := jsonb_set(s, '{delegation}', v_list);
  END IF;

  RETURN jsonb_build_object('settings', s, 'dropped', v_dropped, 'downgraded', v_down);
END
$$;
COMMENT ON FUNCTION agent._deputy_filter(bigint, text, jsonb, boolean) IS
  'Internal: the deputy rule. Settings keep what the agent already holds; a new or raised grant (unless by_user is the owner, whose ACL bounds the agent anyway), a new instruction page or a new delegable agent needs by_user''s own access: 42501 (p_refuse) or left out and reported. Returns {settings, dropped, downgraded}; by_user NULL (application call): unchecked.';
