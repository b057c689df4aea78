-- The claim of several workspaces under a held snapshot (issue 33,
-- docs/runs.md "The queue and long transactions"): the marks of the queue of
-- all workspaces (workspace '' of agent.run_queue_marks), which its walk of
-- runs_queue_idx starts from.  The functions (agent.claim_runs,
-- agent._queue_advance, agent._queue_mark_lower) are the ones of the parts
-- above, read from sql/functions/.
INSERT INTO agent.run_queue_marks (workspace_id, priority, low_id)
VALUES ('', 10, '-9223372036854775808'), ('', 0, '-9223372036854775808')
ON CONFLICT DO NOTHING;
