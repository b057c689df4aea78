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

#include "worker_int.h"

#include "access/xact.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"

#include "pg_agents.h"

PG_FUNCTION_INFO_V1(pg_agents_llm_url_allowed);

#define ANTHROPIC_VERSION	"2023-06-01"
#define ANTHROPIC_MAX_TOKENS 4096

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
json_t *
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

/* malloc'd request body */
char *
LlmBuildBody(LlmProvider provider, const char *model, const char *system,
			 json_t *messages, json_t *tools)
{
	json_t	   *req = json_object();
	char	   *s;

	json_object_set_new(req, "model", json_string(model));
	if (provider == LLM_ANTHROPIC)
	{
		json_object_set_new(req, "max_tokens", json_integer(ANTHROPIC_MAX_TOKENS));
		if (system && system[0])
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
	}
	if (tools && json_array_size(tools) > 0)
		json_object_set_new(req, "tools", LlmToolsFor(provider, tools));
	s = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	return s;
}

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

static char *
JsonStr(json_t *v)
{
	return json_is_string(v) ? pstrdup(json_string_value(v)) : NULL;
}

static int64
JsonInt(json_t *v)
{
	return json_is_integer(v) ? (int64) json_integer_value(v) : 0;
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
		out->error = psprintf("malformed response from the LLM: %s (at byte %d of %zu)",
							  jerr.text, jerr.position, len);
		return false;
	}
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
									  json_pack("{s:O,s:O,s:O}", "id", json_object_get(b, "id"),
												"name", json_object_get(b, "name"),
												"input", input ? input : json_null()));
			}
		}
		out->text = text.len > 0 ? text.data : NULL;
		out->stop = JsonStr(json_object_get(root, "stop_reason"));
		out->tokens_in = JsonInt(json_object_get(usage, "input_tokens"));
		out->tokens_out = JsonInt(json_object_get(usage, "output_tokens"));
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
		out->tokens_in = JsonInt(json_object_get(usage, "prompt_tokens"));
		out->tokens_out = JsonInt(json_object_get(usage, "completion_tokens"));
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
								  json_pack("{s:O,s:O,s:o}", "id", json_object_get(c, "id"),
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
