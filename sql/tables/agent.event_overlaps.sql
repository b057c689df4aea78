CREATE TABLE agent.event_overlaps (
    workspace_id   text NOT NULL,
    trigger_id     bigint NOT NULL,
    agent_id       bigint NOT NULL,
    automation     text NOT NULL,
    deduplicated   bigint NOT NULL DEFAULT 0,
    first_at       timestamptz NOT NULL DEFAULT now(),
    last_at        timestamptz NOT NULL DEFAULT now(),
    last_event     text,
    last_resource_type text,
    last_resource_id   text,
    last_run_id    bigint,
    PRIMARY KEY (workspace_id, trigger_id, automation),
    FOREIGN KEY (workspace_id, trigger_id) REFERENCES agent.triggers (workspace_id, id) ON DELETE CASCADE
);
CREATE INDEX event_overlaps_agent_idx ON agent.event_overlaps (agent_id);
COMMENT ON TABLE agent.event_overlaps IS
  'Launches made once although an application automation (agent.fire_event(..., automation => label)) and a trigger both launched the agent on the same event within pg_agents.dedup_window: one row per trigger and automation, with the count.';
COMMENT ON COLUMN agent.event_overlaps.workspace_id IS 'Workspace of the trigger.';
COMMENT ON COLUMN agent.event_overlaps.trigger_id IS 'Trigger that matched both launches.';
COMMENT ON COLUMN agent.event_overlaps.agent_id IS 'Agent launched.';
COMMENT ON COLUMN agent.event_overlaps.automation IS 'The automation label ("" never: a launch without label is "trigger" and is counted against the automation it met).';
COMMENT ON COLUMN agent.event_overlaps.deduplicated IS 'Second launches that made no run.';
COMMENT ON COLUMN agent.event_overlaps.first_at IS 'First such launch.';
COMMENT ON COLUMN agent.event_overlaps.last_at IS 'Last such launch.';
COMMENT ON COLUMN agent.event_overlaps.last_event IS 'Event name of the last one.';
COMMENT ON COLUMN agent.event_overlaps.last_resource_type IS 'Resource type of the last one.';
COMMENT ON COLUMN agent.event_overlaps.last_resource_id IS 'Resource id of the last one.';
COMMENT ON COLUMN agent.event_overlaps.last_run_id IS 'The run that was made for the last one (the first launch''s), when known.';
