/*-------------------------------------------------------------------------
 *
 * deltas.c
 *		The deltas of a streamed reply, published by the worker while it
 *		arrives: rows of agent.run_stream_text, announced on NOTIFY
 *		agent_run_deltas by their ids (the throttle is in
 *		run_calls.c; docs/worker.md, "Streaming").
 *
 * A payload is {"run_id", "step", "attempt", "offset", "length"}, plus
 * "conversation_id" for a chat run of agent.send_message: ids only, no text
 * (a channel has no privileges: any role that may connect may LISTEN).  The
 * text of each delta, at most DELTA_CHUNK bytes cut on a UTF-8 boundary, is
 * a row of agent.run_stream_text, read through agent.run_deltas with the
 * visibility of agent.run_detail (issue 30).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "util/jansson_prelude.h"
#include "util/spi_util.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "deltas.h"

#define DELTA_CHUNK			3000

static SPIPlanPtr publish_plan = NULL;

/* end of the longest prefix of text[from, to) that ends on a UTF-8 boundary */
static size_t
Utf8Cut(const char *text, size_t from, size_t to)
{
	size_t		e = to;

	while (e > from && ((unsigned char) text[e - 1] & 0x80))
	{
		/* step back over a possibly incomplete character */
		size_t		start = e - 1;
		int			need;
		unsigned char c;

		while (start > from && ((unsigned char) text[start] & 0xC0) == 0x80)
			start--;
		c = (unsigned char) text[start];
		need = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 1;
		if (e - start >= (size_t) need)
			break;				/* complete */
		e = start;
	}
	return e;
}

/*
 * The deltas of one transaction, gathered by DeltasAdd (every call of the
 * flush) and published by DeltasPublish in one statement: one INSERT of
 * every row, then one pg_notify per delta, in the order they were added
 * (so in offset order for each call).  A flush costs one executor run,
 * not one per call nor two per chunk.  Its memory is its own (reset at
 * each publish, and when a rolled back unit left some behind).
 */
typedef struct DeltaSet
{
	MemoryContext cxt;
	int			n;
	int			cap;
	Datum	   *ws;
	Datum	   *runs;
	Datum	   *steps;
	Datum	   *attempts;
	Datum	   *offs;
	Datum	   *texts;
	Datum	   *payloads;
} DeltaSet;

static DeltaSet set;

/* forgets the deltas gathered (those of a unit that failed: never published) */
void
DeltasReset(void)
{
	if (set.cxt)
		MemoryContextReset(set.cxt);
	set.n = set.cap = 0;
}

/* room for one more delta in the set */
static void
DeltasGrow(void)
{
	MemoryContext old;
	int			cap;

	if (set.n < set.cap)
		return;
	if (set.cxt == NULL)
		set.cxt = AllocSetContextCreate(TopMemoryContext, "pg_agents deltas", ALLOCSET_DEFAULT_SIZES);
	cap = set.cap ? set.cap * 2 : 16;
	old = MemoryContextSwitchTo(set.cxt);
#define GROW(a) (a = set.cap ? repalloc(a, cap * sizeof(Datum)) : palloc(cap * sizeof(Datum)))
	GROW(set.ws);
	GROW(set.runs);
	GROW(set.steps);
	GROW(set.attempts);
	GROW(set.offs);
	GROW(set.texts);
	GROW(set.payloads);
#undef GROW
	MemoryContextSwitchTo(old);
	set.cap = cap;
}

/*
 * Adds text[from, upto) of a streamed call to the deltas of the
 * transaction (DeltasPublish sends them), in chunks of at most DELTA_CHUNK
 * bytes cut on a UTF-8 boundary, each announced on agent_run_deltas by
 * its ids (with the run's conversation when it has one); returns the
 * offset reached (short of upto when the text ends inside a UTF-8
 * character).
 */
size_t
DeltasAdd(int64 run_id, const char *workspace, int64 conversation_id, int step, int attempt,
		  const char *text, size_t from, size_t upto)
{
	char		buf[256];
	Datum		ws = (Datum) 0;

	while (from < upto)
	{
		size_t		len = Min(upto - from, DELTA_CHUNK);
		size_t		e;
		int			bl;
		MemoryContext old;

		e = Utf8Cut(text, from, from + len);
		if (e == from)
			break;				/* an incomplete character: wait for the rest */
		if (pg_encoding_verifymbstr(PG_UTF8, text + from, e - from) != (int) (e - from))
		{
			from = upto;		/* not UTF-8: not published */
			break;
		}
		DeltasGrow();
		old = MemoryContextSwitchTo(set.cxt);
		if (ws == (Datum) 0)
			ws = CStringGetTextDatum(workspace);
		if (conversation_id > 0)
			bl = snprintf(buf, sizeof(buf), "{\"run_id\":" INT64_FORMAT ",\"conversation_id\":" INT64_FORMAT
						  ",\"step\":%d,\"attempt\":%d,\"offset\":%zu,\"length\":%zu}",
						  run_id, conversation_id, step, attempt, from, e - from);
		else
			bl = snprintf(buf, sizeof(buf), "{\"run_id\":" INT64_FORMAT
						  ",\"step\":%d,\"attempt\":%d,\"offset\":%zu,\"length\":%zu}",
						  run_id, step, attempt, from, e - from);
		set.ws[set.n] = ws;
		set.runs[set.n] = Int64GetDatum(run_id);
		set.steps[set.n] = Int32GetDatum(step);
		set.attempts[set.n] = Int32GetDatum(attempt);
		set.offs[set.n] = Int64GetDatum((int64) from);
		set.texts[set.n] = PointerGetDatum(cstring_to_text_with_len(text + from, e - from));
		set.payloads[set.n] = PointerGetDatum(cstring_to_text_with_len(buf, bl));
		MemoryContextSwitchTo(old);
		set.n++;
		from = e;
	}
	return from;
}

/*
 * Publishes the deltas gathered, inside the caller's transaction (NOTIFY is
 * sent at its commit): their rows of agent.run_stream_text and their
 * notifications, in one statement.
 */
void
DeltasPublish(void)
{
	Oid			types[7] = {TEXTARRAYOID, INT8ARRAYOID, INT4ARRAYOID, INT4ARRAYOID, INT8ARRAYOID,
	TEXTARRAYOID, TEXTARRAYOID};
	Datum		vals[7];
	int			n = set.n;

	if (n == 0)
		return;
	vals[0] = PointerGetDatum(construct_array(set.ws, n, TEXTOID, -1, false, TYPALIGN_INT));
	vals[1] = PointerGetDatum(construct_array(set.runs, n, INT8OID, sizeof(int64), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	vals[2] = PointerGetDatum(construct_array(set.steps, n, INT4OID, sizeof(int32), true, TYPALIGN_INT));
	vals[3] = PointerGetDatum(construct_array(set.attempts, n, INT4OID, sizeof(int32), true, TYPALIGN_INT));
	vals[4] = PointerGetDatum(construct_array(set.offs, n, INT8OID, sizeof(int64), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	vals[5] = PointerGetDatum(construct_array(set.texts, n, TEXTOID, -1, false, TYPALIGN_INT));
	vals[6] = PointerGetDatum(construct_array(set.payloads, n, TEXTOID, -1, false, TYPALIGN_INT));
	if (SpiUtilExecPlan(&publish_plan,
						"WITH d AS (INSERT INTO agent.run_stream_text"
						" (workspace_id, run_id, step, attempt, \"offset\", text)"
						" SELECT u.w, u.r, u.s, u.a, u.o, u.t"
						" FROM ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($2), pg_catalog.unnest($3),"
						" pg_catalog.unnest($4), pg_catalog.unnest($5), pg_catalog.unnest($6)) AS u(w, r, s, a, o, t)"
						" ON CONFLICT DO NOTHING)"
						" SELECT pg_catalog.pg_notify('agent_run_deltas', p.p)"
						" FROM pg_catalog.unnest($7) WITH ORDINALITY AS p(p, i) ORDER BY p.i",
						7, types, vals, NULL, false, 0) != SPI_OK_SELECT || SPI_processed != (uint64) n)
		elog(ERROR, "could not publish %d text deltas", n);
	DeltasReset();
}
