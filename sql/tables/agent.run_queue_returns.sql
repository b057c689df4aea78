CREATE TABLE agent.run_queue_returns (
    workspace_id text NOT NULL,
    priority     smallint NOT NULL,
    run_id       bigint NOT NULL
);
CREATE INDEX run_queue_returns_idx ON agent.run_queue_returns (workspace_id, priority, run_id);
COMMENT ON TABLE agent.run_queue_returns IS
  'Internal (agent.claim_runs): runs queued again below the mark (or candidate) of their queue in agent.run_queue_marks; a claim reads the queue from the lowest of the mark and these, and agent._queue_advance folds them into the mark.';
COMMENT ON COLUMN agent.run_queue_returns.workspace_id IS 'Workspace of the queue.';
COMMENT ON COLUMN agent.run_queue_returns.priority IS 'Priority of the queue.';
COMMENT ON COLUMN agent.run_queue_returns.run_id IS 'The run queued again.';
