/*-------------------------------------------------------------------------
 *
 * llm.c
 *		The two LLM wire formats, with jansson:
 *		  - OpenAI-compatible chat completions  (<llm_url>/chat/completions)
 *		  - Anthropic Messages                  (<llm_url>/messages)
 *
 * A run keeps its conversation in the provider's own message format (a
 * jansson array); this file builds request bodies from it, parses replies
 * into a neutral LlmReply and appends tool results the way each provider
 * expects them.  Nothing here touches the database or ereports while it
 * holds jansson objects it has not handed over.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "util/jansson_prelude.h"

#include "access/xact.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"

#include "llm.h"
#include "secrets.h"
#include "util/guc.h"

PG_FUNCTION_INFO_V1(pg_agents_llm_url_allowed);

#define ANTHROPIC_VERSION	"2023-06-01"
#define ANTHROPIC_MAX_TOKENS 4096

/* the wire format a provider name stands for (empty: openai); false when unknown */
bool
LlmParseProvider(const char *name, LlmProvider *out)
{
	if (name == NULL || name[0] == '\0' || pg_strcasecmp(name, "openai") == 0)
		*out = LLM_OPENAI;
	else if (pg_strcasecmp(name, "anthropic") == 0)
		*out = LLM_ANTHROPIC;
	else
		return false;
	return true;
}

/* palloc'd URL: the base URL without trailing slashes, plus the endpoint */
char *
LlmEndpoint(LlmProvider provider, const char *base_url)
{
	int			len = strlen(base_url);

	while (len > 0 && base_url[len - 1] == '/')
		len--;
	return psprintf("%.*s%s", len, base_url,
					provider == LLM_ANTHROPIC ? "/messages" : "/chat/completions");
}

/* length of a URL without its trailing slashes and surrounding blanks */
static const char *
UrlTrim(const char *u, int len, int *outlen)
{
	while (len > 0 && (*u == ' ' || *u == '\t'))
		u++, len--;
	while (len > 0 && (u[len - 1] == ' ' || u[len - 1] == '\t' || u[len - 1] == '/'))
		len--;
	*outlen = len;
	return u;
}

/*
 * Whether two base URLs are the same endpoint: byte for byte, once
 * trailing slashes are trimmed (LlmEndpoint trims them too).
 */
bool
LlmUrlEqual(const char *a, const char *b)
{
	int			la;
	int			lb;

	if (a == NULL || b == NULL)
		return false;
	a = UrlTrim(a, strlen(a), &la);
	b = UrlTrim(b, strlen(b), &lb);
	return la > 0 && la == lb && memcmp(a, b, la) == 0;
}

/*
 * Whether an agent's settings may name this LLM endpoint (scope.llm_url):
 * pg_agents.llm_url itself, or an entry of pg_agents.llm_url_allowlist
 * (comma-separated base URLs, exact match after trimming trailing
 * slashes).  Both settings are superuser-only.
 */
bool
LlmUrlAllowed(const char *url)
{
	const char *p = pg_agents_llm_url_allowlist;
	int			lu;
	const char *u;

	if (url == NULL)
		return false;
	u = UrlTrim(url, strlen(url), &lu);
	if (lu == 0)
		return false;
	if (LlmUrlEqual(url, pg_agents_llm_url))
		return true;
	while (p && *p)
	{
		const char *comma = strchr(p, ',');
		int			len = comma ? (int) (comma - p) : (int) strlen(p);
		int			le;
		const char *e = UrlTrim(p, len, &le);

		if (le == lu && memcmp(e, u, lu) == 0)
			return true;
		p = comma ? comma + 1 : NULL;
	}
	return false;
}

/*
 * The API key of pg_agents.llm_api_key goes only to pg_agents.llm_url: an
 * agent's own endpoint (even allowlisted) is called without a key.
 */
const char *
LlmKeyFor(const char *url)
{
	if (!LlmUrlEqual(url, pg_agents_llm_url))
		return NULL;
	/* the key may be ${secret:NAME} (the worker's chat requests: providers.c) */
	if (SecretsHasReference(pg_agents_llm_api_key))
	{
		char	   *err;

		return IsTransactionState() ? SecretsExpand(pg_agents_llm_api_key, &err) : NULL;
	}
	return pg_agents_llm_api_key;
}

/* agent._llm_url_allowed(text): LlmUrlAllowed for the settings checks */
Datum
pg_agents_llm_url_allowed(PG_FUNCTION_ARGS)
{
	char	   *url = text_to_cstring(PG_GETARG_TEXT_PP(0));

	PG_RETURN_BOOL(LlmUrlAllowed(url));
}

/* malloc'd header list (libcurl's); the key is never logged or recorded */
struct curl_slist *
LlmHeaders(LlmProvider provider, const char *api_key)
{
	struct curl_slist *h = NULL;
	char		buf[1024];

	h = curl_slist_append(h, "Content-Type: application/json");
	h = curl_slist_append(h, "Accept: application/json");
	h = curl_slist_append(h, "Expect:");
	if (provider == LLM_ANTHROPIC)
	{
		h = curl_slist_append(h, "anthropic-version: " ANTHROPIC_VERSION);
		if (api_key && api_key[0])
		{
			snprintf(buf, sizeof(buf), "x-api-key: %s", api_key);
			h = curl_slist_append(h, buf);
		}
	}
	else if (api_key && api_key[0])
	{
		snprintf(buf, sizeof(buf), "Authorization: Bearer %s", api_key);
		h = curl_slist_append(h, buf);
	}
	explicit_bzero(buf, sizeof(buf));
	return h;
}

/* neutral tools [{name, description, parameters}] in the provider's shape (new ref) */
static json_t *
LlmToolsFor(LlmProvider provider, json_t *neutral)
{
	json_t	   *out = json_array();
	size_t		i;
	json_t	   *t;

	json_array_foreach(neutral, i, t)
	{
		json_t	   *name = json_object_get(t, "name");
		json_t	   *desc = json_object_get(t, "description");
		json_t	   *params = json_object_get(t, "parameters");

		if (provider == LLM_ANTHROPIC)
			json_array_append_new(out, json_pack("{s:O,s:O,s:O}", "name", name,
												 "description", desc, "input_schema", params));
		else
			json_array_append_new(out, json_pack("{s:s,s:{s:O,s:O,s:O}}", "type", "function",
												 "function", "name", name, "description", desc,
												 "parameters", params));
	}
	return out;
}

/*
 * Anthropic prompt caching (docs/worker.md, "Prompt caching"): the system
 * prompt and the tool list are the stable prefix of every request of a
 * run.  When pg_agents.llm_prompt_cache is on and they are estimated at
 * LLM_CACHE_MIN_TOKENS or more (characters / 4; Anthropic caches nothing
 * shorter than 1024 tokens, 2048 on Haiku models), the last tool and the
 * system prompt carry a cache_control breakpoint: 2 of the 4 allowed.
 */
#define LLM_CACHE_MIN_TOKENS	1024

/* whether the system prompt and tools are long enough for the prompt cache to pay */
static bool
CacheWorthIt(const char *system, json_t *tools)
{
	size_t		chars = system ? strlen(system) : 0;

	if (!pg_agents_llm_prompt_cache)
		return false;
	if (tools && json_array_size(tools) > 0)
	{
		char	   *t = json_dumps(tools, JSON_COMPACT);

		if (t)
		{
			chars += strlen(t);
			free(t);
		}
	}
	return chars / 4 >= LLM_CACHE_MIN_TOKENS;
}

/*
 * malloc'd request body; stream asks for server-sent events; max_tokens
 * (the agent's scope max_tokens, 0 when unset) bounds the reply: Anthropic
 * max_tokens (ANTHROPIC_MAX_TOKENS by default, the field is required),
 * OpenAI max_completion_tokens (not sent by default).
 */
char *
LlmBuildBody(LlmProvider provider, const char *model, const char *system,
			 json_t *messages, json_t *tools, bool stream, int max_tokens)
{
	json_t	   *req = json_object();
	char	   *s;
	bool		cache = false;

	json_object_set_new(req, "model", json_string(model));
	if (provider == LLM_ANTHROPIC)
	{
		cache = CacheWorthIt(system, tools);
		json_object_set_new(req, "max_tokens", json_integer(max_tokens > 0 ? max_tokens : ANTHROPIC_MAX_TOKENS));
		if (system && system[0] && cache)
			json_object_set_new(req, "system",
								json_pack("[{s:s,s:s,s:{s:s}}]", "type", "text", "text", system,
										  "cache_control", "type", "ephemeral"));
		else if (system && system[0])
			json_object_set_new(req, "system", json_string(system));
		json_object_set(req, "messages", messages);
	}
	else
	{
		json_t	   *all = json_array();

		if (system && system[0])
			json_array_append_new(all, json_pack("{s:s,s:s}", "role", "system", "content", system));
		json_array_extend(all, messages);
		json_object_set_new(req, "messages", all);
		if (max_tokens > 0)
			json_object_set_new(req, "max_completion_tokens", json_integer(max_tokens));
	}
	if (tools && json_array_size(tools) > 0)
	{
		json_t	   *t = LlmToolsFor(provider, tools);

		if (cache)
			json_object_set_new(json_array_get(t, json_array_size(t) - 1), "cache_control",
								json_pack("{s:s}", "type", "ephemeral"));
		json_object_set_new(req, "tools", t);

		/*
		 * tool_choice stays the providers' default (auto): a forced call
		 * would never let a run end.  With pg_agents.max_tool_calls_per_turn
		 * = 1 the model is told to ask for one call at a time, since a reply
		 * with more would fail the run.
		 */
		if (pg_agents_max_tool_calls_per_turn == 1)
		{
			if (provider == LLM_ANTHROPIC)
				json_object_set_new(req, "tool_choice",
									json_pack("{s:s,s:b}", "type", "auto", "disable_parallel_tool_use", 1));
			else
				json_object_set_new(req, "parallel_tool_calls", json_false());
		}
	}
	if (stream)
	{
		json_object_set_new(req, "stream", json_true());
		if (provider == LLM_OPENAI)
			json_object_set_new(req, "stream_options", json_pack("{s:b}", "include_usage", 1));
	}
	s = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	return s;
}

/*
 * Whether a call is streamed when no named provider decides (see below):
 * pg_agents.llm_stream: the default provider and agents with their own
 * scope llm_url (a named provider's "stream" setting decides for its agents,
 * in run_calls.c's RunCallStart).
 */
bool
LlmStreamEnabled(const char *url)
{
	(void) url;
	return pg_agents_llm_stream;
}

/* a user message of text appended to the conversation, in the provider's shape */
void
LlmAppendUser(LlmProvider provider, json_t *messages, const char *text)
{
	json_array_append_new(messages, json_pack("{s:s,s:s}", "role", "user", "content", text));
}

/* results: [{id, content (string), is_error}] */
void
LlmAppendToolResults(LlmProvider provider, json_t *messages, json_t *results)
{
	size_t		i;
	json_t	   *r;

	if (provider == LLM_ANTHROPIC)
	{
		json_t	   *blocks = json_array();

		json_array_foreach(results, i, r)
			json_array_append_new(blocks,
								  json_pack("{s:s,s:O,s:O,s:b}", "type", "tool_result",
											"tool_use_id", json_object_get(r, "id"),
											"content", json_object_get(r, "content"),
											"is_error", json_is_true(json_object_get(r, "is_error"))));
		json_array_append_new(messages, json_pack("{s:s,s:o}", "role", "user", "content", blocks));
	}
	else
	{
		json_array_foreach(results, i, r)
			json_array_append_new(messages,
								  json_pack("{s:s,s:O,s:O}", "role", "tool",
											"tool_call_id", json_object_get(r, "id"),
											"content", json_object_get(r, "content")));
	}
}

/* a palloc'd copy of a json string, NULL for anything else */
static char *
JsonStr(json_t *v)
{
	return json_is_string(v) ? pstrdup(json_string_value(v)) : NULL;
}

/*
 * Usage is untrusted input (issue 36): a count the provider reports is an
 * integer from 0 to LLM_MAX_TOKEN_COUNT, or absent (null: 0).  Anything
 * else fails the run with "the provider reported invalid usage: ..."
 * (agent.run_error_code: llm_invalid_usage), never wrapped nor cast.
 */
#define USAGE_ERROR		"the provider reported invalid usage: "

/* a short text of a json value for an error message (palloc'd) */
static char *
JsonShort(json_t *v)
{
	char	   *d = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	char	   *out;

	if (d == NULL)
		return pstrdup("?");
	out = strlen(d) > 40 ? psprintf("%.40s...", d) : pstrdup(d);
	free(d);
	return out;
}

/* one count of the usage object; false (with *err) when it is not a valid count */
static bool
UsageCount(json_t *usage, const char *section, const char *key, int64 *out, char **err)
{
	json_t	   *obj = section ? json_object_get(usage, section) : usage;
	json_t	   *v;
	json_int_t	n;

	*out = 0;
	if (section && obj != NULL && !json_is_null(obj) && !json_is_object(obj))
	{
		*err = psprintf(USAGE_ERROR "%s is not an object (%s)", section, JsonShort(obj));
		return false;
	}
	v = json_object_get(obj, key);
	if (v == NULL || json_is_null(v))
		return true;
	if (!json_is_integer(v))
	{
		*err = psprintf(USAGE_ERROR "%s%s%s is not an integer (%s)", section ? section : "",
						section ? "." : "", key, JsonShort(v));
		return false;
	}
	n = json_integer_value(v);
	if (n < 0 || n > LLM_MAX_TOKEN_COUNT)
	{
		if (n < 0)
			*err = psprintf(USAGE_ERROR "%s%s%s is %lld, a negative count", section ? section : "",
							section ? "." : "", key, (long long) n);
		else
			*err = psprintf(USAGE_ERROR "%s%s%s is %lld, more than %d tokens", section ? section : "",
							section ? "." : "", key, (long long) n, LLM_MAX_TOKEN_COUNT);
		return false;
	}
	*out = (int64) n;
	return true;
}

/* a sum of counts, saturated at LLM_MAX_TOKEN_COUNT (each term is at most that) */
static int64
UsageSum(int64 a, int64 b)
{
	return Min(a + b, (int64) LLM_MAX_TOKEN_COUNT);
}

/* the reply's usage read; false (with out->error) when it is not valid */
static bool
ReadUsage(LlmProvider provider, json_t *usage, LlmReply *out)
{
	int64		input;

	if (usage != NULL && !json_is_null(usage) && !json_is_object(usage))
	{
		out->error = psprintf(USAGE_ERROR "usage is not an object (%s)", JsonShort(usage));
		return false;
	}
	if (provider == LLM_ANTHROPIC)
	{
		/* input_tokens counts only what was neither read from nor written to the cache */
		if (!UsageCount(usage, NULL, "input_tokens", &input, &out->error) ||
			!UsageCount(usage, NULL, "cache_read_input_tokens", &out->tokens_cached, &out->error) ||
			!UsageCount(usage, NULL, "cache_creation_input_tokens", &out->tokens_cache_write, &out->error) ||
			!UsageCount(usage, NULL, "output_tokens", &out->tokens_out, &out->error))
			return false;
		out->tokens_in = UsageSum(UsageSum(input, out->tokens_cached), out->tokens_cache_write);
	}
	else if (!UsageCount(usage, NULL, "prompt_tokens", &out->tokens_in, &out->error) ||
			 !UsageCount(usage, NULL, "completion_tokens", &out->tokens_out, &out->error) ||
			 !UsageCount(usage, "prompt_tokens_details", "cached_tokens", &out->tokens_cached, &out->error) ||
			 !UsageCount(usage, "completion_tokens_details", "reasoning_tokens", &out->tokens_reasoning, &out->error))
		return false;
	return true;
}

/*
 * jansson refuses an integer beyond 64 bits ("too big integer"): when the
 * usage of the document (its "usage", or "message"."usage" of Anthropic's
 * message_start) holds one, the reason in buf ("the provider reported
 * invalid usage: ...") and true; the document read again with integers as
 * reals to find it.  malloc and jansson only (the stream's callback).
 */
static bool
UsageTooBig(const char *text, size_t len, const json_error_t *jerr, char *buf, size_t buflen)
{
	json_t	   *root;
	json_t	   *usage;
	const char *key;
	json_t	   *v;
	bool		found = false;

	if (strncmp(jerr->text, "too big", 7) != 0)
		return false;
	root = json_loadb(text, len, JSON_DECODE_INT_AS_REAL, NULL);
	usage = json_object_get(root, "usage");
	if (!json_is_object(usage))
		usage = json_object_get(json_object_get(root, "message"), "usage");
	json_object_foreach(usage, key, v)
	{
		const char *k2;
		json_t	   *v2;

		if (json_is_real(v) && fabs(json_real_value(v)) >= 9223372036854775807.0)
		{
			snprintf(buf, buflen, USAGE_ERROR "%s is %.0f, beyond any count", key, json_real_value(v));
			found = true;
			break;
		}
		json_object_foreach(json_is_object(v) ? v : NULL, k2, v2)
			if (!found && json_is_real(v2) && fabs(json_real_value(v2)) >= 9223372036854775807.0)
			{
				snprintf(buf, buflen, USAGE_ERROR "%s.%s is %.0f, beyond any count", key, k2, json_real_value(v2));
				found = true;
			}
		if (found)
			break;
	}
	if (root)
		json_decref(root);
	return found;
}

/*
 * Parses a 200 reply.  false (with out->error) for a body that is not the
 * expected JSON: malformed, truncated, or without a usable message.
 */
bool
LlmParseReply(LlmProvider provider, const char *body, size_t len, LlmReply *out)
{
	json_error_t jerr;
	json_t	   *root;

	memset(out, 0, sizeof(*out));
	root = json_loadb(body ? body : "", len, 0, &jerr);
	if (root == NULL)
	{
		char		buf[256];

		if (UsageTooBig(body ? body : "", len, &jerr, buf, sizeof(buf)))
		{
			out->error = pstrdup(buf);
			return false;
		}
		out->error = psprintf("malformed response from the LLM: %s (at byte %d of %zu)",
							  jerr.text, jerr.position, len);
		return false;
	}
	return LlmParseReplyJson(provider, root, out);
}

/* the same from the parsed body, whose reference it takes */
bool
LlmParseReplyJson(LlmProvider provider, json_t *root, LlmReply *out)
{
	memset(out, 0, sizeof(*out));
	out->calls = json_array();

	if (provider == LLM_ANTHROPIC)
	{
		json_t	   *content = json_object_get(root, "content");
		json_t	   *usage = json_object_get(root, "usage");
		json_t	   *b;
		size_t		i;
		StringInfoData text;

		if (!json_is_array(content))
		{
			out->error = pstrdup("malformed response from the LLM: no \"content\" array in the message");
			json_decref(root);
			return false;
		}
		initStringInfo(&text);
		json_array_foreach(content, i, b)
		{
			const char *type = json_string_value(json_object_get(b, "type"));

			if (type && strcmp(type, "text") == 0 && json_is_string(json_object_get(b, "text")))
				appendStringInfoString(&text, json_string_value(json_object_get(b, "text")));
			else if (type && strcmp(type, "tool_use") == 0)
			{
				json_t	   *input = json_object_get(b, "input");

				json_array_append_new(out->calls,
									  json_pack("{s:O?,s:O?,s:O}", "id", json_object_get(b, "id"),
												"name", json_object_get(b, "name"),
												"input", input ? input : json_null()));
			}
		}
		out->text = text.len > 0 ? text.data : NULL;
		out->stop = JsonStr(json_object_get(root, "stop_reason"));
		if (!ReadUsage(provider, usage, out))
		{
			json_decref(root);
			return false;
		}
		out->assistant = json_pack("{s:s,s:O}", "role", "assistant", "content", content);
	}
	else
	{
		json_t	   *choices = json_object_get(root, "choices");
		json_t	   *choice = json_array_get(choices, 0);
		json_t	   *msg = json_object_get(choice, "message");
		json_t	   *usage = json_object_get(root, "usage");
		json_t	   *calls = json_object_get(msg, "tool_calls");
		json_t	   *c;
		size_t		i;

		if (!json_is_object(msg))
		{
			out->error = pstrdup("malformed response from the LLM: no \"choices[0].message\" in the completion");
			json_decref(root);
			return false;
		}
		out->text = JsonStr(json_object_get(msg, "content"));
		out->stop = JsonStr(json_object_get(choice, "finish_reason"));
		out->refusal = JsonStr(json_object_get(msg, "refusal"));
		if (!ReadUsage(provider, usage, out))
		{
			json_decref(root);
			return false;
		}
		json_array_foreach(calls, i, c)
		{
			json_t	   *fn = json_object_get(c, "function");
			json_t	   *args = json_object_get(fn, "arguments");
			json_t	   *input;

			if (json_is_string(args))
			{
				input = json_loads(json_string_value(args), JSON_DECODE_ANY, NULL);
				if (input == NULL)
					input = json_incref(args);	/* the tool reports invalid arguments */
			}
			else
				input = args ? json_incref(args) : json_object();
			json_array_append_new(out->calls,
								  json_pack("{s:O?,s:O?,s:o}", "id", json_object_get(c, "id"),
											"name", json_object_get(fn, "name"), "input", input));
		}
		/* the assistant message as it must be sent back */
		out->assistant = json_object();
		json_object_set_new(out->assistant, "role", json_string("assistant"));
		json_object_set(out->assistant, "content",
						json_object_get(msg, "content") ? json_object_get(msg, "content") : json_null());
		if (json_array_size(calls) > 0)
			json_object_set(out->assistant, "tool_calls", calls);
	}
	json_decref(root);

	/* a bounded turn: the calls are executed one by one in the worker */
	if (json_array_size(out->calls) > (size_t) pg_agents_max_tool_calls_per_turn)
	{
		out->error = psprintf("the model asked for %zu tool calls in one reply, more than pg_agents.max_tool_calls_per_turn (%d)",
							  json_array_size(out->calls), pg_agents_max_tool_calls_per_turn);
		return false;
	}

	/* every call needs an id and a name to be answered */
	{
		size_t		i;
		json_t	   *c;

		json_array_foreach(out->calls, i, c)
		{
			if (!json_is_string(json_object_get(c, "id")) || !json_is_string(json_object_get(c, "name")))
			{
				out->error = pstrdup("malformed response from the LLM: a tool call without an id or a name");
				return false;
			}
		}
	}
	return true;
}

/* the json a reply owns released (its palloc'd strings go with their context) */
void
LlmFreeReply(LlmReply *r)
{
	if (r->calls)
		json_decref(r->calls);
	if (r->assistant)
		json_decref(r->assistant);
	r->calls = r->assistant = NULL;
}

/* palloc'd: the error message of an error reply, or the start of the body */
char *
LlmErrorMessage(const char *body, size_t len)
{
	json_t	   *root;
	char	   *msg = NULL;

	if (body == NULL || len == 0)
		return pstrdup("empty body");
	root = json_loadb(body, len, 0, NULL);
	if (root)
	{
		json_t	   *err = json_object_get(root, "error");
		json_t	   *m = json_is_object(err) ? json_object_get(err, "message") : err;

		if (json_is_string(m))
			msg = pstrdup(json_string_value(m));
		json_decref(root);
	}
	if (msg == NULL)
		msg = pnstrdup(body, Min(len, 200));
	return msg;
}

/*
 * Whether an error reply says the account is out of money rather than
 * rate-limited: OpenAI's insufficient_quota / billing_hard_limit_reached,
 * a spend limit.  Such a 429 never succeeds when retried.
 */
bool
LlmQuotaError(const char *body, size_t len)
{
	json_t	   *root;
	bool		quota = false;

	if (body == NULL || len == 0)
		return false;
	root = json_loadb(body, len, 0, NULL);
	if (root)
	{
		json_t	   *err = json_object_get(root, "error");
		const char *fields[] = {"type", "code"};

		for (int i = 0; i < 2 && json_is_object(err); i++)
		{
			const char *v = json_string_value(json_object_get(err, fields[i]));

			if (v && (strcmp(v, "insufficient_quota") == 0 ||
					  strcmp(v, "billing_hard_limit_reached") == 0 ||
					  strcmp(v, "billing_not_active") == 0 ||
					  strcmp(v, "spend_limit_exceeded") == 0))
				quota = true;
		}
		if (json_is_object(err) && json_is_string(json_object_get(err, "message")))
		{
			const char *m = json_string_value(json_object_get(err, "message"));

			if (strstr(m, "exceeded your current quota") || strstr(m, "spend limit") ||
				strstr(m, "credit balance is too low"))
				quota = true;
		}
		json_decref(root);
	}
	return quota;
}

/* how the reply's stop reason (or a refusal) ends the turn */
LlmStopKind
LlmStopKindOf(const LlmReply *r)
{
	const char *s = r->stop;

	if (r->refusal)
		return LLM_STOP_REFUSAL;
	if (s == NULL)
		return LLM_STOP_NORMAL;
	if (strcmp(s, "pause_turn") == 0)
		return LLM_STOP_PAUSE;
	if (strcmp(s, "refusal") == 0 || strcmp(s, "content_filter") == 0)
		return LLM_STOP_REFUSAL;
	if (strcmp(s, "max_tokens") == 0 || strcmp(s, "length") == 0)
		return LLM_STOP_MAX_TOKENS;
	if (strcmp(s, "model_context_window_exceeded") == 0)
		return LLM_STOP_CONTEXT;
	return LLM_STOP_NORMAL;
}

/* ---------------------------------------------------------------------
 * Streaming (server-sent events), parsed as the bytes arrive.
 *
 * Runs inside curl's write callback: malloc, realloc and jansson only.
 * ---------------------------------------------------------------------
 */

/* n bytes appended to a malloc'd, NUL-terminated buffer that grows; false when out of memory */
static bool
BufAppend(char **buf, size_t *len, size_t *cap, const char *p, size_t n)
{
	if (*len + n + 1 > *cap)
	{
		size_t		c = *cap ? *cap : 256;
		char	   *q;

		while (c < *len + n + 1)
			c *= 2;
		q = realloc(*buf, c);
		if (q == NULL)
			return false;
		*buf = q;
		*cap = c;
	}
	memcpy(*buf + *len, p, n);
	*len += n;
	(*buf)[*len] = '\0';
	return true;
}

/* a string growing by fragments, kept aside (StreamAppend below) */
typedef struct StreamStr
{
	json_t	   *obj;			/* borrowed: a member of st->acc; NULL: free */
	const char *key;			/* a literal; "" when flushed (a tombstone) */
	char	   *buf;
	size_t		len;
	size_t		cap;
} StreamStr;

/* a new stream parser (malloc'd), NULL when out of memory */
LlmStream *
LlmStreamNew(LlmProvider provider)
{
	LlmStream  *st = calloc(1, sizeof(LlmStream));

	if (st == NULL)
		return NULL;
	st->provider = provider;
	st->acc = json_object();
	if (provider == LLM_OPENAI)
	{
		json_object_set_new(st->acc, "object", json_string("chat.completion"));
		json_object_set_new(st->acc, "choices",
							json_pack("[{s:i,s:{s:s,s:n},s:n}]", "index", 0, "message", "role",
									  "assistant", "content", "finish_reason"));
	}
	return st;
}

/* the stream parser and all it holds released (NULL is fine) */
void
LlmStreamFree(LlmStream *st)
{
	if (st == NULL)
		return;
	free(st->line);
	free(st->data);
	free(st->text);
	free(st->error);
	free(st->error_type);
	free(st->fatal);
	for (size_t k = 0; k < st->strs_cap; k++)
		free(st->strs[k].buf);
	free(st->strs);
	if (st->acc)
		json_decref(st->acc);
	free(st);
}

/*
 * The stream broke a bound or the protocol: the reason kept (the first one
 * wins), the rest of the stream is not read (LlmStreamFeed refuses it, which
 * ends the transfer) and the run fails without a retry.
 */
static void
StreamFatal(LlmStream *st, const char *fmt,...) pg_attribute_printf(2, 3);

static void
StreamFatal(LlmStream *st, const char *fmt,...)
{
	char		buf[512];
	va_list		ap;

	if (st->fatal)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	st->fatal = strdup(buf);
	if (st->fatal == NULL)
		st->oom = true;
}

#define INVALID_STREAM	"the provider sent an invalid stream: "

/*
 * The index of an event (a block, a call): a JSON integer from 0 to max;
 * -1 (the stream failed, what named) for anything else.
 */
static int64
StreamIndex(LlmStream *st, json_t *v, const char *what, size_t max)
{
	if (!json_is_integer(v) || json_integer_value(v) < 0 || (uint64) json_integer_value(v) > (uint64) max)
	{
		char	   *d = v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;

		StreamFatal(st, INVALID_STREAM "%s has index %.40s where 0 to %zu was expected",
					what, d ? d : "(none)", max);
		free(d);
		return -1;
	}
	return (int64) json_integer_value(v);
}

/*
 * Strings that grow by fragments (tool-call arguments and names, partial
 * JSON, thinking, signatures, a refusal) are kept aside in buffers that
 * double, so that n fragments cost O(n) and not the O(n^2) of a new jansson
 * string per fragment; a hash of (object, key) finds a buffer in O(1).
 * StreamFlush sets a buffer as the member it stands for: at a block's
 * content_block_stop (which reads it), and for all at the end.
 */
static size_t
StrHash(json_t *obj, const char *key, size_t mask)
{
	uintptr_t	h = (uintptr_t) obj * 2654435761u ^ (uintptr_t) key * 40503u;

	return (size_t) (h ^ (h >> 17)) & mask;
}

/* the buffer of obj's key; created (with the member's current value) when create */
static StreamStr *
StrFind(LlmStream *st, json_t *obj, const char *key, bool create)
{
	size_t		mask;
	size_t		i;

	if (create && (st->nstrs + 1) * 2 > st->strs_cap)
	{
		size_t		ncap = st->strs_cap ? st->strs_cap * 2 : 16;
		StreamStr  *n = calloc(ncap, sizeof(StreamStr));

		if (n == NULL)
			return NULL;
		st->nstrs = 0;
		for (size_t k = 0; k < st->strs_cap; k++)
		{
			StreamStr  *e = &st->strs[k];

			if (e->obj == NULL || e->key[0] == '\0')
				continue;
			for (i = StrHash(e->obj, e->key, ncap - 1); n[i].obj; i = (i + 1) & (ncap - 1))
				;
			n[i] = *e;
			st->nstrs++;
		}
		free(st->strs);
		st->strs = n;
		st->strs_cap = ncap;
	}
	if (st->strs_cap == 0)
		return NULL;
	mask = st->strs_cap - 1;
	for (i = StrHash(obj, key, mask); st->strs[i].obj; i = (i + 1) & mask)
		if (st->strs[i].obj == obj && st->strs[i].key == key)
			return &st->strs[i];
	if (!create)
		return NULL;
	st->strs[i].obj = obj;
	st->strs[i].key = key;
	st->nstrs++;
	{
		json_t	   *cur = json_object_get(obj, key);

		if (json_is_string(cur) &&
			!BufAppend(&st->strs[i].buf, &st->strs[i].len, &st->strs[i].cap,
					   json_string_value(cur), json_string_length(cur)))
			return NULL;
	}
	return &st->strs[i];
}

/* appends to a string member of obj (created when absent; set by StreamFlush) */
static void
StreamAppend(LlmStream *st, json_t *obj, const char *key, const char *add)
{
	StreamStr  *e = json_is_object(obj) ? StrFind(st, obj, key, true) : NULL;

	if (e == NULL || !BufAppend(&e->buf, &e->len, &e->cap, add, strlen(add)))
		st->oom = true;
}

/* the buffer of one entry set as its member, then released */
static void
StrFlushEntry(StreamStr *e)
{
	json_object_set_new(e->obj, e->key, json_stringn_nocheck(e->buf ? e->buf : "", e->len));
	free(e->buf);
	e->buf = NULL;
	e->len = e->cap = 0;
	e->key = "";				/* a tombstone: never matches, keeps the probe chains */
}

/* the buffers of obj's keys set as its members (all of them: obj NULL) */
static void
StreamFlush(LlmStream *st, json_t *obj, const char *const *keys)
{
	if (obj == NULL)
	{
		for (size_t k = 0; k < st->strs_cap; k++)
			if (st->strs[k].obj && st->strs[k].key[0] != '\0')
				StrFlushEntry(&st->strs[k]);
		return;
	}
	for (; *keys; keys++)
	{
		StreamStr  *e = StrFind(st, obj, *keys, false);

		if (e)
			StrFlushEntry(e);
	}
}

/* the member keys of a block that grow by fragments (the same literals everywhere) */
static const char K_TEXT[] = "text";
static const char K_PARTIAL[] = "_partial";
static const char K_THINKING[] = "thinking";
static const char K_SIGNATURE[] = "signature";
static const char K_NAME[] = "name";
static const char K_ARGUMENTS[] = "arguments";
static const char K_REFUSAL[] = "refusal";
static const char *const block_keys[] = {K_TEXT, K_PARTIAL, K_THINKING, K_SIGNATURE, NULL};

/* a text delta appended to the text received so far */
static void
StreamText(LlmStream *st, const char *t)
{
	if (t && !BufAppend(&st->text, &st->text_len, &st->text_cap, t, strlen(t)))
		st->oom = true;
}

/* the message and type of an error event kept (the last one wins) */
static void
StreamError(LlmStream *st, json_t *err)
{
	const char *m = json_string_value(json_object_get(err, "message"));
	const char *t = json_string_value(json_object_get(err, "type"));

	free(st->error);
	free(st->error_type);
	st->error = strdup(m ? m : "error event without a message");
	st->error_type = t ? strdup(t) : NULL;
}

/* one OpenAI chunk: choices[0].delta, finish_reason, usage */
static void
OpenAIChunk(LlmStream *st, json_t *ev)
{
	json_t	   *choice = json_array_get(json_object_get(ev, "choices"), 0);
	json_t	   *acc_choice = json_array_get(json_object_get(st->acc, "choices"), 0);
	json_t	   *msg = json_object_get(acc_choice, "message");
	json_t	   *delta = json_object_get(choice, "delta");
	json_t	   *v;
	size_t		i;
	json_t	   *tc;

	if (json_is_object(json_object_get(ev, "error")))
	{
		StreamError(st, json_object_get(ev, "error"));
		return;
	}
	if ((v = json_object_get(ev, "id")) && json_is_string(v))
		json_object_set(st->acc, "id", v);
	if ((v = json_object_get(ev, "model")) && json_is_string(v))
		json_object_set(st->acc, "model", v);
	if ((v = json_object_get(ev, "usage")) && json_is_object(v))
		json_object_set(st->acc, "usage", v);
	if (!json_is_object(choice))
		return;
	if ((v = json_object_get(choice, "finish_reason")) && json_is_string(v))
		json_object_set(acc_choice, "finish_reason", v);
	if (!json_is_object(delta))
		return;
	if ((v = json_object_get(delta, "content")) && json_is_string(v))
	{
		/* kept in st->text only, set as the content at the end */
		StreamText(st, json_string_value(v));
		st->has_content = true;
	}
	if ((v = json_object_get(delta, "refusal")) && json_is_string(v))
		StreamAppend(st, msg, K_REFUSAL, json_string_value(v));
	/*
	 * Tool calls arrive in fragments, joined by their index, which is the
	 * call's position in the array: an index names a call seen or the next
	 * one (a fragment without an index is a new call), so that a lookup is
	 * one array access; a call past pg_agents.max_tool_calls_per_turn fails
	 * the run as a whole reply over it does, before the rest is read.
	 */
	json_array_foreach(json_object_get(delta, "tool_calls"), i, tc)
	{
		json_t	   *calls = json_object_get(msg, "tool_calls");
		json_t	   *idx = json_object_get(tc, "index");
		json_t	   *fn = json_object_get(tc, "function");
		json_t	   *call;
		size_t		n;
		int64		k;

		if (calls == NULL)
		{
			calls = json_array();
			json_object_set_new(msg, "tool_calls", calls);
		}
		n = json_array_size(calls);
		k = idx == NULL ? (int64) n : StreamIndex(st, idx, "a tool call fragment", n);
		if (k < 0)
			return;
		if ((size_t) k == n)
		{
			if (n >= (size_t) pg_agents_max_tool_calls_per_turn)
			{
				StreamFatal(st, "the model asked for %d or more tool calls in one reply, more than pg_agents.max_tool_calls_per_turn (%d)",
							pg_agents_max_tool_calls_per_turn + 1, pg_agents_max_tool_calls_per_turn);
				return;
			}
			call = json_pack("{s:s,s:{}}", "type", "function", "function");
			json_array_append_new(calls, call);
		}
		else
			call = json_array_get(calls, (size_t) k);
		if (!json_is_object(call))
		{
			st->oom = true;
			return;
		}
		if ((v = json_object_get(tc, "id")) && json_is_string(v))
			json_object_set(call, "id", v);
		if ((v = json_object_get(fn, "name")) && json_is_string(v))
			StreamAppend(st, json_object_get(call, "function"), K_NAME, json_string_value(v));
		if ((v = json_object_get(fn, "arguments")) && json_is_string(v))
			StreamAppend(st, json_object_get(call, "function"), K_ARGUMENTS, json_string_value(v));
	}
}

/* one Anthropic event: message_start ... message_stop */
static void
AnthropicEvent(LlmStream *st, const char *type, json_t *ev)
{
	json_t	   *content = json_object_get(st->acc, "content");
	json_t	   *v;

	if (strcmp(type, "message_start") == 0)
	{
		json_t	   *m = json_object_get(ev, "message");

		if (json_is_object(m))
		{
			StreamFlush(st, NULL, NULL);	/* (a second message_start may replace the blocks) */
			json_object_update(st->acc, m);
			if (!json_is_array(json_object_get(st->acc, "content")))
				json_object_set_new(st->acc, "content", json_array());
		}
	}
	else if (strcmp(type, "content_block_start") == 0)
	{
		json_t	   *b = json_object_get(ev, "content_block");
		int64		idx;

		if (!json_is_array(content))
		{
			content = json_array();
			json_object_set_new(st->acc, "content", content);
		}
		if (!json_is_object(b))
			return;
		/* a block seen (started again) or the next one: nothing is made up to an index */
		idx = StreamIndex(st, json_object_get(ev, "index"), "content_block_start", json_array_size(content));
		if (idx < 0)
			return;
		if ((size_t) idx == json_array_size(content) &&
			(v = json_object_get(b, "type")) && json_is_string(v) && strcmp(json_string_value(v), "tool_use") == 0 &&
			++st->tool_blocks > pg_agents_max_tool_calls_per_turn)
		{
			StreamFatal(st, "the model asked for %d or more tool calls in one reply, more than pg_agents.max_tool_calls_per_turn (%d)",
						pg_agents_max_tool_calls_per_turn + 1, pg_agents_max_tool_calls_per_turn);
			return;
		}
		b = json_deep_copy(b);
		if (json_is_string(json_object_get(b, "text")))
		{
			/* a text block's text is kept in st->text: from here to its end */
			StreamText(st, json_string_value(json_object_get(b, "text")));
			json_object_set_new(b, "_from", json_integer((json_int_t) (st->text_len -
																	   json_string_length(json_object_get(b, "text")))));
		}
		if (json_array_size(content) == (size_t) idx)
			json_array_append_new(content, b);
		else
		{
			/* a block started again: the old one's buffers go with it */
			StreamFlush(st, json_array_get(content, (size_t) idx), block_keys);
			json_array_set_new(content, (size_t) idx, b);
		}
	}
	else if (strcmp(type, "content_block_delta") == 0)
	{
		json_t	   *b;
		json_t	   *d = json_object_get(ev, "delta");
		const char *dt = json_string_value(json_object_get(d, "type"));
		int64		idx;

		/* a delta (and a stop) names a block started */
		if (json_array_size(content) == 0)
		{
			StreamFatal(st, INVALID_STREAM "content_block_delta before any content_block_start");
			return;
		}
		idx = StreamIndex(st, json_object_get(ev, "index"), "content_block_delta", json_array_size(content) - 1);
		if (idx < 0)
			return;
		b = json_array_get(content, (size_t) idx);
		if (!json_is_object(b) || dt == NULL)
			return;
		if (strcmp(dt, "text_delta") == 0 && (v = json_object_get(d, "text")) && json_is_string(v))
		{
			if (json_is_integer(json_object_get(b, "_from")))
				StreamText(st, json_string_value(v));
			else
				StreamAppend(st, b, K_TEXT, json_string_value(v));
		}
		else if (strcmp(dt, "input_json_delta") == 0 && (v = json_object_get(d, "partial_json")) && json_is_string(v))
			StreamAppend(st, b, K_PARTIAL, json_string_value(v));
		else if (strcmp(dt, "thinking_delta") == 0 && (v = json_object_get(d, "thinking")) && json_is_string(v))
			StreamAppend(st, b, K_THINKING, json_string_value(v));
		else if (strcmp(dt, "signature_delta") == 0 && (v = json_object_get(d, "signature")) && json_is_string(v))
			StreamAppend(st, b, K_SIGNATURE, json_string_value(v));
		else if (strcmp(dt, "citations_delta") == 0 && (v = json_object_get(d, "citation")))
		{
			if (!json_is_array(json_object_get(b, "citations")))
				json_object_set_new(b, "citations", json_array());
			json_array_append(json_object_get(b, "citations"), v);
		}
	}
	else if (strcmp(type, "content_block_stop") == 0)
	{
		json_t	   *b;
		json_t	   *p;
		json_t	   *from;
		int64		idx;

		if (json_array_size(content) == 0)
		{
			StreamFatal(st, INVALID_STREAM "content_block_stop before any content_block_start");
			return;
		}
		idx = StreamIndex(st, json_object_get(ev, "index"), "content_block_stop", json_array_size(content) - 1);
		if (idx < 0)
			return;
		b = json_array_get(content, (size_t) idx);
		StreamFlush(st, b, block_keys);
		p = json_object_get(b, "_partial");
		from = json_object_get(b, "_from");

		if (json_is_integer(from))
		{
			size_t		f = (size_t) json_integer_value(from);

			json_object_set_new(b, "text", f <= st->text_len
								? json_stringn(st->text ? st->text + f : "", st->text_len - f)
								: json_string(""));
			json_object_del(b, "_from");
		}
		if (json_is_string(p))
		{
			json_t	   *input = json_string_length(p) > 0
				? json_loads(json_string_value(p), JSON_DECODE_ANY, NULL) : json_object();

			/* invalid JSON: kept as a string, the tool reports invalid arguments */
			json_object_set_new(b, "input", input ? input : json_incref(p));
			json_object_del(b, "_partial");
		}
	}
	else if (strcmp(type, "message_delta") == 0)
	{
		json_t	   *d = json_object_get(ev, "delta");
		json_t	   *u = json_object_get(ev, "usage");

		if ((v = json_object_get(d, "stop_reason")) && !json_is_null(v))
			json_object_set(st->acc, "stop_reason", v);
		if ((v = json_object_get(d, "stop_sequence")))
			json_object_set(st->acc, "stop_sequence", v);
		if (json_is_object(u))
		{
			if (!json_is_object(json_object_get(st->acc, "usage")))
				json_object_set_new(st->acc, "usage", json_object());
			json_object_update(json_object_get(st->acc, "usage"), u);
		}
	}
	else if (strcmp(type, "message_stop") == 0)
		st->done = true;
	else if (strcmp(type, "error") == 0)
		StreamError(st, json_object_get(ev, "error"));
	/* ping and unknown events are ignored */
}

/*
 * The fast path of the one frequent event, a text delta: its exact shape
 * is matched by hand and its string decoded into st->text, without a
 * jansson parse (which was half of the worker's CPU of a streamed reply).
 * Anything else, or the slightest doubt, takes the general path.
 */
static const char *
Lit(const char *p, const char *end, const char *lit)
{
	size_t		n = strlen(lit);

	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	if ((size_t) (end - p) < n || memcmp(p, lit, n) != 0)
		return NULL;
	return p + n;
}

/* the value of four hex digits (of a JSON "\\u" escape), -1 when they are not */
static int
Hex4(const char *p)
{
	int			v = 0;

	for (int i = 0; i < 4; i++)
	{
		char		c = p[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if (c >= 'a' && c <= 'f')
			v |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v |= c - 'A' + 10;
		else
			return -1;
	}
	return v;
}

/*
 * Decodes the JSON string starting after its opening quote into st->text;
 * returns the position after its closing quote, or NULL (st->text is then
 * put back as it was).
 */
static const char *
FastString(LlmStream *st, const char *p, const char *end)
{
	size_t		keep = st->text_len;

	while (p < end)
	{
		const char *q = p;

		while (q < end && *q != '"' && *q != '\\' && (unsigned char) *q >= 0x20)
			q++;
		if (q > p && !BufAppend(&st->text, &st->text_len, &st->text_cap, p, q - p))
			goto fail;
		p = q;
		if (p >= end || (unsigned char) *p < 0x20)
			goto fail;
		if (*p == '"')
			return p + 1;
		/* an escape */
		if (end - p < 2)
			goto fail;
		{
			char		out[4];
			int			n = 1;

			switch (p[1])
			{
				case '"':
				case '\\':
				case '/':
					out[0] = p[1];
					break;
				case 'b':
					out[0] = '\b';
					break;
				case 'f':
					out[0] = '\f';
					break;
				case 'n':
					out[0] = '\n';
					break;
				case 'r':
					out[0] = '\r';
					break;
				case 't':
					out[0] = '\t';
					break;
				case 'u':
					{
						int			cp;

						if (end - p < 6 || (cp = Hex4(p + 2)) < 0)
							goto fail;
						if (cp >= 0xD800 && cp <= 0xDBFF)
						{
							int			lo;

							if (end - p < 12 || p[6] != '\\' || p[7] != 'u' ||
								(lo = Hex4(p + 8)) < 0xDC00 || lo > 0xDFFF)
								goto fail;
							cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
							p += 6;
						}
						else if (cp >= 0xDC00 && cp <= 0xDFFF)
							goto fail;
						if (cp == 0)
							goto fail;	/* kept for jansson to judge */
						if (cp < 0x80)
							out[0] = (char) cp;
						else if (cp < 0x800)
						{
							out[0] = (char) (0xC0 | (cp >> 6));
							out[1] = (char) (0x80 | (cp & 0x3F));
							n = 2;
						}
						else if (cp < 0x10000)
						{
							out[0] = (char) (0xE0 | (cp >> 12));
							out[1] = (char) (0x80 | ((cp >> 6) & 0x3F));
							out[2] = (char) (0x80 | (cp & 0x3F));
							n = 3;
						}
						else
						{
							out[0] = (char) (0xF0 | (cp >> 18));
							out[1] = (char) (0x80 | ((cp >> 12) & 0x3F));
							out[2] = (char) (0x80 | ((cp >> 6) & 0x3F));
							out[3] = (char) (0x80 | (cp & 0x3F));
							n = 4;
						}
						p += 4;
						break;
					}
				default:
					goto fail;
			}
			if (!BufAppend(&st->text, &st->text_len, &st->text_cap, out, n))
				goto fail;
			p += 2;
		}
	}
fail:
	st->text_len = keep;
	if (st->text)
		st->text[keep] = '\0';
	return NULL;
}

/*
 * The common event, a text delta of the block being written, parsed
 * without jansson: true when the event was exactly that (its text
 * appended); false leaves it to the general path, the text unchanged.
 */
static bool
FastTextDelta(LlmStream *st)
{
	const char *p = st->data;
	const char *end = st->data + st->data_len;
	json_t	   *content;
	json_t	   *last;

	if (st->provider == LLM_ANTHROPIC)
	{
		/* {"type":"content_block_delta","index":N,"delta":{"type":"text_delta","text":"..."}} */
		if (strcmp(st->event, "content_block_delta") != 0)
			return false;
		content = json_object_get(st->acc, "content");
		last = json_array_get(content, json_array_size(content) - 1);
		/* the text goes to the last block, a text block still open */
		if (!json_is_integer(json_object_get(last, "_from")))
			return false;
		if (!(p = Lit(p, end, "{")) || !(p = Lit(p, end, "\"type\"")) || !(p = Lit(p, end, ":")) ||
			!(p = Lit(p, end, "\"content_block_delta\"")) || !(p = Lit(p, end, ",")) ||
			!(p = Lit(p, end, "\"index\"")) || !(p = Lit(p, end, ":")))
			return false;
		{
			size_t		idx = 0;

			while (p < end && *p == ' ')
				p++;
			if (p >= end || *p < '0' || *p > '9')
				return false;
			/* (at most 9 digits: anything longer is for the general path to judge) */
			for (int nd = 0; p < end && *p >= '0' && *p <= '9'; nd++)
			{
				if (nd == 9)
					return false;
				idx = idx * 10 + (*p++ - '0');
			}
			if (idx != json_array_size(content) - 1)
				return false;
		}
		if (!(p = Lit(p, end, ",")) || !(p = Lit(p, end, "\"delta\"")) || !(p = Lit(p, end, ":")) ||
			!(p = Lit(p, end, "{")) || !(p = Lit(p, end, "\"type\"")) || !(p = Lit(p, end, ":")) ||
			!(p = Lit(p, end, "\"text_delta\"")) || !(p = Lit(p, end, ",")) ||
			!(p = Lit(p, end, "\"text\"")) || !(p = Lit(p, end, ":")) || !(p = Lit(p, end, "\"")))
			return false;
		{
			size_t		keep = st->text_len;

			if (!(p = FastString(st, p, end)))
				return false;
			if (!(p = Lit(p, end, "}")) || !(p = Lit(p, end, "}")) || Lit(p, end, "") != end)
			{
				st->text_len = keep;
				st->text[keep] = '\0';
				return false;
			}
		}
		return true;
	}
	else
	{
		/*
		 * {...,"choices":[{"index":0,"delta":{"content":"..."},
		 * ["logprobs":null,]"finish_reason":null}][,"usage":null]}, the
		 * part before "choices" (id, object, created, model, fingerprint)
		 * free of anything the general path would look at.
		 */
		const char *c = memmem(p, st->data_len, "\"choices\"", 9);
		size_t		keep;

		if (c == NULL || memmem(p, c - p, "\"usage\"", 7) || memmem(p, c - p, "\"error\"", 7) ||
			!json_is_string(json_object_get(st->acc, "id")))
			return false;
		p = c + 9;
		if (!(p = Lit(p, end, ":")) || !(p = Lit(p, end, "[")) || !(p = Lit(p, end, "{")) ||
			!(p = Lit(p, end, "\"index\"")) || !(p = Lit(p, end, ":")) || !(p = Lit(p, end, "0")) ||
			!(p = Lit(p, end, ",")) || !(p = Lit(p, end, "\"delta\"")) || !(p = Lit(p, end, ":")) ||
			!(p = Lit(p, end, "{")) || !(p = Lit(p, end, "\"content\"")) || !(p = Lit(p, end, ":")) ||
			!(p = Lit(p, end, "\"")))
			return false;
		keep = st->text_len;
		if (!(p = FastString(st, p, end)))
			return false;
		if (!(p = Lit(p, end, "}")) || !(p = Lit(p, end, ",")))
			goto undo;
		if (Lit(p, end, "\"logprobs\""))
		{
			p = Lit(p, end, "\"logprobs\"");
			if (!(p = Lit(p, end, ":")) || !(p = Lit(p, end, "null")) || !(p = Lit(p, end, ",")))
				goto undo;
		}
		if (!(p = Lit(p, end, "\"finish_reason\"")) || !(p = Lit(p, end, ":")) || !(p = Lit(p, end, "null")) ||
			!(p = Lit(p, end, "}")) || !(p = Lit(p, end, "]")))
			goto undo;
		if (Lit(p, end, ","))
		{
			p = Lit(p, end, ",");
			if (!(p = Lit(p, end, "\"usage\"")) || !(p = Lit(p, end, ":")) || !(p = Lit(p, end, "null")))
				goto undo;
		}
		if (!(p = Lit(p, end, "}")) || Lit(p, end, "") != end)
			goto undo;
		st->has_content = true;
		return true;
undo:
		st->text_len = keep;
		st->text[keep] = '\0';
		return false;
	}
}

/* one complete event (its data: lines joined) */
static void
StreamDispatch(LlmStream *st)
{
	json_t	   *ev;
	json_error_t jerr;

	if (st->data_len == 0)
	{
		st->event[0] = '\0';
		return;
	}
	if (st->provider == LLM_OPENAI && strcmp(st->data, "[DONE]") == 0)
		st->done = true;
	else if (FastTextDelta(st))
		 /* a text delta, done */ ;
	else if ((ev = json_loadb(st->data, st->data_len, 0, &jerr)) == NULL)
	{
		/* an event that is not JSON: the reply cannot be told (a count beyond 64 bits, say) */
		char		buf[256];

		if (UsageTooBig(st->data, st->data_len, &jerr, buf, sizeof(buf)))
			StreamFatal(st, "%s", buf);
		else
			StreamFatal(st, INVALID_STREAM "an event is not JSON: %s (at byte %d of %zu)",
						jerr.text, jerr.position, st->data_len);
	}
	else
	{
		if (st->provider == LLM_OPENAI)
			OpenAIChunk(st, ev);
		else
		{
			const char *type = st->event[0] ? st->event : json_string_value(json_object_get(ev, "type"));

			if (type)
				AnthropicEvent(st, type, ev);
		}
		json_decref(ev);
	}
	st->data_len = 0;
	st->data[0] = '\0';
	st->event[0] = '\0';
}

/* one line of the event stream, without its end of line */
static void
StreamLine(LlmStream *st, const char *line, size_t len)
{
	if (len > 0 && line[len - 1] == '\r')
		len--;
	if (len == 0)
	{
		StreamDispatch(st);
		return;
	}
	if (line[0] == ':')
		return;					/* a comment (keep-alive) */
	if (len >= 5 && strncmp(line, "data:", 5) == 0)
	{
		const char *v = line + 5;
		size_t		vl = len - 5;

		if (vl > 0 && *v == ' ')
			v++, vl--;
		if (st->data_len > 0 && !BufAppend(&st->data, &st->data_len, &st->data_cap, "\n", 1))
			st->oom = true;
		if (!BufAppend(&st->data, &st->data_len, &st->data_cap, v, vl))
			st->oom = true;
	}
	else if (len >= 6 && strncmp(line, "event:", 6) == 0)
	{
		const char *v = line + 6;
		size_t		vl = len - 6;

		while (vl > 0 && *v == ' ')
			v++, vl--;
		vl = Min(vl, sizeof(st->event) - 1);
		memcpy(st->event, v, vl);
		st->event[vl] = '\0';
	}
	/* id:, retry: and unknown fields are ignored */
}

/* bytes of the stream as they arrive; false when out of memory */
bool
LlmStreamFeed(LlmStream *st, const char *p, size_t n)
{
	while (n > 0 && !st->oom && st->fatal == NULL)
	{
		const char *nl = memchr(p, '\n', n);
		size_t		take = nl ? (size_t) (nl - p) : n;

		if (nl && st->line_len == 0)
			StreamLine(st, p, take);	/* a whole line in the buffer: no copy */
		else
		{
			if (!BufAppend(&st->line, &st->line_len, &st->line_cap, p, take))
				return false;
			if (nl)
			{
				StreamLine(st, st->line, st->line_len);
				st->line_len = 0;
			}
		}
		p += take + (nl ? 1 : 0);
		n -= take + (nl ? 1 : 0);
	}
	return !st->oom && st->fatal == NULL;
}

/*
 * The body the provider would have sent without streaming (the caller's
 * reference), or NULL when the stream did not end (cut, or an error event:
 * st->error).
 */
json_t *
LlmStreamFinish(LlmStream *st)
{
	json_t	   *out;

	/* a last event without its blank line */
	if (st->line_len > 0)
	{
		StreamLine(st, st->line, st->line_len);
		st->line_len = 0;
	}
	if (st->data_len > 0)
		StreamDispatch(st);
	StreamFlush(st, NULL, NULL);	/* every string kept aside set where it belongs */
	/* an OpenAI-compatible server that ends its stream without [DONE] */
	if (st->provider == LLM_OPENAI && !st->done &&
		json_is_string(json_object_get(json_array_get(json_object_get(st->acc, "choices"), 0), "finish_reason")))
		st->done = true;
	if (st->fatal || st->error || !st->done)
		return NULL;
	if (st->provider == LLM_ANTHROPIC)
	{
		size_t		i;
		json_t	   *b;

		/* a text block whose content_block_stop never came */
		json_array_foreach(json_object_get(st->acc, "content"), i, b)
		{
			json_t	   *from = json_object_get(b, "_from");

			if (json_is_integer(from) && (size_t) json_integer_value(from) <= st->text_len)
			{
				size_t		f = (size_t) json_integer_value(from);

				json_object_set_new(b, "text", json_stringn(st->text ? st->text + f : "", st->text_len - f));
				json_object_del(b, "_from");
			}
		}
	}
	if (st->provider == LLM_OPENAI)
	{
		json_t	   *msg = json_object_get(json_array_get(json_object_get(st->acc, "choices"), 0), "message");

		if (st->has_content)
			json_object_set_new(msg, "content", json_stringn(st->text ? st->text : "", st->text_len));
		/* an empty first content delta: null, as without streaming */
		if (json_is_string(json_object_get(msg, "content")) &&
			json_string_length(json_object_get(msg, "content")) == 0)
			json_object_set_new(msg, "content", json_null());
	}
	out = st->acc;
	st->acc = NULL;
	return out;
}
