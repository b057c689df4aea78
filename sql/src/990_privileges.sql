-- ===========================================================================
-- Privileges: who may call and read what (docs/security.md).  Install and
-- upgrade both end with this file, so it states the whole model and must
-- stay idempotent.
-- ===========================================================================
SELECT 1 WHERE false;
