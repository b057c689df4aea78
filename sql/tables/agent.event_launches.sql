CREATE TABLE agent.event_launches (
    workspace_id text NOT NULL,
    trigger_id   bigint NOT NULL,
    launch_key   text NOT NULL,
    source       text NOT NULL,
    seen_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workspace_id, trigger_id, launch_key)
);
CREATE INDEX event_launches_seen_idx ON agent.event_launches (seen_at);
COMMENT ON TABLE agent.event_launches IS
  'Who last launched a run through a trigger for an event (name, resource, payload row_id), kept for pg_agents.dedup_window: an automation and a trigger launching the same event in the window make one run.';
COMMENT ON COLUMN agent.event_launches.workspace_id IS 'Workspace of the trigger.';
COMMENT ON COLUMN agent.event_launches.trigger_id IS 'Trigger the launch went through.';
COMMENT ON COLUMN agent.event_launches.launch_key IS 'md5 of the event name, resource type, resource id and payload row_id.';
COMMENT ON COLUMN agent.event_launches.source IS '"trigger" (an event without automation label) or "automation:<label>".';
COMMENT ON COLUMN agent.event_launches.seen_at IS 'When the run was launched; the record expires pg_agents.dedup_window later (agent._events_cleanup).';
