-- Search under the allowlist (issue 20): the access triggers also fire per
-- row on agent.agents, agent.access, agent.resource_acl and
-- agent.group_members and describe what
-- a transaction changed, so that a kept readable set survives (or is
-- patched after) an access change that does not concern it.
COMMENT ON FUNCTION agent._access_changed() IS
  'Internal statement and row trigger on the tables agent.can_access reads: marks the transaction as changing access data, and (as a row trigger) what it changes, so that when it commits the readable sets kept by backends are kept, patched or computed afresh.';
CREATE TRIGGER access_changed_row AFTER INSERT OR DELETE
                                 OR UPDATE OF workspace_id, owner_id, status, deleted_at ON agent.agents
  FOR EACH ROW EXECUTE FUNCTION agent._access_changed();
CREATE TRIGGER access_changed_row AFTER INSERT OR UPDATE OR DELETE ON agent.access
  FOR EACH ROW EXECUTE FUNCTION agent._access_changed();
CREATE TRIGGER access_changed_row AFTER INSERT OR UPDATE OR DELETE ON agent.resource_acl
  FOR EACH ROW EXECUTE FUNCTION agent._access_changed();
CREATE TRIGGER access_changed_row AFTER INSERT OR UPDATE OR DELETE ON agent.group_members
  FOR EACH ROW EXECUTE FUNCTION agent._access_changed();
ALTER TABLE agent.agents ENABLE ALWAYS TRIGGER access_changed_row;
ALTER TABLE agent.access ENABLE ALWAYS TRIGGER access_changed_row;
ALTER TABLE agent.resource_acl ENABLE ALWAYS TRIGGER access_changed_row;
ALTER TABLE agent.group_members ENABLE ALWAYS TRIGGER access_changed_row;
