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

#include "jansson_prelude.h"

#include "run_int.h"

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
 * The body of the slot's next request: its model, system prompt,
 * conversation and tools, streamed or not, with the agent's scope
 * max_tokens (a positive integer, else the provider's default).
 */
char *
RunPromptBody(Slot *s, bool stream)
{
	json_t	   *mt = json_object_get(s->scope, "max_tokens");
	int			max_tokens;

	max_tokens = json_is_integer(mt) && json_integer_value(mt) > 0 && json_integer_value(mt) <= 10000000
		? (int) json_integer_value(mt) : 0;
	return LlmBuildBody(s->provider, s->model, s->system, s->messages, s->tools, stream, max_tokens);
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
