-- Search (issue 33): the allowlist rewrites an agent's tsv @@ $1, LIKE $1
-- and ILIKE $1 (a generic plan's parameter, a plpgsql variable) into their
-- leakproof twins too, guarded by agent._search_arg (src/access/allowlist_ops.c).
\ir ../../functions/agent._search_arg.sql
\ir ../../functions/agent._search_arg_2.sql
