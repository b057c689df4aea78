#!/usr/bin/env bash
# Issue 31, UC-06: the triage agent through the worker.  A tickets table
# registered as the rows of collections (parent_type 'collection') and
# watched; a trigger on one collection with a property filter; a
# high-priority row added -> one run; the agent reads the row (granted
# through its collection), sets status and assignee with update_row (only
# the writable columns, a bad value is a tool error), and never reads,
# searches or writes a row of a collection it was not granted nor the second
# workspace's identical collection; the audit shows agent:<id> with only the
# changed columns; its own write wakes no second run.
. "$(dirname "$0")/../fixtures/worker_lib.sh"
llm_start

q "DROP TABLE IF EXISTS public.w632_tickets;
   CREATE TABLE public.w632_tickets (id bigint PRIMARY KEY, collection_id text NOT NULL, workspace_id text NOT NULL,
     title text NOT NULL, body text NOT NULL, status text NOT NULL DEFAULT 'new', priority text NOT NULL,
     assignee text, points int);
   SELECT agent.register_resource_table('page', 'public.w632_tickets', 'id', 'title', 'body',
     parent_type => 'collection', parent_column => 'collection_id', writable_columns => ARRAY['status', 'assignee', 'points']::name[]);
   SELECT agent.enable_allowlist('public.w632_tickets', 'page', 'id');
   SELECT agent.audit_table('public.w632_tickets', 'page', workspace_column => 'workspace_id');
   SELECT agent.watch_table('public.w632_tickets', 'collection', 'id', workspace_column => 'workspace_id');
   INSERT INTO agent.resource_acl (workspace_id, resource_type, resource_id, principal, access) VALUES
     ('w6', 'collection', 't632', 'user:owner6', 'edit'),
     ('w6', 'collection', 'secret632', 'user:owner6', 'edit'),
     ('w632b', 'collection', 't632b', 'user:owner6', 'edit')
     ON CONFLICT DO NOTHING;
   INSERT INTO public.w632_tickets VALUES
     (6320, 'secret632', 'w6', 'Zebra merger', 'Quokka acquisition ticket', 'new', 'high', NULL, NULL),
     (6329, 't632b', 'w632b', 'Printer in workspace two', 'Quokka toner', 'new', 'high', NULL, NULL);" >/dev/null

a=$(mk_agent "triage632")
b=$(mk_agent "triage632b" '{}' none '[]' 10 w632b)
q "INSERT INTO agent.access (agent_id, resource_type, resource_id, access) VALUES ($a, 'collection', 't632', 'edit');
   INSERT INTO agent.access (agent_id, resource_type, resource_id, access) VALUES ($b, 'collection', 't632b', 'edit');
   INSERT INTO agent.triggers (agent_id, kind, event_name, resource_type, resource_id, filter, prompt) VALUES
     ($a, 'event', 'collection.row_added', 'collection', 't632',
      '{\"all\": [{\"property\": \"priority\", \"op\": \"eq\", \"value\": \"high\"}]}', 'Triage the new ticket [[t632]]'),
     ($a, 'event', 'collection.property_updated', 'collection', 't632', '{}', 'Look at the change [[t632loop]]')" >/dev/null

llm_script "[[t632]]" '[{"tool": "read_resource", "input": {"resource_type": "page", "resource_id": "6321"}},
   {"tool": "update_row", "input": {"resource_type": "page", "resource_id": "6321", "properties": {"priority": "low"}}},
   {"tool": "update_row", "input": {"resource_type": "page", "resource_id": "6321", "properties": {"points": "lots"}}},
   {"tool": "update_row", "input": {"resource_type": "page", "resource_id": "6320", "properties": {"status": "triaged"}}},
   {"tool": "read_resource", "input": {"resource_type": "page", "resource_id": "6329"}},
   {"tool": "search_resources", "input": {"query": "Quokka"}},
   {"tool": "update_row", "input": {"resource_type": "page", "resource_id": "6321", "properties": {"status": "triaged", "assignee": "ana"}}},
   {"text": "Triaged."}]'
llm_script "[[t632loop]]" '[{"text": "should never run"}]'

# a low-priority row, a row of another collection, the second workspace: no run
PGOPTIONS="$PGOPTIONS -c pg_agents.actor=user:ana" q "INSERT INTO public.w632_tickets VALUES
  (6322, 't632', 'w6', 'Typo', 'low one', 'new', 'low', NULL, NULL),
  (6323, 'secret632', 'w6', 'Elsewhere', 'high, another collection', 'new', 'high', NULL, NULL),
  (6328, 't632b', 'w632b', 'Second workspace', 'high there', 'new', 'high', NULL, NULL)" >/dev/null
is "$(q "SELECT count(*) FROM agent.runs WHERE agent_id = $a")" "0" "no run for a low row or a row of another collection"
# the high-priority row of the watched collection
PGOPTIONS="$PGOPTIONS -c pg_agents.actor=user:ana" q "INSERT INTO public.w632_tickets VALUES
  (6321, 't632', 'w6', 'Printer on fire', 'Quokka printer is on fire', 'new', 'high', NULL, NULL)" >/dev/null
r=$(q "SELECT id FROM agent.runs WHERE agent_id = $a")
is "$(q "SELECT count(*) || ':' || min(input ->> 'resource_id') || ':' || min(input -> 'payload' ->> 'row_id') FROM agent.runs WHERE agent_id = $a")" \
   "1:t632:6321" "exactly one run, on the collection, the row id in the payload"
is "$(wait_status "$r" "succeeded|failed" 60)" "succeeded" "the triage run succeeds"
is "$(q "SELECT string_agg(kind || ':' || name || ':' || coalesce(output->>'reason', output->>'error', status), ' | ' ORDER BY seq)
          FROM agent.run_steps WHERE run_id = $r AND kind <> 'llm'")" \
   "read:read_resource:ok | error:update_row:column \"priority\" of resource type page is not writable (writable: assignee, points, status) | error:update_row:invalid input syntax for type integer: \"lots\" | denied:update_row:not_granted | denied:read_resource:not_granted | tool:search_resources:ok | write:update_row:ok" \
   "read through the collection; not writable and bad values are tool errors; the other collection and workspace refused"
is "$(q "SELECT status || ':' || assignee || ':' || priority || ':' || coalesce(points::text, '-') FROM public.w632_tickets WHERE id = 6321")" \
   "triaged:ana:high:-" "the row is triaged and assigned, nothing else changed"
is "$(q "SELECT string_agg(id || ':' || status, ',' ORDER BY id) FROM public.w632_tickets WHERE id IN (6320, 6328, 6329)")" \
   "6320:new,6328:new,6329:new" "the other collection and the second workspace are untouched"
is "$(q "SELECT output -> 'results' FROM agent.run_steps WHERE run_id = $r AND name = 'search_resources'")" \
   '[{"resource_id": "6321", "resource_type": "page"}]' "search finds only the row of the granted collection"
reqs=$(llm_requests)
ok "$(python3 -c '
import json,sys; s=json.dumps([r for r in json.loads(sys.argv[1]) if r["key"]=="[[t632]]"])
print(1 if ("Zebra" in s or "toner" in s or "Second workspace" in s) else 0)' "$reqs")" \
   "nothing of the other collection or the other workspace reaches the model"
is "$(q "SELECT actor_kind || ':' || actor_id || ':' || (run_id = $r) || ':' || (SELECT string_agg(k, ',' ORDER BY k) FROM jsonb_object_keys(changes) k)
          FROM agent.audit_log WHERE target_id = '6321' AND action LIKE '%update%'")" \
   "agent:$a:true:assignee,status" "the audit row: the agent, its run, only the changed columns"
is "$(q "SELECT count(*) FROM agent.runs WHERE agent_id = $a")" "1" "its own write woke no second run"
# leave no registered table of rows of collections behind: the row tools of
# the later tests find the table of a type's rows among the registered ones
q "SELECT agent.unregister_resource_table('public.w632_tickets')" >/dev/null
done_testing
