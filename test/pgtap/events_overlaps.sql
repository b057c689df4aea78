-- Events, issue 18: overlapping launches, per role and workspace.
-- agent.trigger_overlaps states the overlaps of one agent's triggers (an
-- agent of another workspace does not exist); fire_event's automation label
-- makes one run when an automation and a trigger launch the same event, and
-- agent.event_overlaps counts the other launch; workspaces never meet.
-- Roles: the application (agents_app), a role with no grants, an agent
-- session (agents_tool with an agent identity).
BEGIN;
SELECT plan(24);

SET LOCAL pg_agents.actor = '';
SET LOCAL pg_agents.workspace = '';
SET LOCAL pg_agents.dedup_window = 600;
SET LOCAL client_min_messages = error;  -- the WARNINGs of overlapping triggers are expected here
CREATE ROLE tap_ov_app NOLOGIN IN ROLE agents_app;
CREATE ROLE tap_ov_nobody NOLOGIN;

INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES
  (4191001, 'ws-ov-a', 'ov-o', 'a'), (4191002, 'ws-ov-b', 'ov-o', 'b');
INSERT INTO agent.triggers (id, agent_id, kind, event_name, resource_type, resource_id) VALUES
  (4191101, 4191001, 'event', 'ov.row_added', 'collection', NULL),
  (4191102, 4191001, 'event', 'ov.row_added', 'collection', 'public.rows'),
  (4191201, 4191002, 'event', 'ov.row_added', 'collection', NULL),
  (4191202, 4191002, 'event', 'ov.row_added', NULL, NULL);
CREATE FUNCTION pg_temp.fire(p_ws text, p_row text, p_auto text DEFAULT NULL) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  PERFORM set_config('pg_agents.workspace', p_ws, true);
  SELECT count(*) INTO n FROM agent.fire_event('ov.row_added', 'collection', 'public.rows',
                                               jsonb_build_object('row_id', p_row, 'via', coalesce(p_auto, 'watcher')),
                                               NULL, NULL, p_auto);
  RETURN n;
END $$;
GRANT EXECUTE ON FUNCTION pg_temp.fire(text, text, text) TO PUBLIC;

-- the application
SET LOCAL ROLE tap_ov_app;
SET LOCAL pg_agents.workspace = 'ws-ov-a';
SELECT is((SELECT count(*) FROM agent.trigger_overlaps(4191001)), 2::bigint, 'the application reads the overlaps of its agent');
SELECT is((SELECT overlap FROM agent.trigger_overlaps(4191001) WHERE trigger_id = 4191101),
          'both match event ov.row_added on resource_type collection id public.rows; neither has a filter', 'stated');
SELECT throws_ok('SELECT * FROM agent.trigger_overlaps(4191002)', '42704', 'agent 4191002 does not exist',
                 'an agent of another workspace does not exist');
SELECT is((SELECT count(*) FROM agent.trigger_overlaps(4191001, 'ov-o')), 2::bigint, 'the owner may see them');
SELECT throws_ok($$SELECT * FROM agent.trigger_overlaps(4191001, 'ov-stranger')$$, '42501', NULL,
                 'a user without view_settings may not');
SELECT throws_ok('SELECT * FROM agent.trigger_overlaps(4199999)', '42704', NULL, 'an unknown agent');

-- an automation and a trigger: one run per agent, the other launch counted
SELECT is(pg_temp.fire('ws-ov-a', 'r1'), 2::bigint, 'the watcher''s event: one run per trigger of a (two overlapping triggers)');
SELECT is(pg_temp.fire('ws-ov-a', 'r1', 'flow-1'), 0::bigint, 'the automation on the same row: no second run');
SELECT is(pg_temp.fire('ws-ov-a', 'r2', 'flow-1'), 2::bigint, 'the automation on another row: its runs');
SELECT is((SELECT count(*) FROM agent.runs WHERE agent_id = 4191001 AND input ->> 'automation' = 'flow-1'), 2::bigint,
          'the runs an automation made say so in their input');
SELECT is(pg_temp.fire('ws-ov-a', 'r2'), 0::bigint, 'then the watcher''s event on that row: no second run');
SELECT results_eq($$SELECT trigger_id, automation, deduplicated FROM agent.event_overlaps WHERE agent_id = 4191001 ORDER BY 1$$,
                  $$VALUES (4191101::bigint, 'flow-1'::text, 2::bigint), (4191102::bigint, 'flow-1'::text, 2::bigint)$$,
                  'the application reads the count per trigger and automation');
SELECT is((SELECT count(*) FROM agent.trigger_overlaps(4191001) WHERE automation = 'flow-1'), 2::bigint,
          'and trigger_overlaps reports them');
SELECT is((SELECT count(*) FROM agent.runs WHERE agent_id = 4191001 AND input -> 'also_started_by' IS NOT NULL), 4::bigint,
          'each kept run (still queued) notes the other launcher');
-- workspace b: a's launches do not dedup b's
SELECT is(pg_temp.fire('ws-ov-b', 'r1', 'flow-1'), 2::bigint, 'the same automation in workspace b makes b''s runs');
SELECT is((SELECT count(*) FROM agent.event_overlaps WHERE agent_id = 4191002), 0::bigint, 'nothing counted for b');

-- an agent session: identity chooses rules, never rights
SET LOCAL pg_agents.workspace = 'ws-ov-a';
SET LOCAL pg_agents.actor = 'agent:4191001';
SELECT throws_ok('SELECT * FROM agent.trigger_overlaps(4191002)', '42704', NULL, 'claiming to be an agent opens no other workspace');
RESET ROLE;
SET LOCAL ROLE agents_tool;
SELECT throws_ok('SELECT * FROM agent.trigger_overlaps(4191001)', '42501', NULL, 'the tool role may not list overlaps');
SELECT throws_ok('SELECT count(*) FROM agent.event_overlaps', '42501', NULL, 'nor read the counts');
-- a role with no grants
RESET ROLE;
SET LOCAL pg_agents.actor = '';
SET LOCAL ROLE tap_ov_nobody;
SELECT throws_ok('SELECT * FROM agent.trigger_overlaps(4191001)', '42501', NULL, 'a role with no grants may not list overlaps');
SELECT throws_ok('SELECT count(*) FROM agent.event_overlaps', '42501', NULL, 'nor read the counts');
SELECT throws_ok($$SELECT agent.fire_event('ov.row_added', 'collection', 'x', '{}', NULL, NULL, 'flow-1')$$, '42501', NULL,
                 'nor fire an event as an automation');
RESET ROLE;

-- no dedup window: every launch makes its run
SET LOCAL pg_agents.dedup_window = 0;
SELECT is(pg_temp.fire('ws-ov-a', 'r3'), 2::bigint, 'dedup_window 0: the event');
SELECT is(pg_temp.fire('ws-ov-a', 'r3', 'flow-1'), 2::bigint, 'and the automation both make runs');

SELECT * FROM finish();
ROLLBACK;
