/*
 * pg_agents_mcp: the pg_agents MCP client on the command line.
 *
 *   pg_agents_mcp [options] URL [TOOL [ARGS_JSON]]
 *
 * Without TOOL it initializes, lists every tool (following nextCursor) and
 * prints {"protocolVersion", "serverInfo", "tools"} as JSON.  With TOOL it
 * calls it with ARGS_JSON (default {}) and prints the CallToolResult as one
 * line of JSON.  Exit code 0 on success, 1 on any failure, a tool result with
 * "isError": true included.  Built from the extension's own client
 * (src/mcp/mcp_transport.c, mcp_protocol.c, mcp_async.c).
 *
 * Options (they may come before the URL, as the MCP conformance runner
 * appends the server URL to the command):
 *   -t TOOL       the tool to call
 *   -a JSON       its arguments (a JSON object)
 *   -H 'N: V'     an extra HTTP header (repeatable)
 *   -T MS         time-out of each call in milliseconds (default 30000)
 *   -n COUNT      call the tool COUNT times on one session (default 1)
 *   -s            before each call after the first, wait for a line on stdin
 *   -q            print only the text of each result
 *   -v            report session, protocol version and initializations on stderr
 *   -P VERSION    protocol: auto (default: server/discover, else initialize),
 *                 2026-07-28 (stateless), 2025-11-25, 2025-06-18 or 2025-03-26
 *   -C JSON       a script run on one client instead of TOOL: an array of
 *                 {"list": true}, {"call": NAME, "arguments": {...}} or
 *                 {"request": METHOD, "params": {...}}; one line of JSON per step
 *   -e JSON       answer every elicitation with this ElicitResult, e.g.
 *                 '{"action":"accept","content":{}}' (defaults of the requested
 *                 schema are filled in); without it elicitation is not declared
 *   -o KEY=VALUE  OAuth 2.1 (see docs/mcp.md): client_id, client_secret,
 *                 client_metadata_url, redirect_uri, scope, grant
 *                 (authorization_code or client_credentials), private_key_file,
 *                 signing_alg, auth_method, authorize=auto (follow the
 *                 authorization redirect without a browser, for tests)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "mcp/mcp.h"
#include "mcp/mcp_oauth.h"

static json_t *elicit_answer = NULL;

/*
 * Elicitation callback, set only with -e: a copy of the configured
 * ElicitResult for every request, whatever it asks.
 */
static json_t *
probe_elicit(void *arg, json_t *params)
{
	return elicit_answer ? json_deep_copy(elicit_answer) : NULL;
}

/* Prints one tool result; returns 0, or 1 when it is an error. */
static int
print_result(json_t *result, int quiet)
{
	int			is_error = json_is_true(json_object_get(result, "isError"));

	if (quiet)
	{
		char	   *t = McpResultText(result);

		puts(t);
		free(t);
	}
	else
	{
		char	   *s = json_dumps(result, JSON_COMPACT | JSON_PRESERVE_ORDER);

		puts(s ? s : "{}");
		free(s);
	}
	fflush(stdout);
	if (is_error)
	{
		fprintf(stderr, "pg_agents_mcp: the tool reported an error\n");
		return 1;
	}
	return 0;
}

/*
 * Runs the -C script's steps in order on client c, printing one line of
 * JSON per step (or the text of tool results with quiet).  Returns 0, or 1
 * when a step is malformed (which stops the script), fails, or a tool
 * reports an error; stops after an unauthorized or aborted request.
 */
static int
run_script(McpClient *c, json_t *script, int quiet)
{
	size_t		i;
	json_t	   *step;
	int			status = 0;

	json_array_foreach(script, i, step)
	{
		json_t	   *result = NULL;
		int			rc;

		if (json_is_true(json_object_get(step, "list")))
		{
			rc = McpListTools(c, &result);
			if (rc == MCP_OK)
			{
				json_t	   *out = json_pack("{s:o}", "tools", result);
				char	   *s = json_dumps(out, JSON_COMPACT | JSON_PRESERVE_ORDER);

				puts(s ? s : "{}");
				free(s);
				json_decref(out);
				result = NULL;
			}
		}
		else if (json_is_string(json_object_get(step, "call")))
		{
			rc = McpCallTool(c, json_string_value(json_object_get(step, "call")),
							   json_object_get(step, "arguments"), &result);
			if (rc == MCP_OK)
				status |= print_result(result, quiet);
		}
		else if (json_is_string(json_object_get(step, "request")))
		{
			rc = McpRequest(c, json_string_value(json_object_get(step, "request")),
							 json_object_get(step, "params"), &result);
			if (rc == MCP_OK)
			{
				char	   *s = json_dumps(result, JSON_COMPACT | JSON_PRESERVE_ORDER);

				puts(s ? s : "{}");
				free(s);
			}
		}
		else
		{
			fprintf(stderr, "pg_agents_mcp: script step %zu is not {list}, {call} or {request}\n", i);
			return 1;
		}
		if (result)
			json_decref(result);
		fflush(stdout);
		if (rc != MCP_OK)
		{
			fprintf(stderr, "pg_agents_mcp: %s\n", McpClientError(c));
			status = 1;
			if (rc == MCP_UNAUTHORIZED || rc == MCP_ABORTED)
				break;			/* no more requests to a server that refuses us */
		}
	}
	return status;
}

/* Prints the usage line on stderr and exits with status 1. */
static void
usage(void)
{
	fprintf(stderr,
			"usage: pg_agents_mcp [-t TOOL] [-a ARGS_JSON] [-H 'Name: value']... [-T MS] [-n COUNT] [-s] [-q] [-v]\n"
			"                     [-P VERSION] [-C SCRIPT_JSON] [-e ELICIT_RESULT_JSON] [-o KEY=VALUE]... URL [TOOL [ARGS_JSON]]\n");
	exit(1);
}

/*
 * Parses the options and arguments, then runs the script, lists the tools,
 * or calls the tool COUNT times on one client.  Exit status 0 on success,
 * 1 on any failure (see the header).
 */
int
main(int argc, char **argv)
{
	const char *url;
	const char *tool = NULL;
	const char *args_text = NULL;
	json_t	   *headers = mcp_json_object();
	json_t	   *args = NULL;
	long		timeout = 30000;
	long		count = 1;
	int			step = 0;
	int			quiet = 0;
	int			verbose = 0;
	int			opt;
	int			status = 0;
	McpClient  *c;
	const char *problem;
	const char *protocol = NULL;
	json_t	   *script = NULL;
	McpOAuthConfig *oauth = McpOauthConfigNew();
	int			use_oauth = 0;

	while ((opt = getopt(argc, argv, "t:a:H:T:n:sqvhP:C:e:o:")) != -1)
	{
		switch (opt)
		{
			case 'P':
				protocol = optarg;
				break;
			case 'C':
				script = json_loads(optarg, 0, NULL);
				if (!json_is_array(script))
				{
					fprintf(stderr, "pg_agents_mcp: the script must be a JSON array\n");
					return 1;
				}
				break;
			case 'e':
				elicit_answer = json_loads(optarg, 0, NULL);
				if (!json_is_object(elicit_answer))
				{
					fprintf(stderr, "pg_agents_mcp: the elicitation answer must be a JSON object\n");
					return 1;
				}
				break;
			case 'o':
				{
					char	   *eq = strchr(optarg, '=');
					char	   *key;

					if (eq == NULL || eq == optarg)
					{
						fprintf(stderr, "pg_agents_mcp: an OAuth option is written KEY=VALUE\n");
						return 1;
					}
					key = strndup(optarg, eq - optarg);
					if (McpOauthConfigSet(oauth, key, eq + 1) != 0)
					{
						fprintf(stderr, "pg_agents_mcp: unknown OAuth option \"%s\"\n", key);
						free(key);
						return 1;
					}
					free(key);
					use_oauth = 1;
					break;
				}
			case 't':
				tool = optarg;
				break;
			case 'a':
				args_text = optarg;
				break;
			case 'H':
				{
					char	   *colon = strchr(optarg, ':');
					char	   *name;
					const char *value;

					if (colon == NULL || colon == optarg)
					{
						fprintf(stderr, "pg_agents_mcp: a header is written 'Name: value'\n");
						return 1;
					}
					name = strndup(optarg, colon - optarg);
					value = colon + 1;
					while (*value == ' ')
						value++;
					json_object_set_new(headers, name, json_string(value));
					free(name);
					break;
				}
			case 'T':
				timeout = atol(optarg);
				break;
			case 'n':
				count = atol(optarg);
				if (count < 1)
					count = 1;
				break;
			case 's':
				step = 1;
				break;
			case 'q':
				quiet = 1;
				break;
			case 'v':
				verbose = 1;
				break;
			default:
				usage();
		}
	}
	if (optind >= argc)
		usage();
	url = argv[optind++];
	if (optind < argc)
		tool = argv[optind++];
	if (optind < argc)
		args_text = argv[optind++];
	if (optind < argc)
		usage();

	problem = McpUrlProblem(url);
	if (problem)
	{
		fprintf(stderr, "pg_agents_mcp: URL refused: %s\n", problem);
		return 1;
	}
	if (args_text)
	{
		json_error_t jerr;

		args = json_loads(args_text, 0, &jerr);
		if (!json_is_object(args))
		{
			fprintf(stderr, "pg_agents_mcp: the arguments must be a JSON object\n");
			return 1;
		}
	}

	c = McpClientNew(url, headers, timeout);
	json_decref(headers);
	McpClientSetProtocol(c, protocol);
	if (elicit_answer)
		McpClientSetElicitation(c, probe_elicit, NULL);
	/* with -o, a 401 starts the OAuth flow */
	if (use_oauth)
		McpOauthAttach(c, oauth);

	if (script)
		status = run_script(c, script, quiet);
	else if (tool == NULL)
	{
		json_t	   *tools = NULL;

		if (McpListTools(c, &tools) != MCP_OK)
		{
			fprintf(stderr, "pg_agents_mcp: %s\n", McpClientError(c));
			status = 1;
		}
		else
		{
			json_t	   *out = json_pack("{s:s, s:O, s:o}",
										"protocolVersion", McpClientProtocolVersion(c),
										"serverInfo", McpClientServerInfo(c) ? McpClientServerInfo(c) : json_null(),
										"tools", tools);
			char	   *s = json_dumps(out, JSON_INDENT(2) | JSON_PRESERVE_ORDER);

			puts(s ? s : "{}");
			free(s);
			json_decref(out);
		}
	}
	else
	{
		long		i;

		for (i = 0; i < count; i++)
		{
			json_t	   *result = NULL;
			int			rc;

			if (i > 0 && step)
			{
				char		line[256];

				if (fgets(line, sizeof(line), stdin) == NULL)
					break;
			}
			rc = McpCallTool(c, tool, args, &result);
			if (rc == MCP_OK)
				status |= print_result(result, quiet);
			else
			{
				fprintf(stderr, "pg_agents_mcp: %s\n", McpClientError(c));
				status = 1;
			}
			if (result)
				json_decref(result);
			fflush(stdout);
		}
	}
	if (verbose)
		fprintf(stderr, "pg_agents_mcp: protocol %s, session %s, initializations %d\n",
				McpClientProtocolVersion(c) ? McpClientProtocolVersion(c) : "-",
				McpClientSessionId(c) ? "yes" : "none",
				McpClientInitializations(c));
	McpClientClose(c);
	McpOauthConfigFree(oauth);
	if (args)
		json_decref(args);
	if (script)
		json_decref(script);
	return status;
}
