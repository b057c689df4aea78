# Issue 35, item 2: an API call in the application's transaction that wrote
# rows of the same workspace (a distributed table co-located with the
# agent tables).  "The event and the run commit with the application's
# write, or neither does": in one transaction as the application's role,
# bound to acme, an INSERT into public.tickets (its shard is on acme's node)
# and agent.fire_event, in either order; ROLLBACK leaves neither, COMMIT
# both and exactly one run; the event's dedup holds; initech (on the other
# worker) is unaffected; a workspace other than the session's is refused.
# (Sourced by tools/citus_lab.sh: check, check_error, psqlc, as_app.)

tx_counts() {  # tickets 201..204 of acme, runs of acme, runs of initech
    psqlc -c "SELECT (SELECT count(*) FROM public.tickets WHERE workspace_id = 'acme' AND id BETWEEN 201 AND 204),
                     (SELECT count(*) FROM agent.runs WHERE workspace_id = 'acme'),
                     (SELECT count(*) FROM agent.runs WHERE workspace_id = 'initech')"
}
tx_fire() {  # tx_fire ROW_ID EVENT_ID: the fire_event statement (count of runs made)
    printf "SELECT count(*) FROM agent.fire_event('ticket.created', 'collection', 'public.tickets', '{\"row_id\": \"%s\"}', 'user:alice', '%s')" "$1" "$2"
}
tx_begin=(-c "BEGIN" -c "SET LOCAL pg_agents.workspace = 'acme'" -c "SET LOCAL pg_agents.actor = 'user:alice'")
IFS='|' read -r tx_t0 tx_a0 tx_i0 <<<"$(tx_counts)"

check "transactional: INSERT then fire_event in one transaction, ROLLBACK: the call made one run" "1" \
    as_app -v ON_ERROR_STOP=1 "${tx_begin[@]}" \
        -c "INSERT INTO public.tickets VALUES (201, 'acme', 'alice', 'transactional, rolled back')" \
        -c "$(tx_fire 201 'lab:tx:201')" -c "ROLLBACK"
check "transactional: after the ROLLBACK neither the row nor a run" "$tx_t0|$tx_a0|$tx_i0" tx_counts

check "transactional: INSERT then fire_event in one transaction, COMMIT: one run" "1" \
    as_app -v ON_ERROR_STOP=1 "${tx_begin[@]}" \
        -c "INSERT INTO public.tickets VALUES (201, 'acme', 'alice', 'transactional')" \
        -c "$(tx_fire 201 'lab:tx:201')" -c "COMMIT"
check "transactional: after the COMMIT the row and exactly one run (initech unaffected)" \
    "$((tx_t0 + 1))|$((tx_a0 + 1))|$tx_i0" tx_counts
check "transactional: the run is the event's (acme's agent, origin event, queued)" "1" \
    psqlc -c "SELECT count(*) FROM agent.runs r JOIN agent.agents a ON a.workspace_id = r.workspace_id AND a.id = r.agent_id
               WHERE r.workspace_id = 'acme' AND r.origin = 'event' AND r.input::text LIKE '%\"201\"%'"

check "transactional: the same event again with another INSERT, COMMIT: dedup holds (no run)" "0" \
    as_app -v ON_ERROR_STOP=1 "${tx_begin[@]}" \
        -c "INSERT INTO public.tickets VALUES (202, 'acme', 'alice', 'transactional, duplicate event')" \
        -c "$(tx_fire 201 'lab:tx:201')" -c "COMMIT"
check "transactional: after the duplicate the row, no new run" \
    "$((tx_t0 + 2))|$((tx_a0 + 1))|$tx_i0" tx_counts

check "transactional: fire_event then INSERT (the other order), COMMIT: one run" "1" \
    as_app -v ON_ERROR_STOP=1 "${tx_begin[@]}" \
        -c "$(tx_fire 203 'lab:tx:203')" \
        -c "INSERT INTO public.tickets VALUES (203, 'acme', 'alice', 'transactional, call first')" -c "COMMIT"
check "transactional: after the other order the row and one run more" \
    "$((tx_t0 + 3))|$((tx_a0 + 2))|$tx_i0" tx_counts

as_app -v ON_ERROR_STOP=1 "${tx_begin[@]}" \
    -c "INSERT INTO public.tickets VALUES (204, 'acme', 'alice', 'transactional, failed')" \
    -c "$(tx_fire 204 'lab:tx:204')" -c "SELECT 1/0" -c "COMMIT" >/dev/null 2>&1 || true
check "transactional: INSERT, fire_event, then a failing statement: neither the row nor a run" \
    "$((tx_t0 + 3))|$((tx_a0 + 2))|$tx_i0" tx_counts

# the hourly cap (its lock, agent.locks, is the node's own): with a cap the
# delegated call takes it on acme's node
tx_uncapped=$(psqlc -c "WITH u AS (UPDATE agent.agents SET hourly_run_cap = 1000000
                                    WHERE workspace_id = 'acme' AND hourly_run_cap IS NULL RETURNING id)
                        SELECT coalesce(string_agg(id::text, ','), '0') FROM u")
check "transactional: INSERT then fire_event with the agent's hourly cap set, COMMIT: one run" "1" \
    as_app -v ON_ERROR_STOP=1 "${tx_begin[@]}" \
        -c "INSERT INTO public.tickets VALUES (204, 'acme', 'alice', 'transactional, capped')" \
        -c "$(tx_fire 204 'lab:tx:204b')" -c "COMMIT"
psqlc -c "UPDATE agent.agents SET hourly_run_cap = NULL WHERE workspace_id = 'acme' AND id IN ($tx_uncapped)" >/dev/null
check "transactional: after the capped call the row and one run more" \
    "$((tx_t0 + 4))|$((tx_a0 + 3))|$tx_i0" tx_counts

check_error "transactional: agent._fire_event_in of another workspace than the session's is refused" \
    'permission denied to fire an event in workspace "initech"' \
    as_app -v ON_ERROR_STOP=1 "${tx_begin[@]}" \
        -c "SELECT count(*) FROM agent._fire_event_in('initech', 'ticket.created', 'collection', 'public.tickets', '{\"row_id\": \"205\"}', 'user:alice', 'lab:tx:205', NULL)" \
        -c "COMMIT"
check "transactional: initech's runs unchanged by all of the above" "$tx_i0" \
    psqlc -c "SELECT count(*) FROM agent.runs WHERE workspace_id = 'initech'"

# Not solved (docs/scaling.md, "What is known not to work"): the other API
# calls, SECURITY DEFINER SQL or C reading as the owner of schema agent,
# after the application's write of the same workspace.  Printed, not
# checked (rolled back).
tx_agent=$(psqlc -c "SELECT min(id) FROM agent.agents WHERE workspace_id = 'acme'")
for tx_call in "SELECT agent.start_run($tx_agent, 'alice', '{}', 'autonomous', 'api') IS NOT NULL" \
               "SELECT agent.can_access($tx_agent, 'page', 'roadmap')"; do
    set +e
    tx_out=$(as_app -v ON_ERROR_STOP=1 "${tx_begin[@]}" \
        -c "INSERT INTO public.tickets VALUES (206, 'acme', 'alice', 'transactional, other call')" \
        -c "$tx_call" -c "ROLLBACK" 2>&1)
    set -e
    case "$tx_out" in
        *"by a different user"*) printf 'known   transactional: INSERT then %s in one transaction fails: %s\n' \
            "${tx_call%%(*}" "$(printf '%s' "$tx_out" | grep -m1 ERROR)" ;;
        *) printf 'note    transactional: INSERT then %s in one transaction gave: %s\n' \
            "${tx_call%%(*}" "$(printf '%s' "$tx_out" | tr '\n' ' ' | cut -c1-300)" ;;
    esac
done
