-- run_stats' rollup (issue 32): the tables of sql/src/955_rollup.sql (the
-- include above) are dumped with their rows, as sql/src/975_dump.sql marks
-- every table of a fresh install
SELECT pg_catalog.pg_extension_config_dump('agent.run_rollup', '');
SELECT pg_catalog.pg_extension_config_dump('agent.run_rollup_state', '');
