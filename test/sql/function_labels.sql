-- Every function of schema agent with its volatility, parallel label and
-- strictness (v/s/i, u/r/s, strict): a new function shows here and needs a
-- decision (sql/src/980_labels.sql, or the label at its definition), and a
-- label cannot change unnoticed.
\pset format unaligned
\pset tuples_only on
SELECT p.oid::regprocedure::text || ' ' || p.provolatile::text || p.proparallel::text
       || CASE WHEN p.proisstrict THEN ' strict' ELSE '' END
FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE n.nspname = 'agent'
ORDER BY 1;
\pset tuples_only off
-- A parallel-safe function is not volatile.
SELECT p.oid::regprocedure AS parallel_safe_but_volatile
FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE n.nspname = 'agent' AND p.proparallel = 's' AND p.provolatile = 'v'
  AND p.prolang <> (SELECT oid FROM pg_language WHERE lanname = 'c');
-- Every pinned search_path ends with pg_temp (else a temporary object could
-- shadow a name the function means), and every SECURITY DEFINER function pins one.
SELECT p.oid::regprocedure AS search_path_without_pg_temp, c AS setting
FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace, unnest(p.proconfig) c
WHERE n.nspname = 'agent' AND c LIKE 'search_path=%' AND c !~ ', ?pg_temp$';
SELECT p.oid::regprocedure AS security_definer_without_search_path
FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE n.nspname = 'agent' AND p.prosecdef
  AND NOT EXISTS (SELECT 1 FROM unnest(p.proconfig) c WHERE c LIKE 'search_path=%');
