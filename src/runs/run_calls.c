/*-------------------------------------------------------------------------
 *
 * run_calls.c
 *		The LLM calls of the runs in flight: a slot's request started
 *		(within its provider's limits), its reply recorded (alone, or with
 *		the other final answers of the pass in one batch), a failed call
 *		retried with backoff or failing the run, and the text of streamed
 *		replies published on NOTIFY agent_run_deltas as it arrives.
 *
 * Requests are only started and collected between transactions (the
 * worker loop, run_loop.c); what a reply changes is recorded in a unit.
 * Above run_slot.c, run_prompt.c and run_tools.c (a reply's tool calls);
 * only run_loop.c calls it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "util/jansson_prelude.h"

#include "run_int.h"

#include "deltas.h"
#include "tools/tool_gate.h"
#include "util/guc.h"

#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"


#define LLM_MAX_RETRIES		3
#define BACKOFF_BASE_MS		250
#define BACKOFF_MAX_MS		60000

/* ---------------------------------------------------------------------
 * Starting a call
 * ---------------------------------------------------------------------
 */

/* the request's header hook (http.c): the provider's rate-limit headers */
static void
SlotRateHeader(void *arg, const char *line, size_t n)
{
	RateHeaderParse((RateHeaders *) arg, line, n);
}

/* the request's stream hook (http.c): a streamed reply parsed as it arrives */
static bool
SlotStreamFeed(void *arg, const char *data, size_t n)
{
	return LlmStreamFeed((LlmStream *) arg, data, n);
}

/*
 * Starts the slot's next request, unless the run has used its turns (it
 * fails) or its provider has no headroom (it stays READY, waiting).
 */
void
RunCallStart(Slot *s)
{
	char	   *body;
	char	   *url;
	struct curl_slist *headers;
	ProviderResolved rp;
	char	   *perr = NULL;
	long		wait_ms;
	bool		stream;

	if (s->iterations >= s->max_iterations)
	{
		RunSlotFail(s, "failed",
					psprintf("the model did not give a final answer within max_iterations (%d) turns",
							 s->max_iterations));
		return;
	}
	/* providers: the key, headers and limits as they are now (rotation) */
	if (!RunSlotProvider(s, &rp, &perr))
	{
		RunSlotFail(s, "failed", perr);
		return;
	}
	s->rl = rp.ratelimit;
	if (s->rl_est <= 0)			/* about 4 bytes a token, refined by usage */
		s->rl_est = (strlen(s->system) + 200) / 4;
	if (!RateLimitAdmit(s->rl, s->rl_est, &wait_ms))
	{
		if (!s->rl_waiting)
		{
			RateLimitCountWait(s->rl);
			s->rl_lease_at = GetCurrentTimestamp();
		}
		s->rl_waiting = true;	/* stays READY; the loop sleeps (RunsNextTimeout) */
		s->rl_until = wait_ms >= 0 ? TimestampTzPlusMilliseconds(GetCurrentTimestamp(), wait_ms) : 0;
		return;
	}
	s->rl_waiting = false;
	s->rl_held = s->rl >= 0;
	/* streaming: a named provider's "stream" setting, else pg_agents.llm_stream */
	stream = rp.name ? rp.stream : LlmStreamEnabled(s->url);
	body = RunPromptBody(s, stream);
	url = LlmEndpoint(s->provider, s->url);
	/* the key only ever goes to its provider's base URL (providers.c) */
	headers = ProviderAddHeaders(&rp, LlmHeaders(s->provider, rp.api_key));
	LlmStreamFree(s->stream);
	s->stream = NULL;
	if (stream)
	{
		headers = curl_slist_append(headers, "Accept: text/event-stream");
		s->stream = LlmStreamNew(s->provider);
		s->stream_step = s->iterations + 1;
		s->stream_pub = 0;
		if (s->stream)
			s->stream->last_publish = GetCurrentTimestamp();
	}
	s->call_started = GetCurrentTimestamp();
	s->state = SLOT_HTTP;
	RateHeadersInit(&s->rl_headers);
	s->req = HttpStart(url, headers, body, rp.request_timeout, s);
	HttpSetHeaderHook(s->req, SlotRateHeader, &s->rl_headers);
	if (s->stream)
		HttpSetStream(s->req, SlotStreamFeed, s->stream);
	s->rl_est = strlen(body) / 4 + 1;	/* the next request's estimate */
	pfree(url);
}

/*
 * providers: the request of the slot ended; its share of the limits comes
 * back.  The limiter's last error (agent.provider_status, which every
 * workspace and pg_monitor read) is a status line in the worker's own
 * words, never the error as the run's step has it: a provider's body may
 * echo the prompt of the run.
 */
static void
SlotLimiterDone(Slot *s, HttpRequest *req, int64 used, const char *error)
{
	char		line[128];

	if (!s->rl_held)
		return;
	s->rl_held = false;
	if (error == NULL)
		line[0] = '\0';
	else if (req->result != CURLE_OK)
		snprintf(line, sizeof(line), "transport error: %s", curl_easy_strerror(req->result));
	else if (req->status >= 400)
		snprintf(line, sizeof(line), "HTTP %ld", req->status);
	else
		snprintf(line, sizeof(line), "unusable reply (HTTP %ld)", req->status);
	RateLimitDone(s->rl, s->rl_est, used, req->result == CURLE_OK ? req->status : 0,
				  req->retry_after_ms, &s->rl_headers, error ? line : NULL);
}


/* ---------------------------------------------------------------------
 * Streaming: text deltas on NOTIFY agent_run_deltas (docs/worker.md)
 *
 * Throttle: the worker publishes the new text of every streamed call at
 * most once per DELTA_MIN_MS (sooner only for a call with DELTA_MAX_BYTES
 * pending), all calls in one short transaction: the one that records
 * replies when the pass has one, else its own.  So a listener gets a
 * call's text at most 100 ms after it arrived, in at most ten
 * notifications a second per call, and the worker commits at most ten
 * delta transactions a second however many runs stream.  The rest of a
 * reply goes out in the transaction that records it.  The payloads are
 * made by src/runs/deltas.c.
 * ---------------------------------------------------------------------
 */
#define DELTA_MIN_MS		100
#define DELTA_MAX_BYTES		65536

static TimestampTz last_deltas = 0;	/* the last delta notifications */

/* text[from, upto) of the slot's stream to the unit's deltas; returns the new offset */
static size_t
NotifyDeltas(Slot *s, size_t from, size_t upto)
{
	return DeltasAdd(s->run_id, s->workspace, s->conversation_id, s->stream_step, s->http_attempts + 1,
						s->stream->text, from, upto);
}

/* the rest of a finished stream, inside the unit that records the reply */
static void
NotifyRest(Slot *s)
{
	if (s->stream && s->stream->text_len > s->stream->published)
		(void) NotifyDeltas(s, s->stream->published, s->stream->text_len);
}

/* whether the slot's call in flight has text due on NOTIFY now (see the throttle above) */
static bool
DeltaDue(Slot *s, TimestampTz now)
{
	LlmStream  *st = s->stream;

	/* (a call whose reply came is no longer due: its unit sends the rest) */
	if (s->state != SLOT_HTTP || s->req == NULL || st == NULL || st->text_len <= st->published)
		return false;
	return st->text_len - st->published >= DELTA_MAX_BYTES ||
		TimestampDifferenceExceeds(last_deltas, now, DELTA_MIN_MS);
}

/* inside a unit: notifies the due text of every call in flight */
static void
DeltasInUnit(TimestampTz now)
{
	for (int i = 0; i < MAX_SLOTS; i++)
		if (RunSlotTable[i].stream)
			RunSlotTable[i].stream_pub = RunSlotTable[i].stream->published;
	for (int i = 0; i < MAX_SLOTS; i++)
		if (DeltaDue(&RunSlotTable[i], now))
			RunSlotTable[i].stream_pub = NotifyDeltas(&RunSlotTable[i], RunSlotTable[i].stream->published,
											   RunSlotTable[i].stream->text_len);
}

/* after the unit of DeltasInUnit committed */
static void
DeltasCommitted(TimestampTz now)
{
	bool		any = false;

	for (int i = 0; i < MAX_SLOTS; i++)
		if (DeltaDue(&RunSlotTable[i], now))
		{
			RunSlotTable[i].stream->published = Max(RunSlotTable[i].stream_pub, RunSlotTable[i].stream->published);
			RunSlotTable[i].stream->last_publish = now;
			any = true;
		}
	if (any)
		last_deltas = now;
}

/* the unit of the deltas due, when no reply is recorded in the pass */
static void
DeltaUnit(Slot *unused, void *arg)
{
	DeltasReset();
	DeltasInUnit(*(TimestampTz *) arg);
	DeltasPublish();
}

/* one short transaction for the deltas due (NOTIFY is sent at its commit) */
void
RunCallsPublishDeltas(void)
{
	TimestampTz now = GetCurrentTimestamp();
	bool		any = false;

	for (int i = 0; i < MAX_SLOTS && !any; i++)
		any = DeltaDue(&RunSlotTable[i], now);
	if (!any)
		return;
	if (RunSlotUnit("pg_agents: publishing text deltas", DeltaUnit, NULL, &now))
		DeltasCommitted(now);
}

typedef struct ReplyArg
{
	LlmReply   *reply;
} ReplyArg;

/*
 * A stop reason that does not end the turn as usual (docs/worker.md, "Stop
 * reasons"): a paused turn goes on, a refusal, a cut reply or a full
 * context window fails the run.  true when it did (the slot's state set).
 */
static bool
StopReasonEndsTurn(Slot *s, LlmReply *r)
{
	switch (LlmStopKindOf(r))
	{
		case LLM_STOP_NORMAL:
			break;
		case LLM_STOP_PAUSE:
			/* a long turn paused by the provider: its content goes back as is */
			json_array_append(s->messages, r->assistant);
			RunSqlSaveState(s);
			s->state = SLOT_READY;
			return true;
		case LLM_STOP_REFUSAL:
			{
				json_t	   *result = json_pack("{s:s,s:s?,s:s?}", "stop", r->stop ? r->stop : "refusal",
											   "text", r->text, "refusal", r->refusal);

				RunSqlFinish(s->run_id, s->workspace, "failed", result,
							 psprintf("the model refused to answer (stop reason %s)%s%s",
									  r->stop ? r->stop : "refusal",
									  r->refusal ? ": " : "", r->refusal ? r->refusal : ""));
				json_decref(result);
				s->state = SLOT_FREE;
				return true;
			}
		case LLM_STOP_MAX_TOKENS:
			RunSqlFinish(s->run_id, s->workspace, "failed", NULL,
						 psprintf("the reply was cut at max_tokens (stop reason %s, %lld tokens out): "
								  "the model's answer is incomplete",
								  r->stop, (long long) r->tokens_out));
			s->state = SLOT_FREE;
			return true;
		case LLM_STOP_CONTEXT:
			RunSqlFinish(s->run_id, s->workspace, "failed", NULL,
						 psprintf("the conversation no longer fits the model's context window "
								  "(stop reason %s, %lld tokens in)", r->stop, (long long) r->tokens_in));
			s->state = SLOT_FREE;
			return true;
	}
	return false;
}

/*
 * A reply recorded alone (its llm step, its usage), then what it asks for:
 * the run ends (a final answer, a refusal, a cut reply, the budget used
 * up), goes on (a paused turn, a message that arrived), or executes the
 * tool calls of the reply.
 */
static void
ReplyUnit(Slot *s, void *arg)
{
	LlmReply   *r = ((ReplyArg *) arg)->reply;
	json_t	   *in;
	json_t	   *out;
	int64		budget;
	int64		used;

	if (!RunSqlHoldLease(s->run_id, s->workspace))
	{
		s->state = SLOT_FREE;
		return;
	}
	RunPromptStepJson(s, r, &in, &out);
	ToolGateRecordStep(s->run_id, s->workspace, "llm", s->model, in, out, "ok", r->tokens_in + r->tokens_out, s->call_started);
	json_decref(in);
	json_decref(out);
	DeltasReset();
	NotifyRest(s);
	DeltasPublish();
	if (!RunSqlAfterUsage(s, r, &budget, &used))
	{
		s->state = SLOT_FREE;	/* add_usage ended it (budget), or someone cancelled it */
		return;
	}
	s->iterations++;
	if (used >= budget)
	{
		RunSqlFinish(s->run_id, s->workspace, "budget_exceeded", NULL,
					 psprintf("token budget of " INT64_FORMAT " exhausted (" INT64_FORMAT " used)", budget, used));
		s->state = SLOT_FREE;
		return;
	}

	/* the stop reasons that do not end the turn as usual (docs/worker.md) */
	if (StopReasonEndsTurn(s, r))
		return;

	/* teams: a message arrived during the call, the run goes on */
	if (json_array_size(r->calls) == 0 && ToolsBetweenTurnsPending(s->run_id, s->workspace))
	{
		json_array_append(s->messages, r->assistant);
		(void) ToolsBetweenTurns(s->run_id, s->workspace, s->provider, s->messages);
		RunSqlSaveState(s);
		s->state = SLOT_READY;
		return;
	}

	if (json_array_size(r->calls) == 0)
	{
		json_t	   *result = json_pack("{s:s}", "text", r->text ? r->text : "");

		RunSqlFinish(s->run_id, s->workspace, "succeeded", result, NULL);
		json_decref(result);
		s->state = SLOT_FREE;
		return;
	}

	json_array_append(s->messages, r->assistant);
	if (s->pending)
		json_decref(s->pending);
	if (s->results)
		json_decref(s->results);
	s->pending = json_incref(r->calls);
	s->results = json_array();
	RunToolsExecute(s);
}

/* the step of a call that is retried (the argument: its json) */
static void
RetryUnit(Slot *s, void *arg)
{
	RunSqlRecordRetry(s, (json_t *) arg);
}

/* whether a failed request may succeed if sent again (429 but for a quota, 5xx, network) */
static bool
Retryable(HttpRequest *req)
{
	if (req->resp_too_big)
		return false;
	switch (req->result)
	{
		case CURLE_OK:
			/* a 429 for an exhausted quota or spend limit never succeeds */
			if (req->status == 429 && req->stream_mode != 1 && LlmQuotaError(req->resp, req->resp_len))
				return false;
			return req->status == 429 || req->status >= 500;
		case CURLE_OPERATION_TIMEDOUT:
		case CURLE_COULDNT_CONNECT:
		case CURLE_COULDNT_RESOLVE_HOST:
		case CURLE_GOT_NOTHING:
		case CURLE_SEND_ERROR:
		case CURLE_RECV_ERROR:
			return true;
		default:
			return false;
	}
}

/* what a failed request's step and the run's error say of it */
static char *
DescribeFailure(HttpRequest *req)
{
	if (req->resp_too_big)
		return psprintf("the LLM reply is larger than pg_agents.max_reply_bytes (%zu bytes): the worker stopped reading it",
						req->max_bytes);
	if (req->result == CURLE_OPERATION_TIMEDOUT)
		return psprintf("LLM request timed out after %d ms", pg_agents_request_timeout);
	if (req->result == CURLE_PARTIAL_FILE)
		return psprintf("truncated response from the LLM: the connection closed after %zu bytes", req->resp_len);
	if (req->result != CURLE_OK)
		return psprintf("could not reach the LLM endpoint: %s",
						req->errbuf[0] ? req->errbuf : curl_easy_strerror(req->result));
	return psprintf("LLM endpoint returned HTTP %ld: %s%s%s%s", req->status,
					LlmErrorMessage(req->resp, req->resp_len),
					req->request_id[0] ? " (request id " : "", req->request_id,
					req->request_id[0] ? ")" : "");
}

/*
 * Final answers of root runs are recorded in batches: one transaction and
 * a few set-based statements for all of them (agent._worker_finish_replies)
 * instead of one transaction of a dozen statements each.  When the batch
 * fails, each reply is recorded alone as before, so that an error of one
 * run fails only that run.
 */
#define REPLY_BATCH		32

/*
 * Streamed replies end spread out (each stream takes its time), not in
 * bursts: recorded as soon as each came, a batch held little more than one
 * reply, and recording cost twice as much per run as without streaming.
 * So while other streamed calls are in flight, a final answer waits up to
 * REPLY_WAIT_MS for the ones that follow (RunCallsFlushDue); without
 * streams in flight it is recorded at once, as before.
 */
#define REPLY_WAIT_MS	10

typedef struct BatchItem
{
	Slot	   *s;
	LlmReply	reply;
	char		outcome;		/* f finished, c continue, g gone, s single */
	json_t	   *saved_messages; /* before a "continue" changed them */
	int			saved_iterations;
} BatchItem;

typedef struct ReplyBatch
{
	int			n;
	TimestampTz deltas_at;		/* the due deltas of calls in flight go along */
	BatchItem	items[REPLY_BATCH];
} ReplyBatch;

static ReplyBatch batch;
static TimestampTz batch_since = 0;	/* when its first reply came */
static MemoryContext batch_cxt = NULL;	/* the strings of its replies: a batch may
										 * outlive the pass (and its memory) */

/* a copy of v in the batch's memory (NULL stays NULL) */
static char *
BatchStrdup(const char *v)
{
	return v ? MemoryContextStrdup(batch_cxt, v) : NULL;
}

/*
 * The batch's unit: the replies recorded together (the steps, the usage,
 * the end of the runs: agent._worker_finish_replies), the rest of their
 * streams and the deltas due, and the runs that go on (a message arrived)
 * given their messages.
 */
static void
BatchUnit(Slot *unused, void *arg)
{
	ReplyBatch *b = (ReplyBatch *) arg;
	json_t	   *arr = json_array();
	char	   *str;
	char	   *p;
	int64		ids[REPLY_BATCH];
	char		outcomes[REPLY_BATCH];

	for (int i = 0; i < b->n; i++)
	{
		BatchItem  *it = &b->items[i];
		Slot	   *s = it->s;
		LlmReply   *r = &it->reply;
		json_t	   *in;
		json_t	   *out;
		int64		tin = Min(r->tokens_in, PG_INT32_MAX);
		int64		tout = Min(r->tokens_out, PG_INT32_MAX);

		RunPromptStepJson(s, r, &in, &out);
		json_array_append_new(arr, json_pack("{s:I,s:s,s:o,s:o,s:I,s:I,s:I,s:I,s:I,s:s?}",
											 "run_id", (json_int_t) s->run_id,
											 "model", s->model,
											 "input", in,
											 "output", out,
											 "tokens", (json_int_t) Min(r->tokens_in + r->tokens_out, PG_INT32_MAX),
											 "tokens_in", (json_int_t) tin,
											 "tokens_out", (json_int_t) tout,
											 "tokens_cached", (json_int_t) Min(r->tokens_cached, PG_INT32_MAX),
											 "started_us", (json_int_t) (s->call_started +
																		 ((POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) *
																		  SECS_PER_DAY * USECS_PER_SEC)),
											 "text", r->text));
		it->outcome = 's';
		it->saved_messages = NULL;
		ids[i] = s->run_id;
		outcomes[i] = 's';
	}
	str = json_dumps(arr, JSON_COMPACT);
	p = pstrdup(str);
	free(str);
	json_decref(arr);
	RunSqlFinishReplies(p, ids, outcomes, b->n);
	for (int i = 0; i < b->n; i++)
		b->items[i].outcome = outcomes[i];

	/* the rest of streamed answers recorded here (the others: ReplyUnit), in one statement with the deltas due */
	DeltasReset();
	for (int i = 0; i < b->n; i++)
		if (b->items[i].outcome == 'f' || b->items[i].outcome == 'c')
			NotifyRest(b->items[i].s);
	DeltasInUnit(b->deltas_at);
	DeltasPublish();

	/* teams: a message arrived during the call, the run goes on */
	for (int i = 0; i < b->n; i++)
	{
		BatchItem  *it = &b->items[i];
		Slot	   *s = it->s;

		if (it->outcome != 'c')
			continue;
		it->saved_messages = s->messages;
		it->saved_iterations = s->iterations;
		s->messages = json_copy(s->messages);
		s->iterations++;
		json_array_append(s->messages, it->reply.assistant);
		(void) ToolsBetweenTurns(s->run_id, s->workspace, s->provider, s->messages);
		RunSqlSaveState(s);
	}
}

/* records the batched replies; the slots end, go on, or are recorded alone */
void
RunCallsFlush(void)
{
	ReplyBatch *b = &batch;
	bool		ok;

	if (b->n == 0)
		return;
	b->deltas_at = GetCurrentTimestamp();
	ok = RunSlotUnit("pg_agents: recording LLM replies", BatchUnit, NULL, b);
	if (ok)
		DeltasCommitted(b->deltas_at);
	for (int i = 0; i < b->n; i++)
	{
		BatchItem  *it = &b->items[i];
		Slot	   *s = it->s;

		if (!ok && it->saved_messages)
		{
			/* rolled back: the conversation as it was */
			json_decref(s->messages);
			s->messages = it->saved_messages;
			s->iterations = it->saved_iterations;
			it->saved_messages = NULL;
		}
		if (ok && (it->outcome == 'f' || it->outcome == 'g'))
			RunSlotFree(s);
		else if (ok && it->outcome == 'c')
		{
			json_decref(it->saved_messages);
			s->state = SLOT_READY;
		}
		else
		{
			ReplyArg	ra;

			memset(&ra, 0, sizeof(ra));
			ra.reply = &it->reply;
			RunSlotUnitOrFail(s, "pg_agents: recording an LLM reply", ReplyUnit, &ra);
		}
		LlmFreeReply(&it->reply);
	}
	b->n = 0;
	MemoryContextReset(batch_cxt);
}

/* providers: a text (an error from the provider) without the provider's key in it */
static char *
ScrubText(Slot *s, char *why)
{
	ProviderResolved rp;
	char	   *perr;

	if (RunSlotProvider(s, &rp, &perr))
		why = ProviderScrub(&rp, why);
	return why;
}

/*
 * A streamed 200 that did not end well (an error event, or cut before its
 * last event, message_stop or [DONE]): why, the key scrubbed out, and
 * whether it is worth retrying; NULL when it ended, *streamed then the body
 * it folded into.
 */
static char *
StreamFailure(Slot *s, HttpRequest *req, json_t **streamed, bool *retry)
{
	char	   *why = NULL;

	*streamed = LlmStreamFinish(s->stream);
	if (s->stream->fatal)
	{
		/* a bound or the protocol broken (llm.c): the same stream again would be */
		why = pstrdup(s->stream->fatal);
		*retry = false;
	}
	else if (s->stream->error)
	{
		why = psprintf("the LLM stream ended with an error event: %s%s%s%s%s%s",
					   s->stream->error_type ? s->stream->error_type : "",
					   s->stream->error_type ? ": " : "", s->stream->error,
					   req->request_id[0] ? " (request id " : "", req->request_id,
					   req->request_id[0] ? ")" : "");
		*retry = s->stream->error_type == NULL ||
			strcmp(s->stream->error_type, "invalid_request_error") != 0;
	}
	else if (*streamed == NULL || req->result != CURLE_OK)
	{
		why = psprintf("the LLM stream was cut after %zu bytes: %s", req->resp_len,
					   req->result != CURLE_OK
					   ? (req->errbuf[0] ? req->errbuf : curl_easy_strerror(req->result))
					   : "it ended without its last event");
		*retry = true;
	}
	if (why)
	{
		why = ScrubText(s, why);
		if (*streamed)
		{
			json_decref(*streamed);
			*streamed = NULL;
		}
	}
	return why;
}

/* a request that failed (no reply, or not a 200): why, the key scrubbed out */
static char *
RequestFailure(Slot *s, HttpRequest *req, bool *retry)
{
	char	   *why = ScrubText(s, DescribeFailure(req));

	*retry = Retryable(req);
	if (req->status == 429 && !*retry)
		why = psprintf("%s: the provider's quota or spend limit is exhausted, retrying cannot help", why);
	return why;
}

/*
 * A failed call: sent again after a backoff (the Retry-After of the reply,
 * else exponential with jitter) while attempts remain, its retry step
 * recorded; else the run fails.
 */
static void
CallFailed(Slot *s, HttpRequest *req, char *why, bool retry)
{
	long		delay;
	json_t	   *info;

	SlotLimiterDone(s, req, -1, why);
	if (!retry || s->http_attempts >= LLM_MAX_RETRIES)
	{
		HttpFree(req);
		if (retry || s->http_attempts > 0)
			why = psprintf("%s (gave up after %d attempts)", why, s->http_attempts + 1);
		RunSlotFail(s, "failed", why);
		return;
	}
	if (req->retry_after_ms >= 0)
		delay = Min(req->retry_after_ms, BACKOFF_MAX_MS) + random() % 50;
	else
	{
		delay = BACKOFF_BASE_MS * (1L << s->http_attempts);
		delay = Min(delay, BACKOFF_MAX_MS);
		delay = delay / 2 + random() % (delay / 2 + 1);
	}
	s->http_attempts++;
	info = json_pack("{s:s,s:i,s:i,s:I,s:b}", "error", why, "attempt", s->http_attempts,
					 "http_status", (int) req->status, "retry_in_ms", (json_int_t) delay,
					 "retry_after", req->retry_after_ms >= 0);
	if (req->request_id[0])
		json_object_set_new(info, "request_id", json_string(req->request_id));
	HttpFree(req);
	s->state = SLOT_BACKOFF;
	s->next_at = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), delay);
	if (!RunSlotUnit("pg_agents: recording a retry", RetryUnit, s, info))
	{
		json_decref(info);
		RunSlotFail(s, "failed", psprintf("internal error of the worker: %s", RunSlotUnitError));
		return;
	}
	json_decref(info);
	if (s->state == SLOT_FREE)
		RunSlotFree(s);
}

/*
 * A call that got its reply: parsed (a reply that cannot be used fails the
 * run), then batched when it is a final answer, else recorded alone.
 */
static void
CallReplied(Slot *s, HttpRequest *req, json_t *streamed)
{
	LlmReply	r;
	ReplyArg	ra;
	bool		parsed;

	if (streamed)
		parsed = LlmParseReplyJson(s->provider, streamed, &r);	/* takes it */
	else
		parsed = LlmParseReply(s->provider, req->resp, req->resp_len, &r);
	if (!parsed)
	{
		SlotLimiterDone(s, req, -1, r.error);
		HttpFree(req);
		LlmFreeReply(&r);
		RunSlotFail(s, "failed", r.error);
		return;
	}
	SlotLimiterDone(s, req, r.tokens_in + r.tokens_out, NULL);
	HttpFree(req);
	s->http_attempts = 0;
	if (json_array_size(r.calls) == 0 && LlmStopKindOf(&r) == LLM_STOP_NORMAL && batch.n < REPLY_BATCH)
	{
		/* a final answer: recorded with the others (RunCallsFlush) */
		if (batch.n == 0)
			batch_since = GetCurrentTimestamp();
		if (batch_cxt == NULL)
			batch_cxt = AllocSetContextCreate(TopMemoryContext, "pg_agents reply batch", ALLOCSET_DEFAULT_SIZES);
		r.text = BatchStrdup(r.text);
		r.refusal = BatchStrdup(r.refusal);
		r.stop = BatchStrdup(r.stop);
		r.error = BatchStrdup(r.error);
		batch.items[batch.n].s = s;
		batch.items[batch.n].reply = r;
		batch.items[batch.n].saved_messages = NULL;
		batch.n++;
		return;
	}
	ra.reply = &r;
	RunSlotUnitOrFail(s, "pg_agents: recording an LLM reply", ReplyUnit, &ra);
	LlmFreeReply(&r);
}

/*
 * The slot's request ended: a reply is recorded (a final answer batched
 * with the others of the pass), a failure retried after a backoff or the
 * run failed with what went wrong (the provider's key scrubbed out).
 */
void
RunCallDone(Slot *s, HttpRequest *req)
{
	char	   *why = NULL;
	bool		retry = false;
	json_t	   *streamed = NULL;

	s->req = NULL;
	CHECK_FOR_INTERRUPTS();
	if (req->stream_mode == 1 && !req->resp_too_big)
		why = StreamFailure(s, req, &streamed, &retry);
	else if (req->result != CURLE_OK || req->status != 200)
		why = RequestFailure(s, req, &retry);
	if (why)
		CallFailed(s, req, why, retry);
	else
		CallReplied(s, req, streamed);
}

/* the batch of final answers is full: record it before collecting more */
bool
RunCallsBatchFull(void)
{
	return batch.n == REPLY_BATCH;
}

/* no final answer waits to be recorded */
bool
RunCallsBatchEmpty(void)
{
	return batch.n == 0;
}

/* a streamed call is in flight (its reply not come yet) */
static bool
StreamsInFlight(void)
{
	for (int i = 0; i < MAX_SLOTS; i++)
		if (RunSlotTable[i].state == SLOT_HTTP && RunSlotTable[i].req != NULL && RunSlotTable[i].stream)
			return true;
	return false;
}

/*
 * Whether the batch of final answers is to be recorded now: full, waited
 * REPLY_WAIT_MS, or no streamed call in flight whose reply could join it.
 * *wait_ms (when not NULL): how long it may still wait.
 */
bool
RunCallsFlushDue(TimestampTz now, long *wait_ms)
{
	long		left;

	if (wait_ms)
		*wait_ms = 0;
	if (batch.n == 0)
		return false;
	if (batch.n == REPLY_BATCH || !StreamsInFlight())
		return true;
	left = REPLY_WAIT_MS - (long) ((now - batch_since) / 1000);
	if (left <= 0)
		return true;
	if (wait_ms)
		*wait_ms = left;
	return false;
}

/* how long until the text of a streamed call in flight is due on NOTIFY (ms) */
long
RunCallsDeltaWait(TimestampTz now)
{
	return DELTA_MIN_MS - (long) ((now - last_deltas) / 1000);
}
