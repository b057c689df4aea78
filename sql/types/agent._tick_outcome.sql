CREATE TYPE agent._tick_outcome AS (
  trigger_id  bigint,
  run_id      bigint,
  agent_id    bigint,
  next_run_at timestamptz,
  ran         boolean,
  status      text,
  error       text
);
COMMENT ON TYPE agent._tick_outcome IS
  'What agent.tick did with one schedule trigger: the run made (run_id, agent_id), the next slot, whether a run was made, and the status and error of a run the queue ended at once.';
