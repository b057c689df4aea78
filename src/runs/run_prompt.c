/*-------------------------------------------------------------------------
 *
 * run_prompt.c
 *		What the model of a run in flight receives, and what is recorded of
 *		each call: the context of a claimed run (its system prompt, first
 *		messages and tools, assembled by context.c, with the MCP and teams
 *		tools added), the body of each request, and the input and output of
 *		the llm step that records a reply.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "util/jansson_prelude.h"

#include "run_int.h"

#include "context.h"
#include "util/guc.h"

#include "utils/memutils.h"


/*
 * The context of a claimed run (context.c): the slot's system prompt (kept
 * when a resumed run saved the one it started with), its tools, the first
 * messages of a fresh run, whether it may delegate.  Inside the claim's
 * unit.  Returns NULL, or why the context could not be assembled.
 */
char *
RunPromptAssemble(Slot *s, const ClaimedRun *row)
{
	ToolRun		tr = RunSlotToolRun(s);
	ContextRun	cr;
	json_t	   *input;
	char	   *err;

	input = row->input ? json_loads(row->input, 0, NULL) : NULL;
	if (input == NULL)
		input = json_object();
	/* a chat run of agent.send_message: its deltas name the conversation */
	if (strcmp(s->regime, "manual") == 0 &&
		json_is_integer(json_object_get(input, "conversation_id")))
		s->conversation_id = json_integer_value(json_object_get(input, "conversation_id"));
	memset(&cr, 0, sizeof(cr));
	cr.agent_name = row->agent_name;
	cr.instructions = row->instructions;
	cr.depth = row->depth;
	cr.page_id = row->page_id;
	cr.delegation_listed = s->can_delegate;
	cr.skills_possible = row->skills_possible;
	cr.fresh = json_array_size(s->messages) == 0;
	cr.provider = s->provider;
	cr.input = input;
	cr.trigger_prompt = row->trigger_prompt;
	cr.origin = row->origin;
	s->tools = ToolsDefinitions();
	cr.tools = s->tools;
	cr.messages = s->messages;
	err = ContextAssemble(&tr, &cr);
	json_decref(input);
	if (err)
		return err;
	s->can_delegate = cr.can_delegate;
	if (s->system == NULL)
		s->system = cr.system ? MemoryContextStrdup(s->cxt, cr.system) : NULL;
	ToolsAddRunDefinitions(s->tools, s->agent_id, s->run_id, s->can_delegate);
	return NULL;
}

/*
 * A tool result (built-in, MCP, a child's) as the model is given it:
 * NULL when it is within pg_agents.max_tool_result_bytes, else a palloc'd
 * copy cut there (at a UTF-8 character boundary) that says the cut.
 */
char *
RunResultCapped(const char *content)
{
	size_t		len = strlen(content);
	size_t		keep = (size_t) pg_agents_max_tool_result_bytes;

	if (len <= keep)
		return NULL;
	while (keep > 0 && (((unsigned char) content[keep]) & 0xC0) == 0x80)
		keep--;
	return psprintf("%.*s\n[truncated: %zu bytes of %zu; pg_agents.max_tool_result_bytes]",
					(int) keep, content, keep, len);
}

/*
 * The tool results in one message of the conversation replaced by a note
 * saying so (OpenAI: a "tool" message; Anthropic: the tool_result blocks of
 * a user message); returns the bytes taken out (0: nothing to elide).
 */
static size_t
ElideToolResults(json_t *msg)
{
	json_t	   *content = json_object_get(msg, "content");
	const char *role = json_string_value(json_object_get(msg, "role"));
	size_t		saved = 0;
	size_t		i;
	json_t	   *b;

	if (role && strcmp(role, "tool") == 0 && json_is_string(content) &&
		json_string_length(content) > 200)
	{
		size_t		n = json_string_length(content);

		json_object_set_new(msg, "content",
							json_string(psprintf("[elided: an older tool result of %zu bytes, to keep the request "
												 "under pg_agents.max_request_bytes]", n)));
		return n;
	}
	if (role == NULL || strcmp(role, "user") != 0 || !json_is_array(content))
		return 0;
	json_array_foreach(content, i, b)
	{
		json_t	   *c = json_object_get(b, "content");
		size_t		n;

		if (!json_is_string(c) || json_string_length(c) <= 200 ||
			!json_is_string(json_object_get(b, "type")) ||
			strcmp(json_string_value(json_object_get(b, "type")), "tool_result") != 0)
			continue;
		n = json_string_length(c);
		json_object_set_new(b, "content",
							json_string(psprintf("[elided: an older tool result of %zu bytes, to keep the request "
												 "under pg_agents.max_request_bytes]", n)));
		saved += n;
	}
	return saved;
}

/*
 * The body of the slot's next request: its model, system prompt,
 * conversation and tools, streamed or not, with the agent's scope
 * max_tokens (a positive integer, else the provider's default).  A body
 * over pg_agents.max_request_bytes is built again from a copy of the
 * conversation whose oldest tool results are elided (the note says so),
 * until it fits or none is left; the run's saved conversation is kept whole.
 */
char *
RunPromptBody(Slot *s, bool stream)
{
	json_t	   *mt = json_object_get(s->scope, "max_tokens");
	int			max_tokens;
	char	   *body;
	size_t		cap = (size_t) pg_agents_max_request_bytes;
	size_t		len;
	size_t		i = 0;
	json_t	   *copy;

	max_tokens = json_is_integer(mt) && json_integer_value(mt) > 0 && json_integer_value(mt) <= 10000000
		? (int) json_integer_value(mt) : 0;
	body = LlmBuildBody(s->provider, s->model, s->system, s->messages, s->tools, stream, max_tokens);
	if (body == NULL || (len = strlen(body)) <= cap)
		return body;
	copy = json_deep_copy(s->messages);
	while (len > cap && i < json_array_size(copy))
	{
		size_t		est = len;

		/* elide from the oldest until the estimate fits, then measure again */
		for (; i < json_array_size(copy) && est > cap; i++)
		{
			size_t		saved = ElideToolResults(json_array_get(copy, i));

			est = saved < est ? est - saved : 0;
		}
		free(body);
		body = LlmBuildBody(s->provider, s->model, s->system, copy, s->tools, stream, max_tokens);
		if (body == NULL)
			break;
		len = strlen(body);
	}
	json_decref(copy);
	return body;
}

/* input and output of the llm step that records a reply */
void
RunPromptStepJson(Slot *s, const LlmReply *r, json_t **in, json_t **out)
{
	json_t	   *names = json_array();
	size_t		i;
	json_t	   *t;

	json_array_foreach(s->tools, i, t)
		json_array_append(names, json_object_get(t, "name"));
	*in = json_pack("{s:s,s:s,s:i,s:o}", "provider", s->provider == LLM_ANTHROPIC ? "anthropic" : "openai",
					"model", s->model, "messages", (int) json_array_size(s->messages), "tools", names);
	*out = json_pack("{s:s?,s:O,s:s?,s:{s:I,s:I}}", "text", r->text, "tool_calls", r->calls,
					 "stop", r->stop, "usage", "in", (json_int_t) r->tokens_in,
					 "out", (json_int_t) r->tokens_out);
	/* cache and reasoning counts only when the provider reported them */
	if (r->tokens_cached > 0)
		json_object_set_new(json_object_get(*out, "usage"), "cached", json_integer(r->tokens_cached));
	if (r->tokens_cache_write > 0)
		json_object_set_new(json_object_get(*out, "usage"), "cache_write", json_integer(r->tokens_cache_write));
	if (r->tokens_reasoning > 0)
		json_object_set_new(json_object_get(*out, "usage"), "reasoning", json_integer(r->tokens_reasoning));
	if (r->refusal)
		json_object_set_new(*out, "refusal", json_string(r->refusal));
}
