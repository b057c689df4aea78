CREATE OR REPLACE FUNCTION agent.restore_version(version_id bigint, by_user text)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET pg_agents.acting_user = ''
AS $$
#variable_conflict use_column
DECLARE
  v       agent.versions%ROWTYPE;
  a       agent.agents%ROWTYPE;
  v_prev  jsonb;
  v_ver   bigint;
  v_filt  jsonb;
  v_trig  jsonb;
  v_left  jsonb;
  v_note  text;
  v_parts text[] := '{}';
  v_ws    text := agent._session_workspace();
BEGIN
  -- the audit rows of this call name by_user as actor (docs/audit.md)
  PERFORM pg_catalog.set_config('pg_agents.acting_user', coalesce(restore_version.by_user, ''), true);
  -- the session's workspace only (a session bound to none: the version's own)
  IF v_ws IS NULL THEN
    SELECT x.workspace_id INTO v_ws FROM agent.versions x WHERE x.id = version_id;
  END IF;
  SELECT * INTO v FROM agent.versions x WHERE x.workspace_id = v_ws AND x.id = version_id;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'version % does not exist', coalesce(version_id::text, 'NULL') USING ERRCODE = 'undefined_object';
  END IF;
  a := agent._agent_named(v.agent_id, by_user, 'edit_settings');
  v_prev := agent._snapshot(a.id);
  -- The deputy rule: what the snapshot would grant anew (a grant the agent
  -- does not hold now, or holds at read only; an instruction page; a
  -- delegable agent) is restored only as far as by_user's own access goes;
  -- the rest is left out and reported, never restored silently.
  v_filt := agent._deputy_filter(a.id, by_user, v.snapshot - 'triggers', false);
  -- one version and one audit row for the whole restore: the trigger writes
  -- below are not versioned one by one
  PERFORM agent._history_hold(a.id, true);
  PERFORM agent._apply_settings(a.id, v_filt -> 'settings', by_user);
  v_trig := agent._restore_triggers(a.id, coalesce(v.snapshot -> 'triggers', '[]'), by_user);
  PERFORM agent._history_hold(a.id, false);

  v_left := (v_filt -> 'dropped') || (v_trig -> 'dropped');
  IF jsonb_array_length(v_trig -> 'recreated') > 0 THEN
    v_parts := v_parts || format('%s recreated', jsonb_array_length(v_trig -> 'recreated'));
  END IF;
  IF jsonb_array_length(v_trig -> 'updated') > 0 THEN
    v_parts := v_parts || format('%s updated', jsonb_array_length(v_trig -> 'updated'));
  END IF;
  IF jsonb_array_length(v_trig -> 'disabled') > 0 THEN
    v_parts := v_parts || format('%s disabled', jsonb_array_length(v_trig -> 'disabled'));
  END IF;
  v_note := format('restored version %s', v.version);
  IF cardinality(v_parts) > 0 THEN
    v_note := v_note || '; triggers ' || array_to_string(v_parts, ', ');
  END IF;
  IF jsonb_array_length(v_left) > 0 THEN
    v_note := v_note || '; left out: ' || agent._report_items(v_left);
  END IF;
  IF jsonb_array_length(v_filt -> 'downgraded') > 0 THEN
    v_note := v_note || '; read only: ' || agent._report_items(v_filt -> 'downgraded');
  END IF;
  v_ver := agent._write_version(a.id, by_user, v_note, v_prev);
  IF jsonb_array_length(v_left) > 0 OR jsonb_array_length(v_filt -> 'downgraded') > 0 THEN
    RAISE NOTICE 'restoring version % of agent % left out what user "%" cannot read', v.version, a.id, by_user
      USING DETAIL = concat_ws(' ',
              CASE WHEN jsonb_array_length(v_left) > 0 THEN 'Left out: ' || agent._report_items(v_left) || '.' END,
              CASE WHEN jsonb_array_length(v_filt -> 'downgraded') > 0
                   THEN 'Restored as read only: ' || agent._report_items(v_filt -> 'downgraded') || '.' END),
            HINT = 'The version note and the audit row (agent.restore_version) list them; a user who can read them may grant them again.';
  END IF;
  PERFORM agent._audit_event('agent.restore_version', 'success', 'agent', a.id::text, a.workspace_id, a.owner_id,
                             jsonb_build_object('restored_version', v.version, 'version_id', v_ver, 'by_user', by_user,
                                                'triggers', v_trig - 'dropped', 'left_out', v_left,
                                                'downgraded', v_filt -> 'downgraded'),
                             format('%s restored agent %s to version %s%s', by_user, a.id, v.version,
                                    CASE WHEN jsonb_array_length(v_left) > 0
                                         THEN format(' (%s left out)', jsonb_array_length(v_left)) ELSE '' END));
  RETURN v_ver;
END
$$;
