/*-------------------------------------------------------------------------
 *
 * deltas.c
 *		The payloads of NOTIFY agent_run_deltas: the text of a streamed
 *		reply, published by the worker while it arrives (the throttle is in
 *		run_calls.c; docs/worker.md, "Streaming").
 *
 * A payload is {"run_id", "step", "attempt", "offset", "text"}, plus
 * "conversation_id" for a chat run of agent.send_message: the ids of the run
 * and nothing else of it.  Each holds at most DELTA_CHUNK bytes of
 * text cut on a UTF-8 boundary, halved until the payload is under
 * DELTA_MAX_PAYLOAD bytes (PostgreSQL refuses 8000 and more).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "jansson_prelude.h"
#include "spi_util.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"

#include "deltas.h"
#include "tools.h"

#define DELTA_CHUNK			3000
#define DELTA_MAX_PAYLOAD	7900

static SPIPlanPtr notify_plan = NULL;

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

/* appends text[0, len) as the contents of a JSON string */
static void
AppendJsonEscaped(StringInfo buf, const char *text, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const char *p = text;
	const char *end = text + len;

	while (p < end)
	{
		const char *q = p;

		while (q < end && *q != '"' && *q != '\\' && (unsigned char) *q >= 0x20)
			q++;
		appendBinaryStringInfo(buf, p, q - p);
		if (q >= end)
			break;
		if (*q == '"' || *q == '\\')
		{
			appendStringInfoChar(buf, '\\');
			appendStringInfoChar(buf, *q);
		}
		else if (*q == '\n')
			appendStringInfoString(buf, "\\n");
		else
		{
			appendStringInfoString(buf, "\\u00");
			appendStringInfoChar(buf, hex[((unsigned char) *q) >> 4]);
			appendStringInfoChar(buf, hex[((unsigned char) *q) & 15]);
		}
		p = q + 1;
	}
}

/*
 * Notifies text[from, upto) of a streamed call on agent_run_deltas (with the
 * run's conversation when it has one, else 0), inside
 * the caller's transaction (sent at its commit); returns the offset reached
 * (short of upto when the text ends inside a UTF-8 character).
 */
size_t
DeltasNotify(int64 run_id, int64 conversation_id, int step, int attempt, const char *text,
			 size_t from, size_t upto)
{
	Oid			types[1] = {TEXTOID};
	StringInfoData buf;

	initStringInfo(&buf);
	while (from < upto)
	{
		size_t		n = Min(upto - from, DELTA_CHUNK);
		size_t		e;
		Datum		vals[1];

		for (;;)
		{
			e = Utf8Cut(text, from, from + n);
			if (e == from)
				return from;	/* an incomplete character: wait for the rest */
			if (pg_encoding_verifymbstr(PG_UTF8, text + from, e - from) != (int) (e - from))
				return upto;	/* not UTF-8: not published */
			resetStringInfo(&buf);
			appendStringInfo(&buf, "{\"run_id\":" INT64_FORMAT, run_id);
			if (conversation_id > 0)
				appendStringInfo(&buf, ",\"conversation_id\":" INT64_FORMAT, conversation_id);
			appendStringInfo(&buf, ",\"step\":%d,\"attempt\":%d,\"offset\":%zu,\"text\":\"",
							 step, attempt, from);
			AppendJsonEscaped(&buf, text + from, e - from);
			appendStringInfoString(&buf, "\"}");
			if (buf.len <= DELTA_MAX_PAYLOAD || n <= 64)
				break;
			n /= 2;
		}
		vals[0] = PointerGetDatum(cstring_to_text_with_len(buf.data, buf.len));
		if (SpiUtilExecPlan(&notify_plan, "SELECT pg_catalog.pg_notify('agent_run_deltas', $1)",
							 1, types, vals, NULL, false, 0) != SPI_OK_SELECT)
			elog(ERROR, "pg_notify failed");
		from = e;
	}
	pfree(buf.data);
	return from;
}
