CREATE OR REPLACE FUNCTION agent._queue_advance(p_ws text, p_prios smallint[]) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET enable_bitmapscan = off
SET jit = off
AS $$
DECLARE
  m      record;
  v_seq  regclass := pg_catalog.pg_get_serial_sequence('agent.runs', 'id')::regclass;
  v_low  bigint;
  v_next bigint;
  v_last bigint;
  v_wait text[];
  v_ret  bigint;
  v_seen tid[];
  -- p_ws '': the marks of the queue of all workspaces (the claim of several
  -- workspaces, never on Citus); otherwise, whether those exist (then the
  -- runs noted as queued again that they still need are kept), and theirs
  v_all  boolean := p_ws = '';
  v_glob boolean;
  v_gl   bigint;
  v_gn   bigint;
BEGIN
  -- (only those not in view: an INSERT that meets a mark another step is
  -- updating would wait for that step's transaction; those of all
  -- workspaces, which every claimer steps, are made by the install only)
  IF NOT v_all THEN
    INSERT INTO agent.run_queue_marks (workspace_id, priority, low_id)
    SELECT p_ws, p, '-9223372036854775808'::bigint FROM pg_catalog.unnest(p_prios) p
     WHERE NOT EXISTS (SELECT 1 FROM agent.run_queue_marks k WHERE k.workspace_id = p_ws AND k.priority = p)
    ON CONFLICT DO NOTHING;
  END IF;
  v_glob := NOT v_all AND EXISTS (SELECT 1 FROM agent.run_queue_marks k
                                    WHERE k.workspace_id = ''
                                      AND (k.low_id > '-9223372036854775808'::bigint OR k.next_id IS NOT NULL));
  FOR m IN SELECT * FROM agent.run_queue_marks k WHERE k.workspace_id = p_ws
            ORDER BY k.priority FOR UPDATE SKIP LOCKED
  LOOP
    v_low := m.low_id;
    IF m.next_id IS NOT NULL THEN
      -- the candidate stands once the writers open when it was taken ended
      CONTINUE WHEN EXISTS (SELECT 1 FROM pg_catalog.pg_locks l WHERE l.virtualtransaction = ANY (m.next_wait));
      -- the runs noted as queued again, read before the queue below
      IF v_all THEN
        v_seen := ARRAY(SELECT r.ctid FROM agent.run_queue_returns r WHERE r.priority = m.priority);
        v_ret := least(m.low_id, (SELECT pg_catalog.min(r.run_id) FROM agent.run_queue_returns r
                                   WHERE r.priority = m.priority AND r.ctid = ANY (v_seen)));
        v_low := m.next_id;
        SELECT q.id INTO v_next FROM agent.runs q
         WHERE q.status = 'queued' AND q.priority = m.priority AND q.id >= v_ret
         ORDER BY q.priority DESC, q.id LIMIT 1;   -- runs_queue_idx
      ELSE
        v_seen := ARRAY(SELECT r.ctid FROM agent.run_queue_returns r
                         WHERE r.workspace_id = p_ws AND r.priority = m.priority);
        v_ret := least(m.low_id, (SELECT pg_catalog.min(r.run_id) FROM agent.run_queue_returns r
                                   WHERE r.workspace_id = p_ws AND r.priority = m.priority AND r.ctid = ANY (v_seen)));
        v_low := m.next_id;
        SELECT q.id INTO v_next FROM agent.runs q
         WHERE q.status = 'queued' AND q.workspace_id = p_ws AND q.priority = m.priority AND q.id >= v_ret
         ORDER BY q.workspace_id, q.priority DESC, q.id LIMIT 1;
      END IF;
      IF v_next < v_low THEN
        v_low := v_next;
      END IF;
      -- those read above are in the new mark (queued: at or above it; or
      -- claimed since), as are any noted since at or above it; the others
      -- noted since stay for the claims.  A run still queued below the
      -- other marks of its queue (its workspace's, or those of all
      -- workspaces) stays noted for them.
      IF v_all THEN
        DELETE FROM agent.run_queue_returns r
         WHERE r.priority = m.priority AND (r.ctid = ANY (v_seen) OR r.run_id >= v_low)
           AND NOT EXISTS (SELECT 1 FROM agent.run_queue_marks o, agent.runs q
                            WHERE o.workspace_id = r.workspace_id AND o.workspace_id <> '' AND o.priority = r.priority
                              AND (o.low_id > r.run_id OR o.next_id > r.run_id)
                              AND q.workspace_id = r.workspace_id AND q.id = r.run_id AND q.status = 'queued');
      ELSIF v_glob THEN
        SELECT k.low_id, k.next_id INTO v_gl, v_gn FROM agent.run_queue_marks k
         WHERE k.workspace_id = '' AND k.priority = m.priority;
        DELETE FROM agent.run_queue_returns r
         WHERE r.workspace_id = p_ws AND r.priority = m.priority AND (r.ctid = ANY (v_seen) OR r.run_id >= v_low)
           AND NOT ((v_gl > r.run_id OR v_gn > r.run_id)
                    AND EXISTS (SELECT 1 FROM agent.runs q
                                 WHERE q.workspace_id = p_ws AND q.id = r.run_id AND q.status = 'queued'));
      ELSE
        DELETE FROM agent.run_queue_returns r
         WHERE r.workspace_id = p_ws AND r.priority = m.priority AND (r.ctid = ANY (v_seen) OR r.run_id >= v_low);
      END IF;
    END IF;
    -- a new candidate: the first queued run in view, or the next id
    IF v_all THEN
      SELECT q.id INTO v_next FROM agent.runs q
       WHERE q.status = 'queued' AND q.priority = m.priority AND q.id >= v_low
       ORDER BY q.priority DESC, q.id LIMIT 1;
    ELSE
      SELECT q.id INTO v_next FROM agent.runs q
       WHERE q.status = 'queued' AND q.workspace_id = p_ws AND q.priority = m.priority AND q.id >= v_low
       ORDER BY q.workspace_id, q.priority DESC, q.id LIMIT 1;
    END IF;
    v_last := pg_catalog.pg_sequence_last_value(v_seq);
    v_next := least(coalesce(v_next, v_last + 1), v_last + 1);
    v_wait := NULL;
    IF v_next > v_low THEN
      -- after the reads above: whoever took a run id up to v_last, or
      -- claimed runs, and has not ended yet, holds one of these locks
      v_wait := ARRAY(SELECT DISTINCT l.virtualtransaction FROM pg_catalog.pg_locks l
                       WHERE l.locktype = 'relation' AND l.relation IN ('agent.runs'::regclass, v_seq)
                         AND l.database = (SELECT d.oid FROM pg_catalog.pg_database d
                                            WHERE d.datname = pg_catalog.current_database())
                         AND l.mode IN ('RowExclusiveLock', 'ShareRowExclusiveLock', 'ExclusiveLock',
                                        'AccessExclusiveLock'));
    ELSE
      v_next := NULL;
    END IF;
    IF (v_low, v_next) IS DISTINCT FROM (m.low_id, m.next_id) THEN
      UPDATE agent.run_queue_marks k SET low_id = v_low, next_id = v_next, next_wait = v_wait
       WHERE k.workspace_id = m.workspace_id AND k.priority = m.priority;
    END IF;
  END LOOP;
END
$$;
