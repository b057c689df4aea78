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
 * Publishes text[from, upto) of a streamed call: each chunk is written to
 * agent.run_stream_text and announced on agent_run_deltas by its ids (with
 * the run's conversation when it has one), inside the caller's transaction
 * (sent at its commit); returns the offset reached (short of upto when the
 * text ends inside a UTF-8 character).  All the chunks of one call go in
 * one statement (one INSERT of every row, then one pg_notify per chunk, in
 * offset order), however many there are: a flush costs one executor run,
 * not two per chunk.
 */
size_t
DeltasNotify(int64 run_id, const char *workspace, int64 conversation_id, int step, int attempt,
			 const char *text, size_t from, size_t upto)
{
	Oid			types[7] = {TEXTOID, INT8OID, INT4OID, INT4OID, INT8ARRAYOID, TEXTARRAYOID, TEXTARRAYOID};
	Datum		vals[7];
	StringInfoData buf;
	int			nmax = (int) ((upto - from) / DELTA_CHUNK) + 2;
	Datum	   *offs;
	Datum	   *texts;
	Datum	   *payloads;
	int			n = 0;

	if (from >= upto)
		return from;
	offs = palloc(nmax * sizeof(Datum));
	texts = palloc(nmax * sizeof(Datum));
	payloads = palloc(nmax * sizeof(Datum));
	initStringInfo(&buf);
	while (from < upto)
	{
		size_t		len = Min(upto - from, DELTA_CHUNK);
		size_t		e;

		e = Utf8Cut(text, from, from + len);
		if (e == from)
			break;				/* an incomplete character: wait for the rest */
		if (pg_encoding_verifymbstr(PG_UTF8, text + from, e - from) != (int) (e - from))
		{
			from = upto;		/* not UTF-8: not published */
			break;
		}
		Assert(n < nmax);
		offs[n] = Int64GetDatum((int64) from);
		texts[n] = PointerGetDatum(cstring_to_text_with_len(text + from, e - from));
		resetStringInfo(&buf);
		appendStringInfo(&buf, "{\"run_id\":" INT64_FORMAT, run_id);
		if (conversation_id > 0)
			appendStringInfo(&buf, ",\"conversation_id\":" INT64_FORMAT, conversation_id);
		appendStringInfo(&buf, ",\"step\":%d,\"attempt\":%d,\"offset\":%zu,\"length\":%zu}",
						 step, attempt, from, e - from);
		payloads[n] = PointerGetDatum(cstring_to_text_with_len(buf.data, buf.len));
		n++;
		from = e;
	}
	if (n > 0)
	{
		vals[0] = CStringGetTextDatum(workspace);
		vals[1] = Int64GetDatum(run_id);
		vals[2] = Int32GetDatum(step);
		vals[3] = Int32GetDatum(attempt);
		vals[4] = PointerGetDatum(construct_array(offs, n, INT8OID, sizeof(int64), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
		vals[5] = PointerGetDatum(construct_array(texts, n, TEXTOID, -1, false, TYPALIGN_INT));
		vals[6] = PointerGetDatum(construct_array(payloads, n, TEXTOID, -1, false, TYPALIGN_INT));
		if (SpiUtilExecPlan(&publish_plan,
							"WITH d AS (INSERT INTO agent.run_stream_text"
							" (workspace_id, run_id, step, attempt, \"offset\", text)"
							" SELECT $1, $2, $3, $4, u.o, u.t FROM ROWS FROM (pg_catalog.unnest($5), pg_catalog.unnest($6)) AS u(o, t)"
							" ON CONFLICT DO NOTHING)"
							" SELECT pg_catalog.pg_notify('agent_run_deltas', p.p)"
							" FROM pg_catalog.unnest($7) WITH ORDINALITY AS p(p, i) ORDER BY p.i",
							7, types, vals, NULL, false, 0) != SPI_OK_SELECT || SPI_processed != (uint64) n)
			elog(ERROR, "could not publish the text deltas of run " INT64_FORMAT, run_id);
	}
	pfree(buf.data);
	pfree(offs);
	pfree(texts);
	pfree(payloads);
	return from;
}
