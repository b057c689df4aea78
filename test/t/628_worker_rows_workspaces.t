#!/usr/bin/env bash
# Security (issues 30 and 31): the workspace of a row of a collection.  Two
# workspaces each have a collection with the same id 'tickets' (the
# application's ids are per workspace), their rows in one shared table with a
# workspace_id column.  Agent A of w6 is granted edit on 'tickets' (its
# owner's ACL in w6 allows it), allowlist on.  Before the fix, a row was
# matched to its collection by id alone: A read, searched, updated and
# commented the row of the other workspace's 'tickets'.  With the table
# registered with workspace_column, every row tool of A's run sees only the
# rows of w6, can_access/explain_access answer other_workspace for the other
# workspace's row, and add_row/add_comment write the run's workspace (a
# model-given workspace is refused as a non-writable column).  The readable
# set and the allowlist keep only w6's rows.
. "$(dirname "$0")/../fixtures/worker_lib.sh"
llm_start

q "DROP TABLE IF EXISTS public.w635_rows, public.w635_comments;
   CREATE TABLE public.w635_rows (id text PRIMARY KEY DEFAULT 'n' || pg_catalog.md5(pg_catalog.random()::text),
     workspace_id text NOT NULL, collection_id text NOT NULL,
     title text NOT NULL DEFAULT '', body text NOT NULL DEFAULT '', status text NOT NULL DEFAULT 'new');
   CREATE TABLE public.w635_comments (id bigserial PRIMARY KEY, target_type text NOT NULL, target_id text NOT NULL,
     body text NOT NULL, author text NOT NULL, workspace_id text);
   SELECT agent.register_resource_table('page', 'public.w635_rows', 'id', 'title', 'body',
     parent_type => 'collection', parent_column => 'collection_id',
     writable_columns => ARRAY['status', 'title']::name[], workspace_column => 'workspace_id');
   SELECT agent.enable_allowlist('public.w635_rows', 'page', 'id');
   SELECT agent.register_comment_table('public.w635_comments', 'target_type', 'target_id', 'body', 'author',
     workspace_column => 'workspace_id');
   INSERT INTO agent.resource_acl (workspace_id, resource_type, resource_id, principal, access) VALUES
     ('w6', 'collection', 'tickets', 'user:owner6', 'edit'),
     ('w635b', 'collection', 'tickets', 'user:owner635b', 'edit')
     ON CONFLICT DO NOTHING;
   INSERT INTO public.w635_rows (id, workspace_id, collection_id, title, body) VALUES
     ('a1', 'w6', 'tickets', 'Printer jam', 'Our printer jams'),
     ('b1', 'w635b', 'tickets', 'Wombat merger', 'Secret wombat plan of the other tenant');" >/dev/null

a=$(mk_agent "ws635a" '{}' none '[]' 20)
b=$(mk_agent "ws635b" '{}' none '[]' 10 w635b owner635b)
q "INSERT INTO agent.access (agent_id, resource_type, resource_id, access) VALUES
     ($a, 'collection', 'tickets', 'edit'), ($b, 'collection', 'tickets', 'edit')" >/dev/null

# the decision, from the application of w6 (and a superuser)
is "$(PGOPTIONS="$PGOPTIONS -c pg_agents.workspace=w6" q "SELECT agent.can_access($a, 'page', 'a1', 'edit') || ':' || agent.can_access($a, 'page', 'b1', 'read')")" \
   "true:false" "can_access: the row of w6 through the collection, not the other workspace's row of a collection with the same id"
is "$(PGOPTIONS="$PGOPTIONS -c pg_agents.workspace=w6" q "SELECT reason FROM agent.explain_access($a, 'page', 'b1', 'read')")" \
   "other_workspace" "explain_access names the reason"
is "$(q "SELECT (SELECT reason FROM agent.explain_access($b, 'page', 'a1', 'read')) || ':' || (SELECT reason FROM agent.explain_access($b, 'page', 'b1', 'edit'))")" \
   "other_workspace:granted" "the other workspace's agent: the same rule, the other way"
is "$(PGOPTIONS="$PGOPTIONS -c pg_agents.workspace=w6" q "SELECT coalesce(string_agg(x, ',' ORDER BY x), '') FROM agent.readable_resources($a, 'page', 'edit') x")" \
   "a1" "the readable set holds only the rows of the agent's workspace"
is "$(PGOPTIONS="$PGOPTIONS -c pg_agents.workspace=w6 -c pg_agents.actor=agent:$a" q "BEGIN; SET LOCAL ROLE agents_tool; SELECT string_agg(id, ',' ORDER BY id) FROM public.w635_rows; COMMIT")" \
   "a1" "the allowlist lets the agent session read only them"

llm_script "[[t635]]" '[{"tool": "read_resource", "input": {"resource_type": "page", "resource_id": "b1"}},
   {"tool": "update_row", "input": {"resource_type": "page", "resource_id": "b1", "properties": {"status": "hacked"}}},
   {"tool": "search_resources", "input": {"query": "wombat"}},
   {"tool": "add_comment", "input": {"resource_type": "page", "resource_id": "b1", "text": "I was here"}},
   {"tool": "add_row", "input": {"resource_type": "page", "collection_id": "tickets", "properties": {"title": "Planted", "workspace_id": "w635b"}}},
   {"tool": "read_resource", "input": {"resource_type": "page", "resource_id": "a1"}},
   {"tool": "update_row", "input": {"resource_type": "page", "resource_id": "a1", "properties": {"status": "triaged"}}},
   {"tool": "add_comment", "input": {"resource_type": "page", "resource_id": "a1", "text": "Triaged."}},
   {"tool": "add_row", "input": {"resource_type": "page", "collection_id": "tickets", "properties": {"title": "Follow-up"}}},
   {"text": "Done."}]'
r=$(start_run "$a" '{"prompt": "Triage [[t635]]"}')
is "$(wait_status "$r" "succeeded|failed" 60)" "succeeded" "the run succeeds"
is "$(q "SELECT string_agg(kind || ':' || name || ':' || coalesce(output->>'reason', status), ' | ' ORDER BY seq)
          FROM agent.run_steps WHERE run_id = $r AND kind <> 'llm'")" \
   "denied:read_resource:other_workspace | denied:update_row:other_workspace | tool:search_resources:ok | denied:add_comment:other_workspace | error:add_row:error | read:read_resource:ok | write:update_row:ok | write:add_comment:ok | write:add_row:ok" \
   "every tool on the other workspace's row is refused; the agent's own workspace's row is triaged"
is "$(q "SELECT coalesce(string_agg(x->>'resource_id', ','), '') FROM agent.run_steps, jsonb_array_elements(output -> 'results') x WHERE run_id = $r AND name = 'search_resources'")" \
   "" "search_resources finds nothing of the other workspace"
reqs=$(llm_requests)
is "$(python3 -c 'import sys; print(int("ombat" in sys.argv[1]))' "$(python3 -c '
import json,sys
reqs=[r for r in json.loads(sys.argv[1]) if r["key"] == "[[t635]]"]
print(json.dumps([m.get("content") for m in (reqs[-1].get("body") or {}).get("messages", []) if m.get("role") == "tool"]))' "$reqs")")" \
   "0" "nothing of the other workspace's row reaches the model"
is "$(q "SELECT string_agg(id || ':' || workspace_id || ':' || status, ',' ORDER BY id) FROM public.w635_rows WHERE id IN ('a1', 'b1')")" \
   "a1:w6:triaged,b1:w635b:new" "the other workspace's row is untouched; the agent's row is triaged"
is "$(q "SELECT string_agg(workspace_id || ':' || collection_id || ':' || title, ',' ORDER BY title) FROM public.w635_rows WHERE id NOT IN ('a1', 'b1')")" \
   "w6:tickets:Follow-up" "add_row: the new row is the run's workspace's; the planted workspace was refused"
is "$(q "SELECT string_agg(target_id || ':' || coalesce(workspace_id, '-') || ':' || body, ',') FROM public.w635_comments")" \
   "a1:w6:Triaged." "add_comment: one comment, in the run's workspace, none on the other workspace's row"

# a table registered without workspace_column is decided by id alone (as
# documented: its ids must be unique across the database)
q "SELECT agent.register_resource_table('page', 'public.w635_rows', 'id', 'title', 'body',
     parent_type => 'collection', parent_column => 'collection_id', writable_columns => ARRAY['status', 'title']::name[])" >/dev/null
is "$(PGOPTIONS="$PGOPTIONS -c pg_agents.workspace=w6" q "SELECT reason FROM agent.explain_access($a, 'page', 'b1', 'read')")" \
   "granted" "without workspace_column the row's collection id alone decides (docs/access.md)"
# refused registrations
is "$(q "SELECT agent.register_resource_table('page', 'public.w635_rows', 'id', 'title', 'body',
     parent_type => 'collection', parent_column => 'collection_id', writable_columns => ARRAY['workspace_id']::name[],
     workspace_column => 'workspace_id')" 2>&1 | head -1)" \
   'ERROR:  column "workspace_id" cannot be writable' "the workspace column cannot be writable"
is "$(q "SELECT agent.register_resource_table('page', 'public.w635_rows', 'id', 'title', 'body', workspace_column => 'nosuch')" 2>&1 | head -1 | sed 's/ of relation.*//')" \
   'ERROR:  column "nosuch"' "an unknown workspace column is refused"
q "SELECT agent.unregister_resource_table('public.w635_rows')" >/dev/null
done_testing
