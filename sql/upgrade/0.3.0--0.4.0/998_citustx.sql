-- citustx (issue 35, item 2): on Citus, agent.fire_event in a transaction
-- block dispatches through agent._fire_event_in, a distributed function
-- delegated to the workspace's node over the caller's own connection, so
-- that the event and its runs commit with the application's writes of the
-- same workspace (docs/scaling.md).  The grant is in 990_privileges.sql.
\ir ../../functions/agent._fire_event_in.sql
