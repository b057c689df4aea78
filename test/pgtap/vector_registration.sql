-- Semantic search, registration: agent.register_resource_table names an
-- embedding column where pgvector is installed (17 and 18 in the matrix),
-- and says clearly that the feature is absent where it is not (15 on
-- Debian 12, which has no postgresql-15-pgvector).  Registering stays a
-- superuser's: the application, a role with no grants and an agent session
-- cannot, in any workspace.
BEGIN;
SELECT plan(14);

CREATE ROLE vreg_app NOLOGIN IN ROLE agents_app;
CREATE ROLE vreg_nobody NOLOGIN;
CREATE SCHEMA vreg;
GRANT USAGE ON SCHEMA vreg TO vreg_app, vreg_nobody;
INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES
  (980601, 'ws-vreg-a', 'u1', 'vector agent a'), (980602, 'ws-vreg-b', 'u2', 'vector agent b');

-- pgvector where this PostgreSQL has it (a DO block: the statement must not fail where it is absent)
CREATE TEMP TABLE vreg_has (v boolean);
INSERT INTO vreg_has SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector');
DO $$
BEGIN
  IF (SELECT v FROM vreg_has) THEN
    CREATE EXTENSION IF NOT EXISTS vector;
    EXECUTE 'CREATE TABLE vreg.docs (id bigint PRIMARY KEY, title text, body text, emb_arr real[], emb public.vector(3))';
  ELSE
    CREATE TABLE vreg.docs (id bigint PRIMARY KEY, title text, body text, emb_arr real[]);
  END IF;
END
$$;
SELECT diag(CASE WHEN v THEN 'pgvector is installed: registration with an embedding column is tested'
                 ELSE 'pgvector is not installed: the clear error is tested, the rest skipped' END)
  FROM vreg_has;

-- Runs a statement as a role (and an agent identity, or none) in a
-- workspace; returns the SQLSTATE and message, or 'ok'.
CREATE FUNCTION pg_temp.as_role(p_role text, p_actor text, p_ws text, q text) RETURNS text
LANGUAGE plpgsql AS $f$
DECLARE r text := 'ok';
BEGIN
  PERFORM set_config('pg_agents.workspace', p_ws, true);
  PERFORM set_config('pg_agents.actor', coalesce(p_actor, ''), true);
  PERFORM set_config('role', p_role, true);
  BEGIN
    EXECUTE q;
  EXCEPTION WHEN OTHERS THEN
    r := SQLSTATE || ' ' || SQLERRM;
  END;
  PERFORM set_config('role', 'none', true);
  PERFORM set_config('pg_agents.actor', '', true);
  RETURN r;
END
$f$;

-- ------------------------------------------------------------ everywhere
SELECT lives_ok($$SELECT agent.register_resource_table('vdoc', 'vreg.docs', 'id', 'title', 'body')$$,
                'registration without an embedding column works with or without pgvector');
SELECT is((SELECT embedding_column FROM agent.resource_tables WHERE tbl = 'vreg.docs'::regclass), NULL,
          'no embedding column is recorded');
SELECT CASE WHEN v
  THEN throws_ok($$SELECT agent.register_resource_table('vdoc', 'vreg.docs', 'id', 'title', 'body', 'emb_arr')$$,
                 '42804', 'column "emb_arr" of relation "vreg.docs" is not of type vector',
                 'a column of another type is refused (42804)')
  ELSE throws_ok($$SELECT agent.register_resource_table('vdoc', 'vreg.docs', 'id', 'title', 'body', 'emb_arr')$$,
                 '0A000', 'semantic search needs the pgvector extension',
                 'without pgvector, naming an embedding column is refused: feature_not_supported (0A000)')
  END FROM vreg_has;
SELECT CASE WHEN v
  THEN throws_ok($$SELECT agent.register_resource_table('vdoc', 'vreg.docs', 'id', 'title', 'body', 'nope')$$,
                 '42703', 'column "nope" of relation "vreg.docs" does not exist', 'an unknown embedding column is 42703')
  ELSE throws_ok($$SELECT agent.register_resource_table('vdoc', 'vreg.docs', 'id', 'title', 'body', 'nope')$$,
                 '0A000', 'semantic search needs the pgvector extension', 'without pgvector, any embedding column is 0A000')
  END FROM vreg_has;
-- the error says what to do
CREATE FUNCTION pg_temp.hint_of(q text) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE h text;
BEGIN
  EXECUTE q;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS h = PG_EXCEPTION_HINT;
  RETURN h;
END
$f$;
SELECT CASE WHEN v
  THEN skip('pgvector is installed: no hint to check', 1)
  ELSE matches(pg_temp.hint_of($$SELECT agent.register_resource_table('vdoc', 'vreg.docs', 'id', 'title', 'body', 'emb_arr')$$),
               '^Install pgvector .*CREATE EXTENSION vector', 'the hint says to install pgvector')
  END FROM vreg_has;
SELECT is((SELECT embedding_column FROM agent.resource_tables WHERE tbl = 'vreg.docs'::regclass), NULL,
          'a refused registration changes nothing');

-- ------------------------------------------------------------ with pgvector
SELECT CASE WHEN v
  THEN lives_ok($$SELECT agent.register_resource_table('vdoc', 'vreg.docs', 'id', 'title', 'body', 'emb')$$,
                'registration with an embedding column of type vector')
  ELSE skip('pgvector is not installed', 1) END FROM vreg_has;
SELECT CASE WHEN v
  THEN is((SELECT embedding_column::text FROM agent.resource_tables WHERE tbl = 'vreg.docs'::regclass), 'emb',
          'the embedding column is recorded')
  ELSE skip('pgvector is not installed', 1) END FROM vreg_has;
SELECT CASE WHEN v
  THEN lives_ok($$SELECT agent.register_resource_table('vdoc', 'vreg.docs', 'id', 'title', 'body', embedding_column => 'emb')$$,
                'by name, too')
  ELSE skip('pgvector is not installed', 1) END FROM vreg_has;
SELECT lives_ok($$SELECT agent.register_resource_table('vdoc', 'vreg.docs', 'id', 'title', 'body')$$,
                're-registering without one');
SELECT is((SELECT embedding_column FROM agent.resource_tables WHERE tbl = 'vreg.docs'::regclass), NULL,
          'replaces the row: no embedding column any more');

-- ------------------------------------------------------------ who may register
SELECT matches(pg_temp.as_role('vreg_app', NULL, 'ws-vreg-a',
               $$SELECT agent.register_resource_table('vdoc', 'vreg.docs', 'id', 'title', 'body', 'emb_arr')$$),
               '^42501 permission denied for function register_resource_table',
               'the application cannot register (superuser only), in workspace a');
SELECT matches(pg_temp.as_role('vreg_nobody', NULL, 'ws-vreg-b',
               $$SELECT agent.register_resource_table('vdoc', 'vreg.docs', 'id', 'title', 'body', 'emb_arr')$$),
               '^42501 permission denied for function register_resource_table',
               'a role with no grants cannot, in workspace b');
SELECT matches(pg_temp.as_role('agents_tool', 'agent:980602', 'ws-vreg-b',
               $$SELECT agent.register_resource_table('vdoc', 'vreg.docs', 'id', 'title', 'body', 'emb_arr')$$),
               '^42501 permission denied for function register_resource_table',
               'an agent session cannot');

SELECT * FROM finish();
ROLLBACK;
