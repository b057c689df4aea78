#!/usr/bin/env bash
# Semantic search through the worker (pgvector; docs/allowlist.md, "Semantic
# search").  An agent granted 5 rows among 2,000 whose nearest neighbours are
# all ungranted asks search_resources for its k nearest: it gets exactly its
# k nearest *granted* rows — never fewer because the index scan met filtered
# rows first, never an ungranted one — both on a table under the allowlist
# (RLS) and on one filtered by the tool's access check alone.  The recorded
# LLM requests never hold an ungranted row's title (the T-02 idea of
# test/t/511_rls_leak_llm.t), and the embeddings requests carry the query
# text, with the API key only when the endpoint is pg_agents.llm_url.
. "$(dirname "$0")/../fixtures/worker_lib.sh"
if [ "$(q "SELECT count(*) FROM pg_available_extensions WHERE name = 'vector'")" != 1 ]; then
    echo "1..0 # SKIP pgvector is not installed on PostgreSQL $(q "SELECT current_setting('server_version_num')::int / 10000"): semantic search is absent"
    exit 0
fi
llm_start                        # the DBA's endpoint: pg_agents.llm_url, with the key
pf=$(mktemp -u /tmp/pg_agents_llm2.XXXXXX)
python3 "$_wl_dir/llm_server.py" --port-file "$pf" >/dev/null 2>&1 & other_pid=$!
for _ in $(seq 1 100); do [ -s "$pf" ] && break; sleep 0.05; done
OTHER_PORT=$(cat "$pf"); rm -f "$pf"
OTHER="http://127.0.0.1:$OTHER_PORT/v1"      # an allowlisted agent endpoint: no key
cleanup() {
    llm_stop; kill "$other_pid" 2>/dev/null
    q "ALTER SYSTEM RESET pg_agents.llm_api_key" >/dev/null; q "ALTER SYSTEM RESET pg_agents.llm_url" >/dev/null
    q "SELECT pg_reload_conf()" >/dev/null
}
trap cleanup EXIT
llm_allow "$OTHER"
q "ALTER SYSTEM SET pg_agents.llm_api_key = 'sk-cluster-514-secret'" >/dev/null
q "ALTER SYSTEM SET pg_agents.llm_url = '$LLM_URL'" >/dev/null && q "SELECT pg_reload_conf()" >/dev/null
sleep 0.5
MARK=SECRET514
K=3

# two workspaces, an application role, a role with no grants
q "DROP ROLE IF EXISTS w514_app; DROP ROLE IF EXISTS w514_nobody;
   CREATE ROLE w514_app LOGIN IN ROLE agents_app; CREATE ROLE w514_nobody LOGIN;
   CREATE EXTENSION IF NOT EXISTS vector" >/dev/null
a=$(mk_agent "vec514a" '{"embedding_model": "emb-514"}' none '[]' 10 w514a owner514)
b=$(mk_agent "vec514b" "{\"embedding_model\": \"emb-514b\", \"llm_url\": \"$OTHER\"}" none '[]' 10 w514b owner514b)
c=$(mk_agent "vec514c" '{}' none '[]' 10 w514a owner514)          # no embedding model: full text only

# 2,000 rows in each of two tables; the query's vector is [1,0,0]; the rows
# granted to agent a (every 400th) point away from it, all the others close
# to it, so that an index scan meets 1,995 filtered rows before the first
# granted one.  pages (vec514_docs) are under the allowlist (RLS), collections (vec514_notes) only behind the
# tool's own access check.
for t in docs notes; do
    q "DROP TABLE IF EXISTS public.vec514_$t;
       CREATE TABLE public.vec514_$t (id bigint PRIMARY KEY, title text NOT NULL, body text NOT NULL, emb public.vector(3));
       INSERT INTO public.vec514_$t
         SELECT g, CASE WHEN g % 400 = 0 THEN 'Granted $t ' || g ELSE '$MARK $t ' || g END,
                'Body of ' || g,
                CASE WHEN g % 400 = 0 THEN ('[' || (g / 400) || ',' || (20 - g / 400) || ',' || (g % 7) || ']')::public.vector
                     ELSE ('[1,' || ((g % 97) / 970.0) || ',' || ((g % 13) / 1300.0) || ']')::public.vector END
           FROM generate_series(1, 2000) g;
       CREATE INDEX ON public.vec514_$t USING hnsw (emb public.vector_cosine_ops);
       ANALYZE public.vec514_$t;" >/dev/null
done
q "SELECT agent.register_resource_table('page', 'public.vec514_docs', 'id', 'title', 'body', 'emb');
   SELECT agent.enable_allowlist('public.vec514_docs', 'page', 'id');
   SELECT agent.register_resource_table('collection', 'public.vec514_notes', 'id', 'title', 'body', 'emb');
   INSERT INTO agent.resource_acl (resource_type, resource_id, principal, access)
     SELECT rt, g::text, o, 'read' FROM generate_series(1, 2000) g, (VALUES ('page'), ('collection')) t(rt),
            (VALUES ('user:owner514'), ('user:owner514b')) p(o) ON CONFLICT DO NOTHING;
   INSERT INTO agent.access (agent_id, resource_type, resource_id, access)
     SELECT $a, rt, g::text, 'read' FROM generate_series(400, 2000, 400) g, (VALUES ('page'), ('collection')) t(rt);
   INSERT INTO agent.access (agent_id, resource_type, resource_id, access)
     SELECT $b, 'collection', g::text, 'read' FROM generate_series(1, 5) g;" >/dev/null

# the registration is a superuser's: neither the application nor a role with no grants
out=$(psql -XAtq -U w514_app -c "SET pg_agents.workspace = 'w514a'" \
      -c "SELECT agent.register_resource_table('collection', 'public.vec514_notes', 'id', 'title', 'body', 'title')" 2>&1)
ok "$([[ "$out" == *"permission denied for function register_resource_table"* ]] && echo 0)" "the application cannot register an embedding column"
out=$(psql -XAtq -U w514_nobody -c "SELECT agent.register_resource_table('collection', 'public.vec514_notes', 'id', 'title', 'body', 'title')" 2>&1)
ok "$([[ "$out" == *"permission denied for function register_resource_table"* ]] && echo 0)" "nor a role with no grants"
is "$(q "SELECT string_agg(resource_type || ':' || embedding_column, ',' ORDER BY resource_type) FROM agent.resource_tables WHERE tbl::text LIKE 'vec514%'")" \
   "collection:emb,page:emb" "both tables are registered with their embedding column"

# what an exact search over the granted rows gives (no index, as the owner)
nearest() {  # table agent
    q "SET enable_indexscan = off; SET enable_bitmapscan = off;
       SELECT string_agg(id::text, ',' ORDER BY d, id) FROM (
         SELECT t.id, t.emb <=> '[1,0,0]'::public.vector AS d FROM public.vec514_$1 t
          WHERE t.id::text IN (SELECT resource_id FROM agent.access WHERE agent_id = $2)
          ORDER BY d, t.id LIMIT $K) s" | tail -1
}
want_docs=$(nearest docs "$a"); want_notes=$(nearest notes "$a"); want_b=$(nearest notes "$b")
diag "expected: page $want_docs, collection $want_notes, agent b $want_b"
# how the tool's statement is planned for the collections (diagnostic: the HNSW scan is what iterative scans serve)
diag "$(q "SET hnsw.iterative_scan = strict_order; EXPLAIN (COSTS OFF)
  SELECT t.id FROM public.vec514_notes t WHERE agent.can_access($a, 'collection', t.id::text, 'read', 'autonomous', NULL)
  ORDER BY t.emb <=> '[1,0,0]'::public.vector LIMIT $K" | tr '\n' ' ')"

llm_embeddings '{"vectors": {"closest notes 514": [1, 0, 0], "closest docs 514": [1, 0, 0]}}'
python3 -c 'import sys,urllib.request; urllib.request.urlopen(urllib.request.Request("http://127.0.0.1:%s/_embeddings" % sys.argv[1], data=b"{\"vectors\": {\"closest notes 514\": [1, 0, 0]}}")).read()' "$OTHER_PORT"
llm_script "[[t514a]]" "[{\"tool\": \"search_resources\", \"input\": {\"query\": \"closest docs 514\", \"resource_type\": \"page\", \"limit\": $K}},
                         {\"tool\": \"search_resources\", \"input\": {\"query\": \"closest notes 514\", \"resource_type\": \"collection\", \"limit\": $K}},
                         {\"text\": \"done\"}]"
r=$(start_run "$a" '{"prompt": "Find the closest [[t514a]]"}' autonomous owner514)
is "$(wait_status "$r" "succeeded|failed" 60)" "succeeded" "agent a's run searches both tables"

results() {  # port key n: the resource ids of the n-th tool result the model was shown
    python3 -c '
import json,sys,urllib.request
rs=[r for r in json.loads(urllib.request.urlopen("http://127.0.0.1:%s/_requests" % sys.argv[1]).read())
    if r["key"]==sys.argv[2] and r["path"].endswith("/chat/completions")]
tools=[m["content"] for m in rs[-1]["body"]["messages"] if m["role"]=="tool"]
res=json.loads(tools[int(sys.argv[3])])
print(",".join(x["resource_id"] for x in res["results"]), res.get("ranking", "-"))' "$1" "$2" "$3"
}
is "$(results "$LLM_PORT" "[[t514a]]" 0)" "$want_docs semantic" \
   "pages (allowlist): exactly the $K nearest granted rows, nearest first, among 1,995 nearer ungranted ones"
is "$(results "$LLM_PORT" "[[t514a]]" 1)" "$want_notes semantic" \
   "collections (access check only, HNSW index): exactly the $K nearest granted rows as well"
is "$(python3 -c '
import json,sys,urllib.request
rs=json.loads(urllib.request.urlopen("http://127.0.0.1:%s/_requests" % sys.argv[1]).read())
print(sum(1 for r in rs if sys.argv[2] in json.dumps(r)))' "$LLM_PORT" "$MARK")" "0" \
   "no recorded request (chat or embeddings) holds an ungranted row's title"
is "$(q "SELECT count(*) FROM agent.run_steps WHERE run_id = $r AND (input::text || coalesce(output::text, '')) LIKE '%$MARK%'")" "0" \
   "no step of the run holds one"
is "$(q "SELECT string_agg(output->>'ranking', ',' ORDER BY seq) FROM agent.run_steps WHERE run_id = $r AND name = 'search_resources'")" \
   "semantic,semantic" "the steps say the searches ranked by vector similarity"

# the embeddings requests: the query text, the model, the key (pg_agents.llm_url)
emb() {  # port: one line per embeddings request: input|model|authorization
    python3 -c '
import json,sys,urllib.request
rs=json.loads(urllib.request.urlopen("http://127.0.0.1:%s/_requests" % sys.argv[1]).read())
for r in rs:
    if r["path"].endswith("/embeddings"):
        print("%s|%s|%s|%s" % (r["path"], r["body"]["input"], r["body"]["model"], r["headers"].get("authorization", "no key")))' "$1"
}
is "$(emb "$LLM_PORT" | tr '\n' ';')" \
   "/v1/embeddings|closest docs 514|emb-514|Bearer sk-cluster-514-secret;/v1/embeddings|closest notes 514|emb-514|Bearer sk-cluster-514-secret;" \
   "each search embedded its query text through <llm_url>/embeddings, with the key of pg_agents.llm_url"

# agent b, another workspace, its own (allowlisted) endpoint: its grants, no key
llm_script_other() {
    python3 - "$1" "$2" "$OTHER_PORT" <<'PY'
import json, sys, urllib.request
key, replies, port = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
urllib.request.urlopen(urllib.request.Request("http://127.0.0.1:%s/_script" % port,
    data=json.dumps({"key": key, "replies": replies}).encode())).read()
PY
}
llm_script_other "[[t514b]]" "[{\"tool\": \"search_resources\", \"input\": {\"query\": \"closest notes 514\", \"limit\": $K}}, {\"text\": \"done\"}]"
r=$(start_run "$b" '{"prompt": "Find the closest [[t514b]]"}' autonomous owner514b)
is "$(wait_status "$r" "succeeded|failed" 60)" "succeeded" "agent b's run (workspace w514b) searches"
is "$(results "$OTHER_PORT" "[[t514b]]" 0)" "$want_b semantic" "agent b gets its own $K nearest granted rows, none of agent a's"
is "$(emb "$OTHER_PORT" | tr '\n' ';')" "/v1/embeddings|closest notes 514|emb-514b|no key;" \
   "an agent's own endpoint gets the embeddings request without the key"
is "$(emb "$LLM_PORT" | wc -l)" "2" "and pg_agents.llm_url got nothing of agent b"

# agent c: no embedding model, so full text (which finds nothing for these words) and no embeddings request
llm_script "[[t514c]]" "[{\"tool\": \"search_resources\", \"input\": {\"query\": \"closest notes 514\", \"resource_type\": \"collection\"}}, {\"text\": \"done\"}]"
r=$(start_run "$c" '{"prompt": "Find [[t514c]]"}' autonomous owner514)
is "$(wait_status "$r" "succeeded|failed" 60)" "succeeded" "agent c's run searches without an embedding model"
is "$(results "$LLM_PORT" "[[t514c]]" 0)" " -" "full-text ranking: no vector search, nothing matches these words"
is "$(emb "$LLM_PORT" | wc -l)" "2" "no embeddings request without an embedding model"

# the embeddings endpoint fails: the search says so and ranks by full text
llm_embeddings '{"status": 503}'
llm_script "[[t514d]]" "[{\"tool\": \"search_resources\", \"input\": {\"query\": \"Granted\", \"resource_type\": \"collection\", \"limit\": $K}}, {\"text\": \"done\"}]"
r=$(start_run "$a" '{"prompt": "Find [[t514d]]"}' autonomous owner514)
is "$(wait_status "$r" "succeeded|failed" 60)" "succeeded" "agent a's run searches while the embeddings endpoint fails"
is "$(q "SELECT output->>'semantic_search_unavailable' FROM agent.run_steps WHERE run_id = $r AND name = 'search_resources'")" \
   "embeddings endpoint returned HTTP 503" "the step says semantic search was unavailable, and why"
want_ft=$(q "SELECT string_agg(id::text, ',' ORDER BY id::text) FROM (SELECT id FROM public.vec514_notes
             WHERE to_tsvector('simple', title || ' ' || body) @@ plainto_tsquery('simple', 'Granted')
               AND id::text IN (SELECT resource_id FROM agent.access WHERE agent_id = $a) ORDER BY id::text LIMIT $K) s")
is "$(results "$LLM_PORT" "[[t514d]]" 0)" "$want_ft -" \
   "the search fell back to full text: the first $K granted rows matching the word (equal ranks: by id), never an ungranted one"
llm_embeddings '{"status": 200}'

q "SELECT agent.disable_allowlist('public.vec514_docs'); DROP TABLE public.vec514_docs, public.vec514_notes" >/dev/null
done_testing
