/*-------------------------------------------------------------------------
 *
 * secret_keyfile.c
 *		Where the key file of the secrets store lies (secrets.c reads it):
 *		pg_agents.secret_key_file when set, else pg_agents.key beside
 *		config_file when that lies outside the data directory (Debian keeps
 *		it in /etc/postgresql/NN/main), else in the data directory, with a
 *		WARNING: a base backup then holds the key and the ciphertext
 *		together (in the server log at startup, and to the superuser at the
 *		first agent.set_secret of a process).  agent.secret_key_file()
 *		reports the choice.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/stat.h>

#include "access/htup_details.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "port.h"
#include "utils/builtins.h"
#include "utils/guc.h"

#include "secrets.h"
#include "util/guc.h"

PG_FUNCTION_INFO_V1(pg_agents_secret_key_file_info);

#define KEY_FILE_NAME	"pg_agents.key"

/* this process reported a key file inside the data directory */
static bool key_warned = false;

/* whether path lies in directory dir (dir itself included) */
static bool
PathInside(const char *path, const char *dir)
{
	size_t		n;

	if (path == NULL || dir == NULL || dir[0] == '\0')
		return false;
	n = strlen(dir);
	while (n > 1 && dir[n - 1] == '/')
		n--;
	return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

/*
 * The key file's path for a setting, a config_file and a data directory
 * (palloc'd; all absolute but the setting).  A relative setting is taken
 * from the data directory, as PostgreSQL takes its own file settings.
 * *inside: the path lies in the data directory.
 */
static char *
SecretKeyPathChoose(const char *setting, const char *config_file,
					const char *data_dir, bool *inside)
{
	char	   *path;

	if (setting != NULL && setting[0] != '\0')
		path = is_absolute_path(setting) ? pstrdup(setting)
			: psprintf("%s/%s", data_dir, setting);
	else if (config_file != NULL && is_absolute_path(config_file) &&
			 !PathInside(config_file, data_dir))
	{
		char	   *dir = pstrdup(config_file);

		get_parent_directory(dir);
		path = psprintf("%s/%s", dir, KEY_FILE_NAME);
	}
	else
		path = psprintf("%s/%s", data_dir, KEY_FILE_NAME);
	canonicalize_path(path);
	*inside = PathInside(path, data_dir);
	return path;
}

/*
 * The key file of this server.  With the setting empty and the config
 * directory chosen, a key file of an earlier version still in the data
 * directory (the default before 0.4.0) is kept when none lies beside
 * config_file yet, so that the secrets it encrypted stay readable.  With
 * warn, a key in the data directory is reported once per process (WARNING):
 * agent.set_secret warns, the worker's and sessions' reads do not (the
 * server log has it from startup).
 */
char *
SecretKeyPath(bool *inside, bool warn)
{
	char	   *path;
	struct stat st;

	path = SecretKeyPathChoose(pg_agents_secret_key_file, ConfigFileName, DataDir, inside);
	if ((pg_agents_secret_key_file == NULL || pg_agents_secret_key_file[0] == '\0') &&
		!*inside && stat(path, &st) != 0 && errno == ENOENT)
	{
		char	   *legacy = psprintf("%s/%s", DataDir, KEY_FILE_NAME);

		if (stat(legacy, &st) == 0)
		{
			path = legacy;
			*inside = true;
		}
	}
	if (*inside && warn && !key_warned)
	{
		key_warned = true;
		ereport(WARNING,
				(errmsg("the key file of the secrets store lies inside the data directory"),
				 errdetail("The key file is \"%s\": a base backup of the data directory holds the key together with the secrets it encrypts.",
						   path),
				 errhint("Move the key file out of the data directory and set pg_agents.secret_key_file to its absolute path.")));
	}
	return path;
}

/*
 * At postmaster start (shared_preload_libraries): a WARNING in the server
 * log when the key file lies, or would lie, in the data directory.
 */
void
SecretKeyFileCheckAtStartup(void)
{
	bool		inside;

	if (IsUnderPostmaster || !process_shared_preload_libraries_in_progress ||
		DataDir == NULL)
		return;
	(void) SecretKeyPath(&inside, true);
	key_warned = false;			/* each backend (forked) warns again */
}

/*
 * agent.secret_key_file(setting, config_file, data_dir) -> (path,
 * inside_data_directory): the key file this server uses (all NULL), or the
 * choice for the given values (a NULL one: the server's).  Superuser only.
 */
Datum
pg_agents_secret_key_file_info(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[2];
	bool		nulls[2] = {false, false};
	bool		inside;
	char	   *path;

	if (!superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to read the key file's location"),
				 errdetail("Only superusers may see where the secrets store's key lies.")));
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	if (PG_ARGISNULL(0) && PG_ARGISNULL(1) && PG_ARGISNULL(2))
		path = SecretKeyPath(&inside, false);
	else
		path = SecretKeyPathChoose(PG_ARGISNULL(0) ? pg_agents_secret_key_file
								   : text_to_cstring(PG_GETARG_TEXT_PP(0)),
								   PG_ARGISNULL(1) ? ConfigFileName
								   : text_to_cstring(PG_GETARG_TEXT_PP(1)),
								   PG_ARGISNULL(2) ? DataDir
								   : text_to_cstring(PG_GETARG_TEXT_PP(2)),
								   &inside);
	values[0] = CStringGetTextDatum(path);
	values[1] = BoolGetDatum(inside);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
}
