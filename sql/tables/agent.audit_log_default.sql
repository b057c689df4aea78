CREATE TABLE agent.audit_log_default PARTITION OF agent.audit_log DEFAULT;
