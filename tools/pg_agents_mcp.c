/*
 * pg_agents_mcp: the pg_agents MCP client on the command line.
 *
 *   pg_agents_mcp [options] URL [TOOL [ARGS_JSON]]
 *
 * Without TOOL it initializes, lists every tool (following nextCursor) and
 * prints {"protocolVersion", "serverInfo", "tools"} as JSON.  With TOOL it
 * calls it with ARGS_JSON (default {}) and prints the CallToolResult as one
 * line of JSON.  Exit code 0 on success, 1 on any failure, a tool result with
 * "isError": true included.  Built from src/mcp.c, the extension's own client.
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
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "mcp.h"

static void
usage(void)
{
	fprintf(stderr,
			"usage: pg_agents_mcp [-t TOOL] [-a ARGS_JSON] [-H 'Name: value']... [-T MS] [-n COUNT] [-s] [-q] [-v] URL [TOOL [ARGS_JSON]]\n");
	exit(1);
}

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

	while ((opt = getopt(argc, argv, "t:a:H:T:n:sqvh")) != -1)
	{
		switch (opt)
		{
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

	problem = mcp_url_problem(url);
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

	c = mcp_client_new(url, headers, timeout);
	json_decref(headers);

	if (tool == NULL)
	{
		json_t	   *tools = NULL;

		if (mcp_list_tools(c, &tools) != MCP_OK)
		{
			fprintf(stderr, "pg_agents_mcp: %s\n", mcp_client_error(c));
			status = 1;
		}
		else
		{
			json_t	   *out = json_pack("{s:s, s:O, s:o}",
										"protocolVersion", mcp_client_protocol_version(c),
										"serverInfo", mcp_client_server_info(c) ? mcp_client_server_info(c) : json_null(),
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
			rc = mcp_call_tool(c, tool, args, &result);
			if (rc == MCP_OK)
			{
				int			is_error = json_is_true(json_object_get(result, "isError"));

				if (quiet)
				{
					char	   *t = mcp_result_text(result);

					puts(t);
					free(t);
				}
				else
				{
					char	   *s = json_dumps(result, JSON_COMPACT | JSON_PRESERVE_ORDER);

					puts(s ? s : "{}");
					free(s);
				}
				if (is_error)
				{
					fprintf(stderr, "pg_agents_mcp: the tool reported an error\n");
					status = 1;
				}
			}
			else
			{
				fprintf(stderr, "pg_agents_mcp: %s\n", mcp_client_error(c));
				status = 1;
			}
			if (result)
				json_decref(result);
			fflush(stdout);
		}
	}
	if (verbose)
		fprintf(stderr, "pg_agents_mcp: protocol %s, session %s, initializations %d\n",
				mcp_client_protocol_version(c) ? mcp_client_protocol_version(c) : "-",
				mcp_client_session_id(c) ? "yes" : "none",
				mcp_client_initializations(c));
	mcp_client_close(c);
	if (args)
		json_decref(args);
	return status;
}
