-- The same access rules as agent.can_access (src/access/access.c), written plainly
-- in PL/pgSQL with one SQL query per lookup: the reference the C version is
-- measured against in bench/access.sh.  Default ACL tables only.  Not part of
-- the extension.
CREATE SCHEMA IF NOT EXISTS bench;

CREATE OR REPLACE FUNCTION bench.acl_level(p_ws text, p_user text, p_type text, p_id text)
RETURNS integer LANGUAGE sql STABLE AS $$
  SELECT coalesce(max(CASE r.access WHEN 'edit' THEN 2 ELSE 1 END), 0)
  FROM agent.resource_acl r
  WHERE r.resource_type = p_type AND r.resource_id = p_id
    AND (r.workspace_id IS NULL OR r.workspace_id = p_ws)
    -- a "workspace" row must name the workspace (NULL: shared with none)
    AND ((r.principal = 'workspace' AND r.workspace_id IS NOT NULL)
         OR (p_user IS NOT NULL AND r.principal = 'user:' || p_user)
         OR (p_user IS NOT NULL AND r.principal IN (
               SELECT 'group:' || m.group_id FROM agent.group_members m
                WHERE m.user_id = p_user AND (m.workspace_id IS NULL OR m.workspace_id = p_ws))))
$$;

CREATE OR REPLACE FUNCTION bench.can_access_plpgsql(p_agent bigint, p_type text, p_id text,
                                                    p_mode text DEFAULT 'read',
                                                    p_regime text DEFAULT 'autonomous',
                                                    p_user text DEFAULT NULL)
RETURNS boolean LANGUAGE plpgsql STABLE AS $$
DECLARE
  a     record;
  g     text;
  wsg   text;
  need  integer;
  share integer;
BEGIN
  IF p_agent IS NULL OR p_type IS NULL OR p_id IS NULL THEN
    RAISE EXCEPTION 'agent_id, resource_type and resource_id must not be NULL' USING ERRCODE = '22023';
  END IF;
  IF p_mode IS NULL OR p_mode NOT IN ('read', 'edit') THEN
    RAISE EXCEPTION 'invalid access mode "%"', p_mode USING ERRCODE = '22023';
  END IF;
  IF p_regime IS NULL OR p_regime NOT IN ('manual', 'autonomous') THEN
    RAISE EXCEPTION 'invalid regime "%"', p_regime USING ERRCODE = '22023';
  END IF;
  IF p_regime = 'manual' AND p_user IS NULL THEN
    RAISE EXCEPTION 'a manual access check needs a user_id' USING ERRCODE = '22023';
  END IF;
  need := CASE p_mode WHEN 'edit' THEN 2 ELSE 1 END;
  SELECT x.workspace_id, x.owner_id, x.status, x.deleted_at INTO a FROM agent.agents x WHERE x.id = p_agent;
  IF NOT FOUND OR a.deleted_at IS NOT NULL THEN
    RETURN false;
  END IF;
  IF p_regime = 'manual' THEN
    RETURN bench.acl_level(a.workspace_id, p_user, p_type, p_id) >= need;
  END IF;
  IF a.status = 'suspended' THEN
    RETURN false;
  END IF;
  SELECT x.access INTO g FROM agent.access x
   WHERE x.agent_id = p_agent AND x.resource_type = p_type AND x.resource_id = p_id;
  IF g IS NOT NULL THEN
    IF need = 2 AND g = 'read' THEN
      SELECT x.access INTO wsg FROM agent.access x
       WHERE x.agent_id = p_agent AND x.resource_type = 'workspace_shared' AND x.resource_id = '*';
      RETURN coalesce(wsg = 'edit', false)
             AND bench.acl_level(a.workspace_id, NULL, p_type, p_id) >= 2
             AND bench.acl_level(a.workspace_id, a.owner_id, p_type, p_id) >= 2;
    END IF;
    RETURN bench.acl_level(a.workspace_id, a.owner_id, p_type, p_id) >= need;
  END IF;
  SELECT x.access INTO wsg FROM agent.access x
   WHERE x.agent_id = p_agent AND x.resource_type = 'workspace_shared' AND x.resource_id = '*';
  IF wsg IS NULL THEN
    RETURN false;
  END IF;
  share := bench.acl_level(a.workspace_id, NULL, p_type, p_id);
  IF share < 1 OR (need = 2 AND (wsg <> 'edit' OR share < 2)) THEN
    RETURN false;
  END IF;
  RETURN bench.acl_level(a.workspace_id, a.owner_id, p_type, p_id) >= need;
END
$$;
