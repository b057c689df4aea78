CREATE TYPE agent._tick_slot AS (
  id          bigint,
  agent_id    bigint,
  schedule    text,
  timezone    text,
  prompt      text,
  due         timestamptz,
  created_by  text,
  live        boolean,
  ok          boolean
);
