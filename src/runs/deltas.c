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
#include "utils/builtins.h"

#include "deltas.h"

#define DELTA_CHUNK			3000

static SPIPlanPtr notify_plan = NULL;
static SPIPlanPtr insert_plan = NULL;

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
 * text ends inside a UTF-8 character).
 */
size_t
DeltasNotify(int64 run_id, const char *workspace, int64 conversation_id, int step, int attempt,
			 const char *text, size_t from, size_t upto)
{
	Oid			ins_types[6] = {TEXTOID, INT8OID, INT4OID, INT4OID, INT8OID, TEXTOID};
	Oid			types[1] = {TEXTOID};
	StringInfoData buf;

	initStringInfo(&buf);
	while (from < upto)
	{
		size_t		n = Min(upto - from, DELTA_CHUNK);
		size_t		e;
		Datum		ins[6];
		Datum		vals[1];

		e = Utf8Cut(text, from, from + n);
		if (e == from)
			return from;		/* an incomplete character: wait for the rest */
		if (pg_encoding_verifymbstr(PG_UTF8, text + from, e - from) != (int) (e - from))
			return upto;		/* not UTF-8: not published */
		ins[0] = CStringGetTextDatum(workspace);
		ins[1] = Int64GetDatum(run_id);
		ins[2] = Int32GetDatum(step);
		ins[3] = Int32GetDatum(attempt);
		ins[4] = Int64GetDatum((int64) from);
		ins[5] = PointerGetDatum(cstring_to_text_with_len(text + from, e - from));
		if (SpiUtilExecPlan(&insert_plan,
							"INSERT INTO agent.run_stream_text (workspace_id, run_id, step, attempt, \"offset\", text)"
							" VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING",
							6, ins_types, ins, NULL, false, 0) != SPI_OK_INSERT)
			elog(ERROR, "could not record a text delta");
		resetStringInfo(&buf);
		appendStringInfo(&buf, "{\"run_id\":" INT64_FORMAT, run_id);
		if (conversation_id > 0)
			appendStringInfo(&buf, ",\"conversation_id\":" INT64_FORMAT, conversation_id);
		appendStringInfo(&buf, ",\"step\":%d,\"attempt\":%d,\"offset\":%zu,\"length\":%zu}",
						 step, attempt, from, e - from);
		vals[0] = PointerGetDatum(cstring_to_text_with_len(buf.data, buf.len));
		if (SpiUtilExecPlan(&notify_plan, "SELECT pg_catalog.pg_notify('agent_run_deltas', $1)",
							 1, types, vals, NULL, false, 0) != SPI_OK_SELECT)
			elog(ERROR, "pg_notify failed");
		from = e;
	}
	pfree(buf.data);
	return from;
}
