-- ---------------------------------------------------------------------------
-- Locks no other role can take (issue 30, finding 7).  The extension
-- serialises four decisions: the hourly run cap of an agent (queueing one run
-- at a time per agent, so that concurrent events count exactly), claiming
-- under pg_agents.max_runs_per_workspace (two claimers never fill the same
-- room), the tick's periodic work (one tick at a time) and the creation of a
-- workspace's assistant agent.  They were advisory locks, whose keys anyone
-- can compute and which any role that may connect can take
-- (pg_advisory_lock is PUBLIC): a role with no grants holding one stalled
-- the queue.  They are row locks on agent.locks instead, a table no role but
-- the extension's owner may read, write or lock (no grant, not even SELECT:
-- SELECT ... FOR UPDATE and LOCK TABLE need privileges on it), taken by the
-- extension's SECURITY DEFINER functions only.  Held, like the advisory
-- transaction locks were, until the transaction ends; rolled back with a
-- subtransaction that took them.  One row per purpose and key (an agent's id,
-- a workspace), made on first use; the rows of claim and tick are made here.
-- ---------------------------------------------------------------------------
CREATE TABLE agent.locks (
  purpose text NOT NULL CHECK (purpose IN ('cap', 'claim', 'tick', 'assistant')),
  key     text NOT NULL DEFAULT '',
  PRIMARY KEY (purpose, key)
);
REVOKE ALL ON agent.locks FROM PUBLIC;
COMMENT ON TABLE agent.locks IS
  'Rows the extension locks (SELECT ... FOR UPDATE) to serialise the hourly run cap of an agent, claims under pg_agents.max_runs_per_workspace, the tick''s periodic work and the creation of a workspace''s assistant; granted to no role, so that no role but the owner can take or hold these locks (docs/security.md, "Locks").';
COMMENT ON COLUMN agent.locks.purpose IS 'What the lock serialises: cap (queueing for one agent), claim, tick or assistant (creating one workspace''s assistant agent).';
COMMENT ON COLUMN agent.locks.key IS 'The agent id (cap), the workspace (assistant), run_rollup (tick: the fold of the rollup of agent.run_stats), or empty (claim, tick).';
INSERT INTO agent.locks (purpose, key) VALUES ('claim', ''), ('tick', '');

-- Takes the lock of purpose and key until the transaction ends (made on
-- first use: a concurrent first user waits on the insert, as on the lock);
-- with wait false, returns false at once when another transaction holds it.
CREATE FUNCTION agent._lock(p_purpose text, p_key text DEFAULT '', p_wait boolean DEFAULT true)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  v_n bigint;
BEGIN
  LOOP
    IF p_wait THEN
      PERFORM FROM agent.locks l WHERE l.purpose = p_purpose AND l.key = p_key FOR UPDATE;
      IF FOUND THEN
        RETURN true;
      END IF;
    ELSE
      PERFORM FROM agent.locks l WHERE l.purpose = p_purpose AND l.key = p_key FOR UPDATE SKIP LOCKED;
      IF FOUND THEN
        RETURN true;
      END IF;
      IF EXISTS (SELECT FROM agent.locks l WHERE l.purpose = p_purpose AND l.key = p_key) THEN
        RETURN false;
      END IF;
    END IF;
    -- the first use of this key: the inserted row is locked by its insert
    -- (a concurrent insert of it waits for this transaction, then finds it)
    INSERT INTO agent.locks (purpose, key) VALUES (p_purpose, p_key) ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    IF v_n > 0 THEN
      RETURN true;
    END IF;
  END LOOP;
END
$$;
REVOKE ALL ON FUNCTION agent._lock(text, text, boolean) FROM PUBLIC;
COMMENT ON FUNCTION agent._lock(text, text, boolean) IS
  'Internal: locks the row of agent.locks of purpose and key until the transaction ends (made on first use); with wait false returns false at once when another transaction holds it.';
