/*
 * libFuzzer harness for the whole (not streamed) replies of both LLM wire
 * formats (src/llm/llm.c, built against test/fuzz/shim): LlmParseReply, the
 * stop-reason reader LlmStopKindOf, the usage fields, LlmErrorMessage and
 * LlmQuotaError.
 *
 * Input: one byte (bit 0: Anthropic, else OpenAI; bits 1-2 pick
 * pg_agents.max_tool_calls_per_turn among 64, 1, 2, 10000), then the body.
 *
 * Checks, beyond "no crash, no leak, no sanitizer report (signed overflow
 * of the usage sums among them), within the time and memory limits":
 *   - a refused reply has an error, an accepted one none;
 *   - an accepted reply has at most max_tool_calls_per_turn calls, each with
 *     a string id and name, and an assistant message to send back;
 *   - the stop kind is one of the enum.
 */
#include "postgres.h"

#include "util/jansson_prelude.h"

#include "llm/llm.h"
#include "util/guc.h"
#include "shim/pg_shim.h"

static const int call_caps[] = {64, 1, 2, 10000};

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	LlmReply	r;
	jmp_buf		jb;
	LlmProvider provider;

	if (size < 1)
		return 0;
	provider = (data[0] & 1) ? LLM_ANTHROPIC : LLM_OPENAI;
	pg_agents_max_tool_calls_per_turn = call_caps[(data[0] >> 1) & 3];
	data++, size--;

	fuzz_pg_jmp = &jb;
	if (setjmp(jb) == 0)
	{
		bool		ok = LlmParseReply(provider, (const char *) data, size, &r);

		if (ok)
		{
			size_t		i;
			json_t	   *c;
			LlmStopKind k = LlmStopKindOf(&r);

			if (r.error != NULL || r.assistant == NULL || !json_is_array(r.calls))
				abort();
			if (json_array_size(r.calls) > (size_t) pg_agents_max_tool_calls_per_turn)
				abort();
			json_array_foreach(r.calls, i, c)
			{
				if (!json_is_string(json_object_get(c, "id")) ||
					!json_is_string(json_object_get(c, "name")))
					abort();
			}
			if (k != LLM_STOP_NORMAL && k != LLM_STOP_PAUSE && k != LLM_STOP_REFUSAL &&
				k != LLM_STOP_MAX_TOKENS && k != LLM_STOP_CONTEXT)
				abort();
			/* what the worker keeps of the reply: the text and the stop reason */
			if (r.text)
				(void) strlen(r.text);
			if (r.stop)
				(void) strlen(r.stop);
		}
		else if (r.error == NULL)
			abort();
		LlmFreeReply(&r);
		(void) LlmErrorMessage((const char *) data, size);
		(void) LlmQuotaError((const char *) data, size);
	}
	/* an ereport(ERROR) is a refusal too: nothing to check but the memory */
	fuzz_pg_jmp = NULL;
	fuzz_pg_reset();
	return 0;
}
