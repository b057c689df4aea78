#!/usr/bin/env bash
# Attack (issue 14 #3): the worker's own SPI hijacked through search_path.
# The worker connects as the bootstrap superuser; a database owner (not a
# superuser) who owns the public schema defines functions there that shadow
# the ones the worker's SQL calls (to_jsonb(agent.resource_tables),
# quote_ident, quote_literal, now, clock_timestamp, max, jsonb_agg, the
# full-text functions...) and puts public first in the database's
# search_path.  Each shadow records a marker row and tries to make its owner
# a superuser.  Runs through the worker using read_resource,
# search_resources, write_resource and agent_teams must call none of them.
. "$(dirname "$0")/../fixtures/worker_lib.sh"
llm_start
me=$(q "SELECT current_user")
db=$(q "SELECT current_database()")
# this test's own sessions do not resolve through public
export PGOPTIONS="-c client_min_messages=warning -c search_path=pg_catalog"
restart_worker() {
    local old new i
    old=$(q "SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_agents worker'")
    q "SELECT pg_terminate_backend($old)" >/dev/null
    for i in $(seq 1 200); do
        new=$(q "SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_agents worker'")
        [ -n "$new" ] && [ "$new" != "$old" ] && break
        sleep 0.05
    done
    sleep 1.5   # it looks for the extension, then claims
}
cleanup() {
    llm_stop
    psql -XAtq -c "ALTER DATABASE \"$db\" RESET ALL" >/dev/null 2>&1
    psql -XAtq -c "ALTER DATABASE \"$db\" OWNER TO \"$me\"" >/dev/null 2>&1
    psql -XAtq -c "DROP SCHEMA IF EXISTS w621_evil CASCADE" >/dev/null 2>&1
    for f in "to_jsonb(agent.resource_tables)" "quote_ident(text)" "quote_literal(text)" "now()" "clock_timestamp()" \
             "jsonb_array_length(jsonb)" "to_tsvector(regconfig, text)" "plainto_tsquery(regconfig, text)" \
             "ts_rank(tsvector, tsquery)" "left(text, integer)" "format(text, VARIADIC \"any\")" "w621_step(jsonb, jsonb)" "w621_max(integer, integer)"; do
        psql -XAtq -c "DROP FUNCTION IF EXISTS public.$f CASCADE" >/dev/null 2>&1
    done
    psql -XAtq -c "DROP AGGREGATE IF EXISTS public.jsonb_agg(jsonb); DROP AGGREGATE IF EXISTS public.max(integer)" >/dev/null 2>&1
    psql -XAtq -c "DROP TABLE IF EXISTS public.w621_marker, public.w621_pages" >/dev/null 2>&1
    psql -XAtq -c "DROP ROLE IF EXISTS w621_dbo; DROP ROLE IF EXISTS w621_app; DROP ROLE IF EXISTS w621_nobody" >/dev/null 2>&1
    restart_worker
}
trap cleanup EXIT

q "DROP ROLE IF EXISTS w621_dbo; DROP ROLE IF EXISTS w621_app; DROP ROLE IF EXISTS w621_nobody;
   CREATE ROLE w621_dbo LOGIN; CREATE ROLE w621_app LOGIN IN ROLE agents_app; CREATE ROLE w621_nobody LOGIN;
   ALTER DATABASE \"$db\" OWNER TO w621_dbo" >/dev/null
is "$(q "SELECT rolsuper FROM pg_roles WHERE rolname = 'w621_dbo'")" "f" "the database owner is not a superuser"

# the application's table, registered as a resource
q "CREATE TABLE public.w621_pages (id text PRIMARY KEY, title text, body text);
   INSERT INTO public.w621_pages VALUES ('p621', 'Boiler', 'The boiler runs at 60 degrees.'),
                                        ('p621b', 'Pump', 'The pump runs quietly.');
   SELECT agent.register_resource_table('page', 'public.w621_pages', 'id', 'title', 'body');
   INSERT INTO agent.resource_acl (resource_type, resource_id, principal, access)
     VALUES ('page', 'p621', 'user:owner621', 'edit'), ('page', 'p621b', 'user:owner621', 'edit')
     ON CONFLICT DO NOTHING;" >/dev/null

# the database owner's trap, as the database owner
dbo() { psql -XAtq -U w621_dbo -v ON_ERROR_STOP=1 -c "$1" 2>&1; }
dbo "CREATE TABLE public.w621_marker (fn text, by_role text, pid integer);
     GRANT INSERT ON public.w621_marker TO PUBLIC;
     CREATE FUNCTION public.w621_mark(p_fn text) RETURNS void LANGUAGE plpgsql AS \$f\$
     BEGIN
       INSERT INTO public.w621_marker VALUES (p_fn, pg_catalog.current_setting('is_superuser'), pg_catalog.pg_backend_pid());
       BEGIN EXECUTE 'ALTER ROLE w621_dbo SUPERUSER'; EXCEPTION WHEN OTHERS THEN NULL; END;
     END \$f\$;
     GRANT EXECUTE ON FUNCTION public.w621_mark(text) TO PUBLIC;" >/dev/null
made=0
shadow() {  # signature, return type, pg_catalog call
    if out=$(dbo "CREATE FUNCTION public.$1 RETURNS $2 LANGUAGE plpgsql AS \$f\$
                  BEGIN PERFORM public.w621_mark('$1'); RETURN $3; END \$f\$"); then made=$((made+1)); else diag "not created: $1: $out"; fi
}
shadow "to_jsonb(r agent.resource_tables)" jsonb "pg_catalog.to_jsonb(r)"
shadow "quote_ident(t text)" text "pg_catalog.quote_ident(t)"
shadow "quote_literal(t text)" text "pg_catalog.quote_literal(t)"
shadow "now()" timestamptz "pg_catalog.now()"
shadow "clock_timestamp()" timestamptz "pg_catalog.clock_timestamp()"
shadow "jsonb_array_length(j jsonb)" integer "pg_catalog.jsonb_array_length(j)"
shadow "to_tsvector(c regconfig, t text)" tsvector "pg_catalog.to_tsvector(c, t)"
shadow "plainto_tsquery(c regconfig, t text)" tsquery "pg_catalog.plainto_tsquery(c, t)"
shadow "ts_rank(v tsvector, q tsquery)" real "pg_catalog.ts_rank(v, q)"
shadow "left(t text, n integer)" text "pg_catalog.left(t, n)"
shadow "w621_step(s jsonb, v jsonb)" jsonb "s OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_array(v)"
shadow "w621_max(a integer, b integer)" integer "pg_catalog.greatest(a, b)"
dbo "CREATE AGGREGATE public.jsonb_agg(jsonb) (sfunc = public.w621_step, stype = jsonb, initcond = '[]');
     CREATE AGGREGATE public.max(integer) (sfunc = public.w621_max, stype = integer)" >/dev/null && made=$((made+2))
is "$made" 14 "the database owner created 14 shadowing functions and aggregates in public"
dbo "ALTER DATABASE \"$db\" SET search_path = public, pg_catalog" >/dev/null
# and the identity settings, so that what the worker writes is attributed to someone else
dbo "ALTER DATABASE \"$db\" SET pg_agents.actor = 'user:mallory621'" >/dev/null
dbo "ALTER DATABASE \"$db\" SET pg_agents.workspace = 'w621x'" >/dev/null
is "$(PGOPTIONS= psql -XAtq -U w621_dbo -c "SHOW search_path")" "public, pg_catalog" "public comes first in the database's search_path"
is "$(PGOPTIONS= psql -XAtq -U w621_dbo -c "SELECT pg_catalog.count(*) FROM (SELECT quote_ident('x')) s; SELECT pg_catalog.count(*) FROM public.w621_marker")" $'1\n1' \
   "(the trap works: a session of the database resolves quote_ident to it)"
dbo "TRUNCATE public.w621_marker" >/dev/null
restart_worker      # the worker connects again, with the database's settings

# an agent of workspace w621 reads, searches, writes and lists its child runs
a=$(mk_agent "path621" '{}' none '[1]' 10 w621 owner621)
q "INSERT INTO agent.access (agent_id, resource_type, resource_id, access)
   VALUES ($a, 'page', 'p621', 'edit'), ($a, 'page', 'p621b', 'read')" >/dev/null
llm_script "[[t621]]" '[{"tool": "read_resource", "input": {"resource_type": "page", "resource_id": "p621"}},
                        {"tool": "search_resources", "input": {"query": "pump"}},
                        {"tool": "write_resource", "input": {"resource_type": "page", "resource_id": "p621", "body": "The boiler runs at 55 degrees."}},
                        {"tool": "agent_teams", "input": {"action": "list"}},
                        {"text": "all done"}]'
r=$(start_run "$a" '{"prompt": "Check the boiler [[t621]]"}' autonomous owner621)
is "$(wait_status "$r" "succeeded|failed" 60)" "succeeded" "the run succeeds"
reqs=$(llm_requests)
is "$(python3 -c '
import json,sys; rs=[r for r in json.loads(sys.argv[1]) if r["key"]=="[[t621]]"]
msgs=[m["content"] for m in rs[-1]["body"]["messages"] if m["role"]=="tool"]
print(len(msgs), "60 degrees" in msgs[0], "p621b" in msgs[1], "\"updated\":1" in msgs[2], "\"children\":[]" in msgs[3])' "$reqs")" \
   "4 True True True True" "read, search, write and agent_teams answered normally"
is "$(q "SELECT body FROM public.w621_pages WHERE id = 'p621'")" "The boiler runs at 55 degrees." "the write landed"
is "$(q "SELECT coalesce(string_agg(DISTINCT fn || ' (superuser ' || by_role || ')', ', '), 'none') FROM public.w621_marker")" "none" \
   "none of the shadowing functions ran"
is "$(q "SELECT rolsuper FROM pg_roles WHERE rolname = 'w621_dbo'")" "f" "the database owner did not become a superuser"
is "$(q "SELECT count(*) > 0 FROM agent.audit_log WHERE target_type = 'run' AND target_id = '$r'")" "t" \
   "(the worker audited the run's bookkeeping)"
is "$(q "SELECT count(*) FROM agent.audit_log WHERE (run_id = $r OR target_type = 'run' AND target_id = '$r') AND actor_id = 'mallory621'")" 0 \
   "none of the run's audit rows is attributed to the database's pg_agents.actor"
done_testing
