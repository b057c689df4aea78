-- pg_agents: how the tables are laid out on a Citus cluster (docs/scaling.md,
-- "Which tables go where").  One source of truth: the procedure distributes
-- from agent.distribution_plan(), and test/pgtap/scaling_schema.sql checks
-- the catalog against it (every table of the extension exactly once, the
-- keys and foreign keys Citus accepts), without Citus.

\ir ../functions/agent.distribution_plan.sql

-- Ids unique across nodes: every node of a Citus cluster keeps its own
-- copies of the extension's identity sequences, used by the inserts that
-- run on that node, and Citus does not rebase the sequences of an
-- extension's tables (it does for other tables' bigserial columns: (group id
-- << 48) + 1 onwards).  Each node gets that same disjoint range.
\ir ../functions/agent.set_id_range.sql

-- What the extension's own objects must give up before Citus distributes
-- its tables, in one call the procedure makes first (docs/scaling.md):
-- - the read policies' workspace check is a scalar subquery (an InitPlan:
--   one probe a statement on a single node), which Citus refuses in the
--   policy of a distributed table: there the check is written per row;
-- - the history triggers of agent.triggers (versions and audit rows of a
--   direct write) cannot tell, on the node of a shard, whether the API
--   already versions the write (their hold check compares transaction ids,
--   which differ between nodes): they are disabled, the API versions and
--   audits its own writes, and a direct write to agent.triggers is not
--   versioned on Citus.
-- Idempotent; reports what it changed.
\ir ../functions/agent.prepare_distribution.sql
