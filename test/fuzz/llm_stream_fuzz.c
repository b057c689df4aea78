/*
 * libFuzzer harness for the streamed replies of both LLM wire formats
 * (src/llm/llm.c, built against test/fuzz/shim): the server-sent-events reader
 * and the folding of OpenAI chunks and Anthropic events into a body
 * (LlmStreamNew/Feed/Finish), then that body through LlmParseReplyJson and
 * LlmStopKindOf as the worker does.
 *
 * Input: one byte (bit 0: Anthropic, else OpenAI; bits 1-2 pick
 * pg_agents.max_tool_calls_per_turn among 64, 1, 2, 10000), one byte that
 * seeds the chunk boundaries, then the stream as received.  The stream is
 * fed twice: at once, and in chunks of 1 to 64 bytes chosen from the seed
 * (the seed byte's low bits also pick runs of 1-byte chunks), so that a
 * boundary falls anywhere: inside a line end, a "data:" prefix, a UTF-8
 * sequence, an escape.
 *
 * Checks, beyond "no crash, no leak, no sanitizer report, within the time
 * and memory limits":
 *   - the chunking changes nothing: both feeds end with the same body (or
 *     both without one), the same error and the same text;
 *   - the body, when there is one, parses as a reply would (the checks of
 *     llm_reply_fuzz.c).
 */
#include "postgres.h"

#include "util/jansson_prelude.h"

#include "llm/llm.h"
#include "util/guc.h"
#include "shim/pg_shim.h"

static const int call_caps[] = {64, 1, 2, 10000};

/* the stream fed in chunks whose lengths come from seed; its body (or NULL) */
static json_t *
Feed(LlmProvider provider, const char *p, size_t n, int seed, LlmStream **out)
{
	LlmStream  *st = LlmStreamNew(provider);
	uint32		x = 2463534242u ^ (uint32) seed * 2654435761u;

	if (st == NULL)
		abort();
	while (n > 0)
	{
		size_t		take;

		if (seed < 0)
			take = n;
		else
		{
			x ^= x << 13;
			x ^= x >> 17;
			x ^= x << 5;
			/* seed & 3 == 0: many single bytes; else 1-64 */
			take = ((seed & 3) == 0 && (x & 1)) ? 1 : 1 + (x >> 8) % 64;
		}
		if (take > n)
			take = n;
		if (!LlmStreamFeed(st, p, take))
			break;
		p += take;
		n -= take;
	}
	*out = st;
	return LlmStreamFinish(st);
}

static bool
StrEq(const char *a, size_t al, const char *b, size_t bl)
{
	if (al != bl)
		return false;
	return al == 0 || memcmp(a, b, al) == 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	LlmProvider provider;
	int			seed;
	LlmStream  *sa;
	LlmStream  *sb;
	json_t	   *a;
	json_t	   *b;
	jmp_buf		jb;

	if (size < 2)
		return 0;
	provider = (data[0] & 1) ? LLM_ANTHROPIC : LLM_OPENAI;
	pg_agents_max_tool_calls_per_turn = call_caps[(data[0] >> 1) & 3];
	seed = data[1];
	data += 2, size -= 2;

	a = Feed(provider, (const char *) data, size, -1, &sa);
	b = Feed(provider, (const char *) data, size, seed, &sb);
	if ((a == NULL) != (b == NULL) || (a && !json_equal(a, b)))
		abort();
	if ((sa->error == NULL) != (sb->error == NULL) ||
		(sa->error && strcmp(sa->error, sb->error) != 0))
		abort();
	if (!StrEq(sa->text, sa->text_len, sb->text, sb->text_len) || sa->oom != sb->oom)
		abort();
	LlmStreamFree(sa);
	LlmStreamFree(sb);
	if (b)
		json_decref(b);

	fuzz_pg_jmp = &jb;
	if (a && setjmp(jb) == 0)
	{
		LlmReply	r;
		bool		ok = LlmParseReplyJson(provider, a, &r);	/* takes a */

		if (ok)
		{
			size_t		i;
			json_t	   *c;

			if (r.error != NULL || r.assistant == NULL ||
				json_array_size(r.calls) > (size_t) pg_agents_max_tool_calls_per_turn)
				abort();
			json_array_foreach(r.calls, i, c)
			{
				if (!json_is_string(json_object_get(c, "id")) ||
					!json_is_string(json_object_get(c, "name")))
					abort();
			}
			(void) LlmStopKindOf(&r);
		}
		else if (r.error == NULL)
			abort();
		LlmFreeReply(&r);
	}
	fuzz_pg_jmp = NULL;
	fuzz_pg_reset();
	return 0;
}
