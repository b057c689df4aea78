CREATE TABLE agent.run_queue_marks (
    workspace_id text NOT NULL,
    priority     smallint NOT NULL,
    low_id       bigint NOT NULL,
    next_id      bigint,
    next_wait    text[],
    PRIMARY KEY (workspace_id, priority)
);
COMMENT ON TABLE agent.run_queue_marks IS
  'Internal (agent.claim_runs): per workspace and priority, an id below which no run of that queue is queued, so that a claim starts its scan past the entries of claimed runs that a held snapshot keeps. Raised in two steps by agent._queue_advance, lowered by the trigger runs_queue_mark when a run is queued again.';
COMMENT ON COLUMN agent.run_queue_marks.workspace_id IS 'Workspace of the queue.';
COMMENT ON COLUMN agent.run_queue_marks.priority IS 'Priority of the queue.';
COMMENT ON COLUMN agent.run_queue_marks.low_id IS 'No run of this workspace and priority with a smaller id is queued.';
COMMENT ON COLUMN agent.run_queue_marks.next_id IS 'Candidate for low_id, taken when the transactions of next_wait were open.';
COMMENT ON COLUMN agent.run_queue_marks.next_wait IS 'Virtual transaction ids (pg_locks.virtualtransaction) that held agent.runs or its id sequence for writing when next_id was taken; next_id becomes low_id once they have all ended.';
