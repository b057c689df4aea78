-- The key file of the secrets store (issue 30, finding 9): beside
-- config_file when that lies outside the data directory (Debian), else in
-- the data directory with a WARNING at startup and at a session's first
-- agent.set_secret (a base backup would hold
-- key and ciphertext together). The test cluster keeps its configuration in
-- the data directory, so the server's own choice is the warned one.
\set VERBOSITY terse
-- first use in this session: the key lies inside the data directory
SELECT agent.set_secret('keyfile_tap', 'value-1');
-- once per process
SELECT agent.set_secret('keyfile_tap', 'value-2');
SELECT agent.drop_secret('keyfile_tap');
SELECT path LIKE '%/pg_agents.key' AS named_pg_agents_key,
       path = current_setting('data_directory') || '/pg_agents.key' AS in_pgdata,
       inside_data_directory
  FROM agent.secret_key_file();
-- the choice, for a Debian layout and others
SELECT * FROM agent.secret_key_file('', '/etc/postgresql/15/main/postgresql.conf', '/var/lib/postgresql/15/main');
SELECT * FROM agent.secret_key_file('', '/var/lib/postgresql/15/main/postgresql.conf', '/var/lib/postgresql/15/main');
SELECT * FROM agent.secret_key_file('', '/var/lib/postgresql/15/main-conf/postgresql.conf', '/var/lib/postgresql/15/main');
SELECT * FROM agent.secret_key_file('/etc/pg_agents/key', '/var/lib/pg/postgresql.conf', '/var/lib/pg');
SELECT * FROM agent.secret_key_file('keys/pg_agents.key', '/etc/pg/postgresql.conf', '/var/lib/pg');
SELECT * FROM agent.secret_key_file('/var/lib/pg/../pg/k', '/etc/pg/postgresql.conf', '/var/lib/pg/');
-- superusers only: the application and a role with no grants
CREATE ROLE keyfile_app IN ROLE agents_app;
CREATE ROLE keyfile_nobody;
SET ROLE keyfile_app;
SELECT * FROM agent.secret_key_file();
SET ROLE keyfile_nobody;
SELECT * FROM agent.secret_key_file('', '/etc/x.conf', '/data');
RESET ROLE;
DROP ROLE keyfile_app;
DROP ROLE keyfile_nobody;
