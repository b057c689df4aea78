-- Embedding and mentions grant nothing: an agent mentioned in a page (or whose
-- instructions link or embed the page) is woken, but gets no read of that page.
BEGIN;
SELECT plan(11);

CREATE ROLE ins_mn_app NOLOGIN;
CREATE TABLE public.ins_mn_pages (id text PRIMARY KEY, title text NOT NULL, body text NOT NULL);
GRANT SELECT ON public.ins_mn_pages TO ins_mn_app;
INSERT INTO agent.resource_acl (workspace_id, resource_type, resource_id, principal, access)
VALUES ('ws-mn', 'page', 'pm-secret', 'user:mown', 'edit'), ('ws-mn', 'page', 'pm-granted', 'user:mown', 'read');

SELECT agent.create_agent('ws-mn', 'mown', 'Mentioned agent',
                          '{"instructions": "Follow the runbook in [[page:pm-secret]] (embedded below).",
                            "instruction_page_id": "pm-secret"}') AS aid \gset
INSERT INTO agent.triggers (agent_id, kind, prompt) VALUES (:aid, 'mention', 'answer');
SELECT agent.register_resource_table('page', 'public.ins_mn_pages', 'id', 'title', 'body');
SELECT agent.watch_table('public.ins_mn_pages', 'page', 'id', ARRAY['body']);
SELECT agent.enable_allowlist('public.ins_mn_pages', 'page', 'id');

-- the page mentions (and embeds) the agent (written in the workspace's session)
SET LOCAL pg_agents.workspace = 'ws-mn';
INSERT INTO public.ins_mn_pages VALUES
  ('pm-secret', 'Secret runbook', format('Ask [[agent:%s]] to check this. {{embed agent:%s}}', :aid, :aid)),
  ('pm-granted', 'Granted page', 'nothing here');
SET LOCAL pg_agents.workspace = '';

SELECT is((SELECT count(*) FROM agent.runs WHERE agent_id = :aid AND origin = 'mention'), 1::bigint,
          'the mention wakes the agent');
SELECT is((SELECT trigger_label FROM agent.activity(:aid, 'mown') WHERE origin = 'mention'),
          'mention in page public.ins_mn_pages', 'the run says where it was mentioned');
SELECT is((SELECT count(*) FROM agent.access WHERE agent_id = :aid), 0::bigint, 'no grant was created by the mention or the link');
SELECT ok(NOT agent.can_access(:aid, 'page', 'pm-secret', 'read', 'autonomous'), 'no autonomous read of the mentioning page');
SELECT is((SELECT reason FROM agent.explain_access(:aid, 'page', 'pm-secret', 'read', 'autonomous')), 'not_granted',
          'reason: not_granted, although the owner can read it');
SELECT ok(NOT agent.can_access(:aid, 'page', 'pm-secret', 'edit', 'autonomous'), 'no write either');

-- acting as the agent, the row-level allowlist hides the page
SELECT agent.set_identity('agent:' || :aid, 'ws-mn');
SET LOCAL ROLE ins_mn_app;
SELECT is((SELECT count(*) FROM public.ins_mn_pages WHERE id = 'pm-secret'), 0::bigint,
          'as the agent, the mentioning page is invisible');
SELECT is((SELECT count(*) FROM public.ins_mn_pages WHERE body LIKE '%agent:%'), 0::bigint,
          'a search for the mention finds nothing');
RESET ROLE;
SELECT agent.set_identity(NULL);

-- the same checks do see a real grant (the test can fail)
SELECT agent.grant(:aid, 'page', 'pm-granted', 'read', 'mown');
SELECT ok(agent.can_access(:aid, 'page', 'pm-granted', 'read', 'autonomous'), 'a grant does give the read');
SELECT agent.set_identity('agent:' || :aid, 'ws-mn');
SET LOCAL ROLE ins_mn_app;
SELECT is((SELECT string_agg(id, ',') FROM public.ins_mn_pages), 'pm-granted', 'as the agent, only the granted page is visible');
RESET ROLE;
SELECT agent.set_identity(NULL);

-- duplicating or drafting copies no such access either
SELECT is((SELECT report -> 'copied' -> 'access' FROM agent.duplicate(:aid, 'mown')),
          '[{"access": "read", "resource_id": "pm-granted", "resource_type": "page"}]'::jsonb,
          'a duplicate copies only the real grant');
SELECT * FROM finish();
ROLLBACK;
