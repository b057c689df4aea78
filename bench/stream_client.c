/*
 * stream_client: the streaming client of bench/deltas.sh.  LISTENs on
 * agent_run_deltas and, for each notification (ids only: run, step,
 * attempt, offset), reads that delta's text through agent.run_deltas at
 * once, as an application would; prints one line per delta it has the text
 * of: run step attempt offset length, then two epoch_microseconds: the
 * moment it had the notification, and the moment it had the text.  Stops when the file STOPFILE exists.
 *
 *   stream_client CONNINFO USER_ID STOPFILE
 *
 * Built by bench/deltas.sh with the libpq of the server (cc ... -lpq).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <time.h>

#include <libpq-fe.h>

static long long
field(const char *payload, const char *name)
{
	char		key[64];
	const char *p;

	snprintf(key, sizeof(key), "\"%s\":", name);
	p = strstr(payload, key);
	return p ? atoll(p + strlen(key)) : -1;
}

int
main(int argc, char **argv)
{
	PGconn	   *conn;
	PGresult   *res;
	struct stat st;

	if (argc != 4)
	{
		fprintf(stderr, "usage: stream_client CONNINFO USER_ID STOPFILE\n");
		return 2;
	}
	conn = PQconnectdb(argv[1]);
	if (PQstatus(conn) != CONNECTION_OK)
	{
		fprintf(stderr, "stream_client: %s", PQerrorMessage(conn));
		return 1;
	}
	res = PQexec(conn, "LISTEN agent_run_deltas");
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
	{
		fprintf(stderr, "stream_client: %s", PQerrorMessage(conn));
		return 1;
	}
	PQclear(res);
	res = PQprepare(conn, "d",
					"SELECT \"offset\", length(text) FROM agent.run_deltas($1::bigint, $2, $3::integer, $4::bigint - 1) LIMIT 1",
					4, NULL);
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
	{
		fprintf(stderr, "stream_client: %s", PQerrorMessage(conn));
		return 1;
	}
	PQclear(res);
	fprintf(stderr, "stream_client: listening\n");

	while (stat(argv[3], &st) != 0)
	{
		int			sock = PQsocket(conn);
		fd_set		in;
		struct timeval tv = {0, 100000};
		PGnotify   *n;
		struct timespec got;

		FD_ZERO(&in);
		FD_SET(sock, &in);
		if (select(sock + 1, &in, NULL, NULL, &tv) < 0)
			break;
		if (!PQconsumeInput(conn))
		{
			fprintf(stderr, "stream_client: %s", PQerrorMessage(conn));
			return 1;
		}
		clock_gettime(CLOCK_REALTIME, &got);
		while ((n = PQnotifies(conn)) != NULL)
		{
			char		run[32], step[16], off[32];
			const char *vals[4];
			long long	attempt = field(n->extra, "attempt");
			struct timespec ts;

			snprintf(run, sizeof(run), "%lld", field(n->extra, "run_id"));
			snprintf(step, sizeof(step), "%lld", field(n->extra, "step"));
			snprintf(off, sizeof(off), "%lld", field(n->extra, "offset"));
			vals[0] = run;
			vals[1] = argv[2];
			vals[2] = step;
			vals[3] = off;
			res = PQexecPrepared(conn, "d", 4, vals, NULL, NULL, 0);
			clock_gettime(CLOCK_REALTIME, &ts);
			if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 &&
				strcmp(PQgetvalue(res, 0, 0), off) == 0)
				printf("%s %s %lld %s %s %lld %lld\n", run, step, attempt, off, PQgetvalue(res, 0, 1),
					   (long long) got.tv_sec * 1000000 + got.tv_nsec / 1000,
					   (long long) ts.tv_sec * 1000000 + ts.tv_nsec / 1000);
			else
				fprintf(stderr, "stream_client: no text for %s: %s", n->extra,
						PQresultStatus(res) == PGRES_TUPLES_OK ? "no row\n" : PQerrorMessage(conn));
			PQclear(res);
			PQfreemem(n);
		}
	}
	fflush(stdout);
	PQfinish(conn);
	return 0;
}
