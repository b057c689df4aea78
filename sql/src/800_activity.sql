-- pg_agents: activity, insights, assisted creation and the template gallery
-- (docs/activity.md; plan P3-T04, P3-T12, P3-T13).
--
--   agent.activity / agent.run_detail      what the agent did, per the §7.4 visibility
--   agent.insights (view and function)     counters that equal agent.runs / run_steps
--   agent.generate_draft / agent.draft     a draft run of the workspace's hidden assistant
--   agent.create_from_draft                the only path that saves a draft (triggers disabled)
--   agent.templates                        six gallery drafts, through create_from_draft
--
-- Visibility (decided, docs/activity.md): full sees every run; edit and
-- interact see only the manual runs they asked for; a user without access
-- gets exactly what an unknown agent or run gives (nothing), so that the
-- answer never tells whether the agent exists.

-- ---------------------------------------------------------------------------
-- Helpers
-- ---------------------------------------------------------------------------

CREATE FUNCTION agent._run_failed(status text) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT $1 IN ('failed', 'budget_exceeded', 'expired') $$;
COMMENT ON FUNCTION agent._run_failed(text) IS
  'Internal: whether a run status counts as a failure in insights (failed, budget_exceeded, expired; cancelled is a human choice, not a failure).';

\ir ../functions/agent._trigger_label.sql

-- resource_type / resource_id of a read or write step (worker: input and
-- output both carry them)
CREATE FUNCTION agent._step_resource(p_input jsonb, p_output jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT coalesce(p_output ->> 'resource_type', p_input ->> 'resource_type') || ':'
         || coalesce(p_output ->> 'resource_id', p_input ->> 'resource_id')
$$;
COMMENT ON FUNCTION agent._step_resource(jsonb, jsonb) IS
  'Internal: "type:id" of the resource a read, write or denied step touched (NULL when the step names none).';

CREATE FUNCTION agent._check_user(p_user_id text) RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF p_user_id IS NULL OR p_user_id = '' THEN
    RAISE EXCEPTION 'user_id must not be empty' USING ERRCODE = 'invalid_parameter_value';
  END IF;
END
$$;
COMMENT ON FUNCTION agent._check_user(text) IS 'Internal: refuses (22023) a NULL or empty user id.';

-- A workspace named in an argument (or a draft) must be the session's.
CREATE FUNCTION agent._check_workspace_arg(p_workspace_id text) RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF NOT agent._workspace_ok(p_workspace_id) THEN
    RAISE EXCEPTION 'workspace "%" is not the session''s workspace', p_workspace_id
      USING ERRCODE = 'insufficient_privilege',
            DETAIL = 'Every call of the pg_agents API works inside the session''s workspace (pg_agents.workspace).';
  END IF;
END
$$;
COMMENT ON FUNCTION agent._check_workspace_arg(text) IS
  'Internal: refuses (42501) a workspace id named in an argument or a draft that the session may not name (agent._workspace_ok).';

-- ---------------------------------------------------------------------------
-- Activity
-- ---------------------------------------------------------------------------

\ir ../functions/agent.activity.sql

\ir ../functions/agent.run_detail.sql

-- ---------------------------------------------------------------------------
-- Insights
-- ---------------------------------------------------------------------------

\ir ../views/agent.insights.sql
COMMENT ON COLUMN agent.insights.workspace_id IS 'Workspace of the agent.';
COMMENT ON COLUMN agent.insights.agent_id IS 'Agent.';
COMMENT ON COLUMN agent.insights.agent_name IS 'Agent name now.';
COMMENT ON COLUMN agent.insights.day IS 'UTC date of the runs'' created_at.';
COMMENT ON COLUMN agent.insights.status IS 'Run status.';
COMMENT ON COLUMN agent.insights.runs IS 'Runs of that agent, day and status.';
COMMENT ON COLUMN agent.insights.tokens_in IS 'Sum of the runs'' own prompt tokens.';
COMMENT ON COLUMN agent.insights.tokens_out IS 'Sum of the runs'' own completion tokens.';
COMMENT ON COLUMN agent.insights.tokens IS 'tokens_in + tokens_out.';
COMMENT ON COLUMN agent.insights.avg_duration IS 'Average finished_at - started_at of the runs that have both.';
COMMENT ON COLUMN agent.insights.day_runs IS 'All runs of the agent that day, every status.';
COMMENT ON COLUMN agent.insights.day_failure_rate IS 'Failed, budget_exceeded and expired runs over finished runs of the agent that day (4 decimals); NULL when none finished.';
COMMENT ON COLUMN agent.insights.tokens_cached IS 'Sum of the runs'' own prompt tokens read from the provider''s prompt cache (a part of tokens_in).';

\ir ../functions/agent.insights.sql
COMMENT ON FUNCTION agent.insights(bigint, text, timestamptz, timestamptz) IS
  'Insights of one agent over [since, until) of created_at (full level only, 42501 otherwise, unknown agents and agents of another workspace than the session''s included): one row per section and key — total, status, day and week (UTC), model, origin: runs, succeeded, failed (failed, budget_exceeded, expired), failure_rate over finished runs, own tokens — and resource: granted (agent.access now) versus actually read (read steps of the period), with runs that read it and a state granted_and_read, granted_not_read or read_not_granted; and anti_loop: per trigger that dropped events of the agent''s own writes, the count (detail.self_skipped), the last drop and the last report (not limited to the period).';

-- ---------------------------------------------------------------------------
-- Assisted creation: the hidden assistant, draft runs, create_from_draft
-- ---------------------------------------------------------------------------

CREATE TABLE agent.assistants (
    workspace_id text PRIMARY KEY,
    agent_id     bigint NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT assistants_agent_id_key UNIQUE (agent_id, workspace_id),
    FOREIGN KEY (workspace_id, agent_id) REFERENCES agent.agents (workspace_id, id) ON DELETE CASCADE
);
COMMENT ON TABLE agent.assistants IS
  'The hidden built-in agent of each workspace that runs assisted-creation drafts (owner pg_agents:assistant: no user holds a level on it, so it is listed nowhere; its draft runs are manual runs acting as the requesting user).';
COMMENT ON COLUMN agent.assistants.workspace_id IS 'Workspace.';
COMMENT ON COLUMN agent.assistants.agent_id IS 'The assistant agent of that workspace.';
COMMENT ON COLUMN agent.assistants.created_at IS 'When it was created (on the workspace''s first draft).';

CREATE FUNCTION agent._assistant_instructions() RETURNS text
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT $i$You help a user create a custom agent from a short description.

1. For every page, collection or other resource the description names, call search_resources with the words that name it (and its resource_type, e.g. "collection" or "page", when the description says which). You only ever see what the user may read.
2. Then answer with ONE JSON object and nothing else (no prose, no code fence):
{"name": "<short agent name>",
 "instructions": "<what the agent should do, as instructions to it>",
 "triggers": [<zero or more triggers>],
 "access": [{"resource_type": "<type from a search result>", "resource_id": "<id from a search result>", "access": "read" or "edit"}]}
A trigger is {"kind": "schedule", "schedule": "<5-field cron>", "timezone": "UTC", "prompt": "<task>"}
or {"kind": "event", "event_name": "collection.row_added", "resource_type": "collection", "resource_id": "<id from a search result or null>", "filter": {}, "prompt": "<task>"}.
Propose access only to resources a search returned in this conversation; never invent or guess an id. If nothing was found, "access" is []. Never write or change anything.$i$ $$;
COMMENT ON FUNCTION agent._assistant_instructions() IS
  'Internal: the instructions of the assistant agent: search for what the description names, answer one JSON draft {name, instructions, triggers, access}, propose only what a search found.';

\ir ../functions/agent._assistant_for.sql

\ir ../functions/agent.generate_draft.sql
REVOKE ALL ON FUNCTION agent.generate_draft(text, text, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.generate_draft(text, text, text) IS
  'Queues a draft run (origin draft, manual regime acting as user_id, so its searches see only what the user may read) of the workspace''s hidden assistant agent; the worker and the LLM turn the description into a draft, read with agent.draft(run_id). Nothing else is saved. workspace_id defaults to the session''s workspace (pg_agents.workspace) and must be it (42501 otherwise). Returns the run id.';

-- What is wrong with one trigger of a draft (NULL when it is valid).
\ir ../functions/agent._draft_trigger_problem.sql

-- The JSON object in a model's answer: the whole text, a fenced block, or
-- the outermost {...}; NULL when there is none.
CREATE FUNCTION agent._draft_json(p_text text) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  c text;
  j jsonb;
BEGIN
  IF p_text IS NULL THEN
    RETURN NULL;
  END IF;
  FOREACH c IN ARRAY ARRAY[p_text,
                           substring(p_text FROM '```(?:json)?\s*(.*?)\s*```'),
                           substring(p_text FROM '(?s)(\{.*\})')] LOOP
    CONTINUE WHEN c IS NULL;
    BEGIN
      j := c::jsonb;
      IF jsonb_typeof(j) = 'object' THEN
        RETURN j;
      END IF;
    EXCEPTION WHEN others THEN
      NULL;
    END;
  END LOOP;
  RETURN NULL;
END
$$;
COMMENT ON FUNCTION agent._draft_json(text) IS
  'Internal: the JSON object of a model answer (whole text, fenced block or outermost braces), NULL when none parses.';

\ir ../functions/agent.draft.sql

\ir ../functions/agent.create_from_draft.sql
REVOKE ALL ON FUNCTION agent.create_from_draft(jsonb, text) FROM PUBLIC;
COMMENT ON FUNCTION agent.create_from_draft(jsonb, text) IS
  'Saves a draft (from agent.draft, a template or hand-written) as an agent owned by by_user, after validating it again: keys and shapes, every grant re-checked against by_user''s own ACL (42501), every trigger validated (cron via agent.cron_valid, event fields, filter via agent.validate_filter; a watched resource must be readable by by_user). Every trigger is created disabled. The agent is created in the session''s workspace: a draft''s workspace_id must be it (42501 otherwise). Writes version 1 and an audit row; returns the agent id.';

-- ---------------------------------------------------------------------------
-- The gallery
-- ---------------------------------------------------------------------------

CREATE TABLE agent.templates (
    key         text PRIMARY KEY CHECK (key ~ '^[a-z][a-z0-9_]{0,62}$'),
    position    integer NOT NULL,
    name        text NOT NULL,
    description text NOT NULL,
    draft       jsonb NOT NULL CHECK (jsonb_typeof(draft) = 'object' AND (NOT (draft ? 'access') OR draft -> 'access' = '[]'))
);
COMMENT ON TABLE agent.templates IS
  'Gallery of agent templates: each is a draft that goes through agent.create_from_draft (triggers created disabled). A template never carries access: the user chooses it.';
COMMENT ON COLUMN agent.templates.key IS 'Stable template key.';
COMMENT ON COLUMN agent.templates.position IS 'Display order.';
COMMENT ON COLUMN agent.templates.name IS 'Display name.';
COMMENT ON COLUMN agent.templates.description IS 'What the agent does, in one sentence.';
COMMENT ON COLUMN agent.templates.draft IS 'The draft {name, instructions, triggers, access: [], template}.';
GRANT SELECT ON agent.templates TO PUBLIC;

INSERT INTO agent.templates (key, position, name, description, draft) VALUES
('ticket_triage', 1, 'Ticket triage',
 'Sets priority, category and owner of every new row of a ticket collection.',
 '{"template": "ticket_triage", "name": "Ticket triage",
   "instructions": "When a ticket is added, read it, set its priority (low, normal, high, urgent) and category from its content, and suggest an owner. Explain your choice in one sentence in the ticket. Never close or delete a ticket.",
   "triggers": [{"kind": "event", "event_name": "collection.row_added", "resource_type": "collection", "resource_id": null,
                 "prompt": "A new ticket was added: triage it."}],
   "access": []}'),
('meeting_follow_up', 2, 'Meeting follow-up',
 'Turns each meeting summary into action items and a follow-up note.',
 '{"template": "meeting_follow_up", "name": "Meeting follow-up",
   "instructions": "When a meeting is summarized, extract decisions and action items (owner, due date), and write a short follow-up note for the participants.",
   "triggers": [{"kind": "event", "event_name": "meeting.summarized", "resource_type": "meeting", "resource_id": null,
                 "prompt": "A meeting was summarized: write its follow-up."}],
   "access": []}'),
('weekly_digest', 3, 'Weekly digest',
 'Every Monday morning, summarizes what changed last week in the pages it may read.',
 '{"template": "weekly_digest", "name": "Weekly digest",
   "instructions": "Every Monday, summarize what changed during the last seven days in the resources you may read: new items, notable updates, open questions. Keep it under 300 words.",
   "triggers": [{"kind": "schedule", "schedule": "0 9 * * 1", "timezone": "UTC",
                 "prompt": "Write the weekly digest."}],
   "access": []}'),
('stale_draft_cleanup', 4, 'Stale draft cleanup',
 'Every day, lists drafts untouched for 30 days and asks their authors to finish or archive them.',
 '{"template": "stale_draft_cleanup", "name": "Stale draft cleanup",
   "instructions": "Every day, find drafts not updated for 30 days. For each, add a comment asking its author to finish or archive it. Never delete anything; archiving needs the author.",
   "triggers": [{"kind": "schedule", "schedule": "0 6 * * *", "timezone": "UTC",
                 "prompt": "Look for stale drafts."}],
   "access": []}'),
('mention_responder', 5, 'Mention responder',
 'Answers when someone mentions the agent in a page or comment.',
 '{"template": "mention_responder", "name": "Mention responder",
   "instructions": "When you are mentioned, answer the question asked in the mention, using only the resources you may read; say so when you cannot see what is needed.",
   "triggers": [{"kind": "mention", "prompt": "You were mentioned: answer."}],
   "access": []}'),
('data_quality_watcher', 6, 'Data-quality watcher',
 'Checks rows as they are added or changed and flags missing or inconsistent fields.',
 '{"template": "data_quality_watcher", "name": "Data-quality watcher",
   "instructions": "When a row is added or changed, check that required fields are filled and consistent (dates in order, known statuses, well-formed e-mails). Flag problems in a comment; never change the data yourself.",
   "triggers": [{"kind": "event", "event_name": "collection.row_added", "resource_type": "collection", "resource_id": null,
                 "prompt": "A row was added: check its quality."},
                {"kind": "event", "event_name": "collection.property_updated", "resource_type": "collection", "resource_id": null,
                 "prompt": "A row changed: check its quality."}],
   "access": []}');
