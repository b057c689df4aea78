-- agent.set_identity: SET LOCAL statements instead of set_config(), so that
-- Citus (citus.propagate_set_commands = 'local') carries them to the workers
-- (issue 24).
\ir ../../functions/agent.set_identity.sql
