-- issue 30 (chan): agent_run_steps carries no step name; run_stream_text in the distribution plan.
-- (agent.run_stream_text and agent.run_deltas: 972_chan.include, sql/src/820_deltas.sql)

\ir ../../functions/agent._teams_step_changed.sql

\ir ../../functions/agent._teams_steps_inserted.sql

\ir ../../functions/agent.distribution_plan.sql
