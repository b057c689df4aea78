/*-------------------------------------------------------------------------
 *
 * embed.c
 *		Embeddings of search queries for semantic search (search_resources
 *		over tables with an embedding column; docs/allowlist.md, "Semantic
 *		search").
 *
 * The query is embedded through <base url>/embeddings, OpenAI-compatible
 * ({"model", "input"} -> {"data": [{"embedding": [...]}]}), of the run's LLM
 * endpoint (the agent's scope llm_url, else pg_agents.llm_url).  The API
 * key goes only to pg_agents.llm_url (LlmKeyFor), as for chat requests.
 *
 * The request is synchronous (curl easy), made while the tool runs inside
 * the worker's transaction: it is bounded by pg_agents.request_timeout and
 * pg_agents.max_reply_bytes, and the worker serves nothing else meanwhile.
 * Embedding one short query is expected to take milliseconds; a slow
 * embeddings endpoint delays every run of the worker by that much.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "util/jansson_prelude.h"

#include <math.h>

#include "lib/stringinfo.h"

#include "embed.h"
#include "llm/llm.h"
#include "mcp/http_easy.h"
#include "util/guc.h"


#define EMBED_MAX_DIMS 16000	/* pgvector's limit for the vector type */

typedef struct EmbedBuf
{
	char	   *data;			/* malloc'd */
	size_t		len;
	size_t		cap;
	size_t		max;
	bool		too_big;
} EmbedBuf;

/*
 * libcurl write callback: appends the reply to an EmbedBuf (malloc'd).
 * Returns 0, which aborts the transfer, past b->max (too_big set) or when out
 * of memory.
 */
static size_t
EmbedWrite(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	EmbedBuf   *b = (EmbedBuf *) userdata;
	size_t		n = size * nmemb;

	if (b->len + n > b->max)
	{
		b->too_big = true;
		return 0;
	}
	if (b->len + n + 1 > b->cap)
	{
		size_t		cap = b->cap ? b->cap : 8192;
		char	   *p;

		while (cap < b->len + n + 1)
			cap *= 2;
		p = realloc(b->data, cap);
		if (p == NULL)
			return 0;
		b->data = p;
		b->cap = cap;
	}
	memcpy(b->data + b->len, ptr, n);
	b->len += n;
	b->data[b->len] = '\0';
	return n;
}

/*
 * Embeds text with model through base_url's /embeddings.  Returns the
 * vector as a pgvector literal ("[0.1,0.2,...]", palloc'd), or NULL with
 * *error (palloc'd, never holding the key) saying why.
 */
char *
EmbedQuery(const char *base_url, const char *model, const char *text, char **error)
{
	CURL	   *h;
	struct curl_slist *headers;
	json_t	   *req;
	json_t	   *reply;
	json_t	   *vec;
	char	   *body;
	char	   *url;
	EmbedBuf	b = {NULL, 0, 0, 0, false};
	char		errbuf[CURL_ERROR_SIZE] = "";
	CURLcode	rc;
	long		status = 0;
	StringInfoData out;
	size_t		i;
	json_t	   *x;

	*error = NULL;
	if (base_url == NULL || base_url[0] == '\0')
	{
		*error = pstrdup("no LLM endpoint to embed the query with");
		return NULL;
	}
	{
		int			len = strlen(base_url);

		while (len > 0 && base_url[len - 1] == '/')
			len--;
		url = psprintf("%.*s/embeddings", len, base_url);
	}

	req = json_pack("{s:s,s:s}", "model", model, "input", text);
	body = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	if (body == NULL)
	{
		*error = pstrdup("could not build the embeddings request");
		return NULL;
	}
	h = curl_easy_init();
	if (h == NULL)
	{
		free(body);
		*error = pstrdup("could not initialize libcurl");
		return NULL;
	}
	/* the key only ever goes to pg_agents.llm_url */
	headers = LlmHeaders(LLM_OPENAI, LlmKeyFor(base_url));
	b.max = (size_t) pg_agents_max_reply_bytes;
	http_easy_defaults(h, url);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long) pg_agents_request_timeout);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, EmbedWrite);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	rc = curl_easy_perform(h);
	if (rc == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(h);
	curl_slist_free_all(headers);
	free(body);

	if (b.too_big)
		*error = psprintf("the embeddings reply is larger than pg_agents.max_reply_bytes (%d bytes)",
						  pg_agents_max_reply_bytes);
	else if (rc != CURLE_OK)
		*error = psprintf("could not reach the embeddings endpoint: %s",
						  errbuf[0] ? errbuf : curl_easy_strerror(rc));
	else if (status != 200)
		*error = psprintf("embeddings endpoint returned HTTP %ld", status);
	if (*error)
	{
		free(b.data);
		return NULL;
	}
	reply = b.data ? json_loadb(b.data, b.len, 0, NULL) : NULL;
	free(b.data);
	vec = json_object_get(json_array_get(json_object_get(reply, "data"), 0), "embedding");
	if (!json_is_array(vec) || json_array_size(vec) == 0 || json_array_size(vec) > EMBED_MAX_DIMS)
	{
		json_decref(reply);
		*error = pstrdup("malformed response from the embeddings endpoint: no data[0].embedding array of 1 to 16000 numbers");
		return NULL;
	}
	initStringInfo(&out);
	appendStringInfoChar(&out, '[');
	json_array_foreach(vec, i, x)
	{
		double		d = json_number_value(x);

		if (!json_is_number(x) || !isfinite(d))
		{
			json_decref(reply);
			*error = pstrdup("malformed response from the embeddings endpoint: an embedding value is not a finite number");
			return NULL;
		}
		appendStringInfo(&out, "%s%.9g", i ? "," : "", d);
	}
	appendStringInfoChar(&out, ']');
	json_decref(reply);
	return out.data;
}
