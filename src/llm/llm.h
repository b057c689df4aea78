/*-------------------------------------------------------------------------
 *
 * llm.h
 *		LLM wire formats (llm.c): OpenAI chat completions and Anthropic
 *		messages, requests, replies and streamed replies.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_LLM_H
#define PG_AGENTS_LLM_H

#include "util/jansson_prelude.h"

#include <curl/curl.h>

#include "datatype/timestamp.h"

typedef enum LlmProvider
{
	LLM_OPENAI,
	LLM_ANTHROPIC
} LlmProvider;

typedef struct LlmReply
{
	char	   *text;			/* palloc'd, may be NULL */
	json_t	   *calls;			/* array of {id, name, input}, owned */
	json_t	   *assistant;		/* the provider-native assistant message, owned */
	int64		tokens_in;		/* every input token, cached ones included */
	int64		tokens_out;
	int64		tokens_cached;	/* input tokens read from the prompt cache */
	int64		tokens_cache_write; /* Anthropic cache_creation_input_tokens */
	int64		tokens_reasoning;	/* OpenAI completion_tokens_details.reasoning_tokens */
	char	   *refusal;		/* palloc'd: OpenAI message.refusal */
	char	   *stop;			/* palloc'd finish/stop reason */
	char	   *error;			/* palloc'd, set when the reply is unusable */
} LlmReply;

extern bool LlmParseProvider(const char *name, LlmProvider *out);
extern char *LlmEndpoint(LlmProvider provider, const char *base_url);
extern struct curl_slist *LlmHeaders(LlmProvider provider, const char *api_key);
extern bool LlmUrlEqual(const char *a, const char *b);
extern bool LlmUrlAllowed(const char *url);
extern const char *LlmKeyFor(const char *url);
extern char *LlmBuildBody(LlmProvider provider, const char *model, const char *system,
						  json_t *messages, json_t *tools, bool stream, int max_tokens);
extern bool LlmParseReply(LlmProvider provider, const char *body, size_t len, LlmReply *out);
extern bool LlmParseReplyJson(LlmProvider provider, json_t *root, LlmReply *out);
extern void LlmFreeReply(LlmReply *r);
extern void LlmAppendUser(LlmProvider provider, json_t *messages, const char *text);
extern void LlmAppendToolResults(LlmProvider provider, json_t *messages, json_t *results);
extern char *LlmErrorMessage(const char *body, size_t len);
extern bool LlmQuotaError(const char *body, size_t len);

/* the largest token count a reply may report (a step records it as an integer) */
#define LLM_MAX_TOKEN_COUNT		PG_INT32_MAX

/* how a reply's stop reason ends the turn (docs/worker.md, "Stop reasons") */
typedef enum LlmStopKind
{
	LLM_STOP_NORMAL,			/* end_turn, stop_sequence, stop, tool_use, tool_calls */
	LLM_STOP_PAUSE,				/* pause_turn: send the content back, ask again */
	LLM_STOP_REFUSAL,			/* refusal, content_filter, a message refusal */
	LLM_STOP_MAX_TOKENS,		/* max_tokens, length: the reply was cut */
	LLM_STOP_CONTEXT			/* model_context_window_exceeded */
} LlmStopKind;

extern LlmStopKind LlmStopKindOf(const LlmReply *r);
extern bool LlmStreamEnabled(const char *url);

/*
 * A streamed reply (server-sent events), parsed in the curl write callback
 * as it arrives: malloc and jansson only, never palloc or ereport.  The
 * events are folded into the body the provider would have sent without
 * streaming, so that the reply is parsed and recorded exactly as a
 * non-streamed one (LlmStreamFinish).
 */
typedef struct LlmStream
{
	LlmProvider provider;
	char	   *line;			/* the line being received */
	size_t		line_len;
	size_t		line_cap;
	char	   *data;			/* data: lines of the event being received */
	size_t		data_len;
	size_t		data_cap;
	char		event[64];		/* event: name of the event being received */
	char	   *text;			/* every text delta so far */
	size_t		text_len;
	size_t		text_cap;
	size_t		published;		/* bytes of text already sent on NOTIFY */
	TimestampTz last_publish;
	json_t	   *acc;			/* the reply body being assembled */
	struct StreamStr *strs;		/* strings growing by fragments (llm.c), a hash */
	size_t		nstrs;
	size_t		strs_cap;
	bool		done;			/* [DONE] or message_stop seen */
	bool		has_content;	/* OpenAI: the content is st->text */
	int			tool_blocks;	/* Anthropic: tool_use blocks started */
	bool		oom;
	char	   *fatal;			/* malloc'd: the stream broke a bound or the
								 * protocol (docs/worker.md, "Limits on what
								 * the provider sends"): the run fails, no retry */
	char	   *error;			/* malloc'd: an error event's message */
	char	   *error_type;		/* malloc'd: its type */
} LlmStream;

extern LlmStream *LlmStreamNew(LlmProvider provider);
extern bool LlmStreamFeed(LlmStream *st, const char *p, size_t n);
extern json_t *LlmStreamFinish(LlmStream *st);
extern void LlmStreamFree(LlmStream *st);

#endif							/* PG_AGENTS_LLM_H */
