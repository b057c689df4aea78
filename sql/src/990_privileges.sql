-- ===========================================================================
-- Privileges: who may call and read what (docs/security.md).  Install and
-- upgrade both end with this file, so it states the whole model and must
-- stay idempotent.
-- ===========================================================================
SELECT 1 WHERE false;

-- triggers:
-- Triggers are settings: the application writes them through set_trigger /
-- delete_trigger (edit level, versioned, audited), or directly (the SPEC's
-- documented direct writes), which the row triggers triggers_history_*
-- version and audit the same way.  agent._history_holds gets no grant: it
-- is what lets the extension's own functions version a write once.
GRANT EXECUTE ON FUNCTION agent.set_trigger(bigint, jsonb, text) TO agents_app;
GRANT EXECUTE ON FUNCTION agent.delete_trigger(bigint, text) TO agents_app;
GRANT EXECUTE ON FUNCTION agent.grant(bigint, text, text, text, text) TO agents_app;
GRANT EXECUTE ON FUNCTION agent.revoke(bigint, text, text, text) TO agents_app;
GRANT EXECUTE ON FUNCTION agent.save_settings(bigint, jsonb, text, text) TO agents_app;
GRANT EXECUTE ON FUNCTION agent.restore_version(bigint, text) TO agents_app;
GRANT EXECUTE ON FUNCTION agent.duplicate(bigint, text) TO agents_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON agent.triggers TO agents_app;
