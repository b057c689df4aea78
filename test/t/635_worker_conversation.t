#!/usr/bin/env bash
# Conversations through the worker (docs/activity.md, "Conversations"): a
# three-turn chat whose third request carries the first two turns, the
# history window (oldest turns dropped first), the agent's autonomous
# conversation (full and edit see it, interact does not), a per-trigger
# conversation, and the boundaries: another user's chat, another workspace,
# a role without the application's grant.
. "$(dirname "$0")/../fixtures/worker_lib.sh"
llm_start
cleanup() {
    llm_stop
    q "ALTER SYSTEM RESET pg_agents.conversation_window" >/dev/null 2>&1
    q "SELECT pg_reload_conf()" >/dev/null 2>&1
    q "DROP ROLE IF EXISTS w630_app; DROP ROLE IF EXISTS w630_nobody" >/dev/null 2>&1
}
trap cleanup EXIT

q "DROP ROLE IF EXISTS w630_app; DROP ROLE IF EXISTS w630_nobody;
   CREATE ROLE w630_app LOGIN IN ROLE agents_app; CREATE ROLE w630_nobody LOGIN" >/dev/null
app() {  # app WS SQL: as the application, in a workspace
    psql -XAtq -v ON_ERROR_STOP=1 -U w630_app -c "SET pg_agents.workspace = '$1'" -c "$2" 2>&1
}

a=$(mk_agent "conv630")
q "INSERT INTO agent.shares (workspace_id, agent_id, user_id, level, created_by) VALUES
     ('w6', $a, 'int630', 'interact', 'owner6'), ('w6', $a, 'edit630', 'edit', 'owner6'),
     ('w6', $a, 'full630', 'full', 'owner6'), ('w6', $a, 'other630', 'interact', 'owner6')" >/dev/null

# keys of distinct lengths: a request carrying several is matched to the longest (the newest turn)
llm_script "k630-1" '[{"text": "answer one 630"}]'
llm_script "k630-22" '[{"text": "answer two 630"}]'
llm_script "k630-333" '[{"text": "answer three 630"}]'
llm_script "k630-4444" '[{"text": "answer four 630"}]'

send() {  # send USER TEXT [CONV] -> "conv|run"
    app w6 "SELECT conversation_id || '|' || run_id FROM agent.send_message($a, '$1', '$2', ${3:-NULL})"
}
cr=$(send int630 "turn one k630-1"); conv=${cr%|*}; r1=${cr#*|}
is "$(wait_status "$r1" "succeeded|failed" 30)" "succeeded" "first turn: the chat run succeeds"
cr=$(send int630 "turn two k630-22" "$conv"); r2=${cr#*|}
is "${cr%|*}" "$conv" "the second message continues the same conversation"
is "$(wait_status "$r2" "succeeded|failed" 30)" "succeeded" "second turn succeeds"
cr=$(send int630 "turn three k630-333" "$conv"); r3=${cr#*|}
is "$(wait_status "$r3" "succeeded|failed" 30)" "succeeded" "third turn succeeds"
is "$(q "SELECT string_agg(regime || '/' || origin || '/' || requested_by, ',' ORDER BY id) FROM agent.runs WHERE id IN ($r1, $r2, $r3)")" \
   "manual/chat/int630,manual/chat/int630,manual/chat/int630" "each message queued a manual chat run of its user"

reqs=$(llm_requests)
is "$(python3 -c '
import json,sys; rs=[r for r in json.loads(sys.argv[1]) if r["key"]=="k630-333"]
m=rs[0]["body"]["messages"]
print(" | ".join(x["role"] + ":" + x["content"].strip() for x in m[1:]))' "$reqs")" \
   "user:turn one k630-1 | assistant:answer one 630 | user:turn two k630-22 | assistant:answer two 630 | user:turn three k630-333" \
   "the third request carries the first two turns, in order, then the new message"
is "$(python3 -c '
import json,sys; rs=[r for r in json.loads(sys.argv[1]) if r["key"]=="k630-1"]
print(len(rs[0]["body"]["messages"]))' "$reqs")" "2" "the first request has no history (system and the message)"

is "$(app w6 "SELECT string_agg(role || ':' || content || ':' || (run_id IS NOT NULL), ' | ' ORDER BY message_id) FROM agent.conversation_messages($conv, 'int630')")" \
   "user:turn one k630-1:true | assistant:answer one 630:true | user:turn two k630-22:true | assistant:answer two 630:true | user:turn three k630-333:true | assistant:answer three 630:true" \
   "the user sees the whole chat, final answers appended when the runs ended"
is "$(q "SELECT count(*) FROM agent.messages m JOIN agent.runs r ON r.id = m.run_id WHERE m.conversation_id = $conv AND m.role = 'assistant' AND m.created_at < r.finished_at")" \
   "0" "the answer is written with the end of its run (the same transaction)"
is "$(app w6 "SELECT count(*) FROM agent.conversation_messages($conv, 'full630')")" "6" "a full-level user sees the chat"
is "$(app w6 "SELECT count(*) FROM agent.conversation_messages($conv, 'edit630')")" "0" "an edit-level user does not see another user's chat"
is "$(app w6 "SELECT count(*) FROM agent.conversation_messages($conv, 'other630')")" "0" "another interact user does not see it"
contains "$(send other630 "hijack k630-x" "$conv")" "conversation $conv does not exist" "another user cannot continue the chat"
is "$(app w6b "SELECT count(*) FROM agent.conversation_messages($conv, 'int630')")" "0" "from another workspace the chat is not there"
contains "$(app w6b "SELECT * FROM agent.send_message($a, 'int630', 'x', $conv)")" "agent $a does not exist" \
   "from another workspace the agent is not there"
contains "$(psql -XAtq -U w630_nobody -c "SET pg_agents.workspace = 'w6'" -c "SELECT * FROM agent.send_message($a, 'int630', 'x')" 2>&1)" \
   "permission denied" "a role without the application's grant cannot send a message"
contains "$(send nobody630 "hello k630-x")" "may not chat" "a user without access to the agent cannot chat"

# the window: 9 estimated tokens keep only the last turn (19 + 16 characters: 5 + 4)
q "ALTER SYSTEM SET pg_agents.conversation_window = 9" >/dev/null && q "SELECT pg_reload_conf()" >/dev/null
sleep 0.5
cr=$(send int630 "turn four k630-4444" "$conv"); r4=${cr#*|}
is "$(wait_status "$r4" "succeeded|failed" 30)" "succeeded" "fourth turn succeeds"
reqs=$(llm_requests)
is "$(python3 -c '
import json,sys; rs=[r for r in json.loads(sys.argv[1]) if r["key"]=="k630-4444"]
m=rs[0]["body"]["messages"]
print(" | ".join(x["role"] + ":" + x["content"].strip() for x in m[1:]))' "$reqs")" \
   "user:turn three k630-333 | assistant:answer three 630 | user:turn four k630-4444" \
   "with a small window the oldest turns are dropped first"
q "ALTER SYSTEM RESET pg_agents.conversation_window" >/dev/null && q "SELECT pg_reload_conf()" >/dev/null

# the autonomous conversation: one per agent, full and edit see it, interact does not
llm_script "k630-auto" '[{"text": "autonomous answer 630"}]'
r=$(start_run "$a" '{"prompt": "nightly check k630-auto"}')
is "$(wait_status "$r" "succeeded|failed" 30)" "succeeded" "an autonomous run succeeds"
llm_script "k630-auto2" '[{"malformed": true}]'
r2=$(start_run "$a" '{"prompt": "second check k630-auto2"}')
is "$(wait_status "$r2" "succeeded|failed" 30)" "failed" "a second autonomous run fails"
auto=$(q "SELECT id FROM agent.conversations WHERE agent_id = $a AND kind = 'autonomous' AND trigger_id IS NULL")
is "$(q "SELECT count(*) FROM agent.conversations WHERE agent_id = $a AND kind = 'autonomous'")" "1" \
   "both runs are logged in the agent's one autonomous conversation"
is "$(app w6 "SELECT string_agg(role || ':' || replace(content, E'\n', '/'), ' | ' ORDER BY message_id) FROM agent.conversation_messages($auto, 'full630') WHERE role <> 'notice'")" \
   "trigger:api/nightly check k630-auto | assistant:autonomous answer 630 | trigger:api/second check k630-auto2" \
   "full sees what started each run and the answer"
contains "$(app w6 "SELECT content FROM agent.conversation_messages($auto, 'full630') WHERE role = 'notice'")" \
   "run $r2 ended failed: " "and a notice for the run that ended without an answer"
is "$(app w6 "SELECT count(*) FROM agent.conversation_messages($auto, 'edit630')")" "4" "edit sees the autonomous conversation"
is "$(app w6 "SELECT count(*) FROM agent.conversation_messages($auto, 'int630')")" "0" "interact does not see it"
is "$(app w6 "SELECT count(*) FROM agent.conversation_messages($auto, 'owner6')")" "4" "the owner sees it"
is "$(app w6 "SELECT string_agg(kind, ',' ORDER BY kind) FROM agent.conversations_of($a, 'int630')")" "chat" \
   "an interact user lists only their own chat"
is "$(app w6 "SELECT string_agg(kind, ',' ORDER BY kind) FROM agent.conversations_of($a, 'edit630')")" "autonomous" \
   "an edit user lists the autonomous conversation, not others' chats"
is "$(app w6 "SELECT string_agg(kind, ',' ORDER BY kind) FROM agent.conversations_of($a, 'full630')")" "autonomous,chat" \
   "a full user lists both"

# a trigger that keeps its own conversation
t=$(q "INSERT INTO agent.triggers (agent_id, kind, prompt, conversation) VALUES ($a, 'api', 'per trigger k630-trig', 'trigger') RETURNING id")
llm_script "k630-trig" '[{"text": "trigger answer 630"}]'
r=$(q "SELECT agent._enqueue_run($a, 'autonomous', 'api', '{}'::jsonb, $t, 'owner6')")
is "$(wait_status "$r" "succeeded|failed" 30)" "succeeded" "a run of that trigger succeeds"
tc=$(q "SELECT id FROM agent.conversations WHERE agent_id = $a AND kind = 'autonomous' AND trigger_id = $t")
is "$(app w6 "SELECT string_agg(role || ':' || content, ' | ' ORDER BY message_id) FROM agent.conversation_messages(${tc:-0}, 'edit630')")" \
   "trigger:api
per trigger k630-trig | assistant:trigger answer 630" "its run is logged in the trigger's own conversation"
is "$(app w6 "SELECT count(*) FROM agent.conversation_messages($auto, 'edit630')")" "4" "not in the agent's"
q "DELETE FROM agent.triggers WHERE id = $t" >/dev/null
done_testing
