/*-------------------------------------------------------------------------
 *
 * secrets.c
 *		The secrets store (docs/worker.md, "Secrets"): agent.set_secret and
 *		agent.drop_secret, and the expansion of ${secret:NAME} references
 *		(provider keys, MCP header values, pg_agents.llm_api_key).
 *
 * A value is encrypted with AES-256-GCM (OpenSSL's EVP interface) under a
 * key kept outside the database: a file of 64 hex digits, pg_agents.key
 * beside config_file (in the data directory when config_file lies there,
 * secret_keyfile.c) or the file pg_agents.secret_key_file names, created
 * (mode 0600) by the first agent.set_secret.  The key never passes through
 * SQL.  agent.secrets holds only
 *
 *     0x01 | 12-byte nonce | 16-byte tag | ciphertext
 *
 * with the secret's name (and, for a secret of a workspace, the workspace
 * and a NUL byte before it) as additional authenticated data, so that a row
 * copied under another name or into another workspace does not decrypt.
 *
 * A user's own secret (set_secret's user_id, in a workspace) has the
 * workspace, a NUL, the user and a NUL before its name.
 *
 * Secrets are keyed by (workspace, user, name), NULL being the cluster
 * (and the workspace's own, for the user).  A
 * reference made by a provider or an MCP server of a workspace resolves to
 * that workspace's secret of the name, else to the cluster's; one made by a
 * cluster provider or by pg_agents.llm_api_key to the cluster's only.
 * A user's secret is never found by these references; only the
 * providers' copy (providers.c) resolves it, for the runs that act for
 * that user (SecretsExpandFor).  A dump, a SELECT or a base
 * backup without the key file yields ciphertext only.
 *
 * Nothing here puts a value into an error message, a log line or a query
 * text: every statement takes it as a parameter, and errors name the
 * secret, never its value.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "util/jansson_prelude.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "catalog/pg_type.h"
#include "common/string.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "port.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"

#include "audit/audit.h"
#include "secrets.h"
#include "util/config_gen.h"

PG_FUNCTION_INFO_V1(pg_agents_set_secret);
PG_FUNCTION_INFO_V1(pg_agents_drop_secret);

#define SECRET_KEY_LEN		32
#define SECRET_NONCE_LEN	12
#define SECRET_TAG_LEN		16
#define SECRET_FORMAT		0x01
#define SECRET_MAX_LEN		65536

static unsigned char secret_key[SECRET_KEY_LEN];
static bool secret_key_loaded = false;

/* palloc'd path of the key file (secret_keyfile.c) */
static char *
KeyPath(bool create)
{
	bool		inside;

	return SecretKeyPath(&inside, create);
}

/* Value of one hexadecimal digit, or -1 when c is not one. */
static int
HexVal(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * Loads the key (once per process).  With create, a missing file is made
 * (O_EXCL: two sessions creating it at once agree on the winner's key).
 * false with *error when there is no usable key.
 */
static bool
LoadKey(bool create, char **error)
{
	char	   *path;
	int			fd;
	char		buf[SECRET_KEY_LEN * 2 + 2];
	ssize_t		n;
	struct stat st;

	if (secret_key_loaded)
		return true;
	path = KeyPath(create);
	fd = open(path, O_RDONLY | PG_BINARY, 0);
	if (fd < 0 && errno == ENOENT && create)
	{
		unsigned char k[SECRET_KEY_LEN];
		char		hex[SECRET_KEY_LEN * 2 + 1];

		if (!pg_strong_random(k, sizeof(k)))
		{
			*error = pstrdup("could not generate a random key for the secrets store");
			return false;
		}
		for (int i = 0; i < SECRET_KEY_LEN; i++)
			snprintf(hex + 2 * i, 3, "%02x", k[i]);
		explicit_bzero(k, sizeof(k));
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | PG_BINARY, S_IRUSR | S_IWUSR);
		if (fd >= 0)
		{
			bool		okw = write(fd, hex, SECRET_KEY_LEN * 2) == SECRET_KEY_LEN * 2 &&
				write(fd, "\n", 1) == 1 && pg_fsync(fd) == 0;

			explicit_bzero(hex, sizeof(hex));
			close(fd);
			if (!okw)
			{
				(void) unlink(path);
				*error = psprintf("could not write the key file of the secrets store \"%s\": %m", path);
				return false;
			}
			ereport(LOG,
					(errmsg("pg_agents: created the key file of the secrets store \"%s\"", path),
					 errhint("Back it up apart from the database: without it the stored secrets cannot be decrypted.")));
		}
		explicit_bzero(hex, sizeof(hex));
		fd = open(path, O_RDONLY | PG_BINARY, 0);
	}
	if (fd < 0)
	{
		if (errno == ENOENT)
			*error = psprintf("the secrets store has no key: \"%s\" does not exist", path);
		else
			*error = psprintf("could not open the key file of the secrets store \"%s\": %m", path);
		return false;
	}
	if (fstat(fd, &st) == 0 && (st.st_mode & (S_IRWXG | S_IRWXO)) != 0)
	{
		close(fd);
		*error = psprintf("the key file of the secrets store \"%s\" is readable by other users (it must have mode 0600)", path);
		return false;
	}
	n = read(fd, buf, sizeof(buf));
	close(fd);
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		n--;
	if (n != SECRET_KEY_LEN * 2)
	{
		explicit_bzero(buf, sizeof(buf));
		*error = psprintf("the key file of the secrets store \"%s\" must hold 64 hexadecimal digits", path);
		return false;
	}
	for (int i = 0; i < SECRET_KEY_LEN; i++)
	{
		int			hi = HexVal(buf[2 * i]);
		int			lo = HexVal(buf[2 * i + 1]);

		if (hi < 0 || lo < 0)
		{
			explicit_bzero(buf, sizeof(buf));
			explicit_bzero(secret_key, sizeof(secret_key));
			*error = psprintf("the key file of the secrets store \"%s\" must hold 64 hexadecimal digits", path);
			return false;
		}
		secret_key[i] = (unsigned char) (hi * 16 + lo);
	}
	explicit_bzero(buf, sizeof(buf));
	secret_key_loaded = true;
	return true;
}

/*
 * The additional authenticated data of a secret: its name, preceded by its
 * workspace and a NUL byte for a secret of a workspace (a cluster secret's
 * is its name alone, as before workspaces existed).
 */
static char *
SecretAad(const char *workspace, const char *user, const char *name, int *len)
{
	char	   *aad;

	if (workspace == NULL)
	{
		*len = strlen(name);
		return pstrdup(name);
	}
	if (user == NULL)
	{
		*len = strlen(workspace) + 1 + strlen(name);
		return psprintf("%s%c%s", workspace, '\0', name);
	}
	/* a user's secret: workspace NUL user NUL name (names hold no NUL) */
	*len = strlen(workspace) + 1 + strlen(user) + 1 + strlen(name);
	aad = palloc(*len + 1);
	memcpy(aad, workspace, strlen(workspace) + 1);
	memcpy(aad + strlen(workspace) + 1, user, strlen(user) + 1);
	memcpy(aad + strlen(workspace) + 1 + strlen(user) + 1, name, strlen(name) + 1);
	return aad;
}

/* palloc'd bytea of the encrypted value; ereports (without the value) */
static bytea *
Encrypt(const char *workspace, const char *user, const char *name, const char *value, int len)
{
	EVP_CIPHER_CTX *ctx;
	bytea	   *out;
	unsigned char *p;
	int			outl = 0;
	int			fin = 0;
	char	   *err = NULL;
	bool		ok;
	int			aadl;
	char	   *aad = SecretAad(workspace, user, name, &aadl);

	if (!LoadKey(true, &err))
		ereport(ERROR,
				(errcode(ERRCODE_CONFIG_FILE_ERROR),
				 errmsg("%s", err)));
	out = palloc(VARHDRSZ + 1 + SECRET_NONCE_LEN + SECRET_TAG_LEN + len + 16);
	p = (unsigned char *) VARDATA(out);
	p[0] = SECRET_FORMAT;
	if (!pg_strong_random(p + 1, SECRET_NONCE_LEN))
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not generate a random nonce")));
	ctx = EVP_CIPHER_CTX_new();
	if (ctx == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("could not create a cipher context")));
	ok = EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, NULL, NULL) == 1 &&
		EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, SECRET_NONCE_LEN, NULL) == 1 &&
		EVP_EncryptInit_ex(ctx, NULL, NULL, secret_key, p + 1) == 1 &&
		EVP_EncryptUpdate(ctx, NULL, &outl, (const unsigned char *) aad, aadl) == 1 &&
		EVP_EncryptUpdate(ctx, p + 1 + SECRET_NONCE_LEN + SECRET_TAG_LEN, &outl,
						  (const unsigned char *) value, len) == 1 &&
		EVP_EncryptFinal_ex(ctx, p + 1 + SECRET_NONCE_LEN + SECRET_TAG_LEN + outl, &fin) == 1 &&
		EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, SECRET_TAG_LEN, p + 1 + SECRET_NONCE_LEN) == 1;
	EVP_CIPHER_CTX_free(ctx);
	if (!ok)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not encrypt secret \"%s\"", name)));
	SET_VARSIZE(out, VARHDRSZ + 1 + SECRET_NONCE_LEN + SECRET_TAG_LEN + outl + fin);
	return out;
}

/* palloc'd plain value, or NULL with *error */
static char *
Decrypt(const char *workspace, const char *user, const char *name, const unsigned char *p, int len, char **error)
{
	EVP_CIPHER_CTX *ctx;
	char	   *out;
	int			ctlen = len - 1 - SECRET_NONCE_LEN - SECRET_TAG_LEN;
	int			outl = 0;
	int			fin = 0;
	bool		ok;
	int			aadl;
	char	   *aad;

	if (!LoadKey(false, error))
		return NULL;
	if (ctlen < 0 || p[0] != SECRET_FORMAT)
	{
		*error = psprintf("secret \"%s\" is not in the format of the secrets store", name);
		return NULL;
	}
	aad = SecretAad(workspace, user, name, &aadl);
	out = palloc(ctlen + 16 + 1);
	ctx = EVP_CIPHER_CTX_new();
	if (ctx == NULL)
	{
		*error = pstrdup("could not create a cipher context");
		return NULL;
	}
	ok = EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, NULL, NULL) == 1 &&
		EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, SECRET_NONCE_LEN, NULL) == 1 &&
		EVP_DecryptInit_ex(ctx, NULL, NULL, secret_key, p + 1) == 1 &&
		EVP_DecryptUpdate(ctx, NULL, &outl, (const unsigned char *) aad, aadl) == 1 &&
		EVP_DecryptUpdate(ctx, (unsigned char *) out, &outl,
						  p + 1 + SECRET_NONCE_LEN + SECRET_TAG_LEN, ctlen) == 1 &&
		EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, SECRET_TAG_LEN,
							(void *) (p + 1 + SECRET_NONCE_LEN)) == 1 &&
		EVP_DecryptFinal_ex(ctx, (unsigned char *) out + outl, &fin) == 1;
	EVP_CIPHER_CTX_free(ctx);
	if (!ok)
	{
		explicit_bzero(out, ctlen + 16 + 1);
		pfree(out);
		*error = psprintf("secret \"%s\" does not decrypt with the key of the secrets store (another key file?)", name);
		return NULL;
	}
	out[outl + fin] = '\0';
	return out;
}

/*
 * Whether s (len bytes) is a valid secret name: 1 to 100 characters among
 * letters, digits, underscore, dot and hyphen.
 */
static bool
ValidName(const char *s, int len)
{
	if (len < 1 || len > 100)
		return false;
	for (int i = 0; i < len; i++)
	{
		char		c = s[i];

		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
			  c == '_' || c == '.' || c == '-'))
			return false;
	}
	return true;
}

/*
 * The value of a secret, palloc'd, or NULL with *error: the secret of that
 * name of the workspace, else the cluster's (workspace NULL: the cluster's
 * only).  Needs an open transaction; connects to SPI itself (nested
 * connections are fine).
 */
static char *
SecretsLookup(const char *name, const char *workspace, char **error)
{
	Oid			types[2] = {TEXTOID, TEXTOID};
	Datum		vals[2];
	char		nulls[2] = {' ', workspace ? ' ' : 'n'};
	char	   *value = NULL;
	MemoryContext cxt = CurrentMemoryContext;
	const char *problem = NULL;
	int			rc;

	*error = NULL;
	if (SPI_connect() != SPI_OK_CONNECT)
	{
		*error = pstrdup("SPI_connect failed");
		return NULL;
	}
	vals[0] = CStringGetTextDatum(name);
	vals[1] = workspace ? CStringGetTextDatum(workspace) : (Datum) 0;
	/* the workspace's secret wins over the cluster's of the same name */
	rc = SPI_execute_with_args("SELECT s.ciphertext, s.workspace_id FROM agent.secrets s "
							   "WHERE s.name OPERATOR(pg_catalog.=) $1 AND s.user_id IS NULL "
							   "AND (s.workspace_id IS NULL OR s.workspace_id OPERATOR(pg_catalog.=) $2) "
							   "ORDER BY s.workspace_id IS NULL LIMIT 1",
							   2, types, vals, nulls, true, 1);
	if (rc != SPI_OK_SELECT)
		problem = "could not read the secrets store";
	else if (SPI_processed == 0)
	{
		MemoryContext old = MemoryContextSwitchTo(cxt);

		*error = workspace ? psprintf("secret \"%s\" does not exist in workspace \"%s\" nor in the cluster", name, workspace)
			: psprintf("secret \"%s\" does not exist", name);
		MemoryContextSwitchTo(old);
	}
	else
	{
		bool		isnull;
		bytea	   *ct = DatumGetByteaPP(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
		char	   *ws = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
		MemoryContext old = MemoryContextSwitchTo(cxt);

		value = Decrypt(ws, NULL, name, (unsigned char *) VARDATA_ANY(ct), VARSIZE_ANY_EXHDR(ct), error);
		MemoryContextSwitchTo(old);
	}
	SPI_finish();
	if (problem)
		*error = pstrdup(problem);
	return value;
}

/*
 * The value of a user's own secret of that name in that workspace
 * (agent.set_secret(..., user_id)), palloc'd; NULL when the user has none
 * (*error NULL) or when it cannot be read (*error set).  Needs an open
 * transaction.
 */
static char *
SecretsLookupUser(const char *name, const char *workspace, const char *user, char **error)
{
	Oid			types[3] = {TEXTOID, TEXTOID, TEXTOID};
	Datum		vals[3];
	char	   *value = NULL;
	MemoryContext cxt = CurrentMemoryContext;
	int			rc;

	*error = NULL;
	if (SPI_connect() != SPI_OK_CONNECT)
	{
		*error = pstrdup("SPI_connect failed");
		return NULL;
	}
	vals[0] = CStringGetTextDatum(name);
	vals[1] = CStringGetTextDatum(workspace);
	vals[2] = CStringGetTextDatum(user);
	rc = SPI_execute_with_args("SELECT s.ciphertext FROM agent.secrets s "
							   "WHERE s.name OPERATOR(pg_catalog.=) $1 "
							   "AND s.workspace_id OPERATOR(pg_catalog.=) $2 "
							   "AND s.user_id OPERATOR(pg_catalog.=) $3",
							   3, types, vals, NULL, true, 1);
	if (rc != SPI_OK_SELECT)
	{
		SPI_finish();
		*error = pstrdup("could not read the secrets store");
		return NULL;
	}
	if (SPI_processed == 1)
	{
		bool		isnull;
		bytea	   *ct = DatumGetByteaPP(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
		MemoryContext old = MemoryContextSwitchTo(cxt);

		value = Decrypt(workspace, user, name, (unsigned char *) VARDATA_ANY(ct), VARSIZE_ANY_EXHDR(ct), error);
		MemoryContextSwitchTo(old);
	}
	SPI_finish();
	return value;
}

/* whether a value holds a ${secret:NAME} reference */
bool
SecretsHasReference(const char *value)
{
	return value && strstr(value, "${secret:") != NULL;
}

/* SecretsExpandIn among the cluster's secrets (pg_agents.llm_api_key, cluster providers) */
char *
SecretsExpand(const char *value, char **error)
{
	return SecretsExpandIn(value, NULL, error);
}

/*
 * palloc'd copy of value with every ${secret:NAME} replaced by the secret's
 * value (of the workspace, else of the cluster; workspace NULL: of the
 * cluster only); NULL with *error (naming the secret, never a value) when
 * one is missing, malformed or does not decrypt.  Needs an open transaction
 * when the value holds a reference.
 */
char *
SecretsExpandIn(const char *value, const char *workspace, char **error)
{
	return SecretsExpandFor(value, workspace, NULL, NULL, NULL, error);
}

/*
 * SecretsExpandIn, where a reference first resolves to the user's own
 * secret of that name in user_workspace (when user is not NULL and has
 * one), and only then among the secrets of workspace (then the cluster's).
 * *used_user (when not NULL) says whether a user's secret was used.
 */
char *
SecretsExpandFor(const char *value, const char *workspace, const char *user_workspace,
				 const char *user, bool *used_user, char **error)
{
	StringInfoData b;
	const char *p = value;

	*error = NULL;
	if (used_user)
		*used_user = false;
	if (value == NULL)
		return NULL;
	if (!SecretsHasReference(value))
		return pstrdup(value);
	initStringInfo(&b);
	while (*p)
	{
		const char *ref = strstr(p, "${secret:");
		const char *name;
		const char *end;
		char	   *n;
		char	   *v;

		if (ref == NULL)
		{
			appendStringInfoString(&b, p);
			break;
		}
		appendBinaryStringInfo(&b, p, ref - p);
		name = ref + strlen("${secret:");
		end = strchr(name, '}');
		if (end == NULL || !ValidName(name, end - name))
		{
			explicit_bzero(b.data, b.len);
			*error = pstrdup("malformed secret reference: expected ${secret:NAME} with a NAME of letters, digits, '_', '.' or '-'");
			return NULL;
		}
		n = pnstrdup(name, end - name);
		v = NULL;
		if (user && user_workspace)
		{
			v = SecretsLookupUser(n, user_workspace, user, error);
			if (v == NULL && *error)
			{
				if (used_user)
					*used_user = true;	/* the user's own secret is unusable: say so */
				explicit_bzero(b.data, b.len);
				return NULL;
			}
			if (v && used_user)
				*used_user = true;
		}
		if (v == NULL)
			v = SecretsLookup(n, workspace, error);
		if (v == NULL)
		{
			explicit_bzero(b.data, b.len);
			return NULL;
		}
		appendStringInfoString(&b, v);
		explicit_bzero(v, strlen(v));
		pfree(v);
		p = end + 1;
	}
	return b.data;
}

/*
 * The workspace argument of set_secret/drop_secret (argument n): NULL for
 * the cluster; an empty string is refused.
 */
static char *
WorkspaceArg(FunctionCallInfo fcinfo, int n)
{
	char	   *ws;

	if (PG_NARGS() <= n || PG_ARGISNULL(n))
		return NULL;
	ws = text_to_cstring(PG_GETARG_TEXT_PP(n));
	if (ws[0] == '\0' || strlen(ws) > 200)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid workspace id for a secret"),
				 errdetail("A workspace id has 1 to 200 characters; NULL makes a cluster secret.")));
	return ws;
}

/*
 * The user argument of set_secret/drop_secret (argument n): NULL for a
 * secret of the workspace or the cluster; a user's secret belongs to a
 * workspace.
 */
static char *
UserArg(FunctionCallInfo fcinfo, int n, const char *ws)
{
	char	   *user;

	if (PG_NARGS() <= n || PG_ARGISNULL(n))
		return NULL;
	user = text_to_cstring(PG_GETARG_TEXT_PP(n));
	if (user[0] == '\0' || strlen(user) > 200)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid user id for a secret"),
				 errdetail("A user id has 1 to 200 characters; NULL makes a secret of the workspace or the cluster.")));
	if (ws == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a user's secret needs a workspace"),
				 errdetail("A user's own secret belongs to the user in one workspace."),
				 errhint("Pass workspace_id as well as user_id.")));
	return user;
}

/*
 * The audit row of a change of the store (secret.set, secret.drop), in the
 * workspace of the secret ('' for a cluster secret): its name, workspace
 * and user, never its value.
 */
static void
AuditSecret(const char *action, const char *name, const char *workspace, const char *user, bool created)
{
	StringInfoData j;
	char	   *target;

	initStringInfo(&j);
	appendStringInfoString(&j, "{\"name\": ");
	escape_json(&j, name);
	appendStringInfoString(&j, ", \"workspace_id\": ");
	if (workspace)
		escape_json(&j, workspace);
	else
		appendStringInfoString(&j, "null");
	if (user)
	{
		appendStringInfoString(&j, ", \"user_id\": ");
		escape_json(&j, user);
	}
	if (strcmp(action, "secret.set") == 0)
		appendStringInfo(&j, ", \"created\": %s", created ? "true" : "false");
	appendStringInfoString(&j, ", \"role\": ");
	escape_json(&j, GetUserNameFromId(GetUserId(), false));
	appendStringInfoString(&j, ", \"value\": \"[redacted]\"}");
	target = user ? psprintf("%s/%s/%s", workspace, user, name) :
		workspace ? psprintf("%s/%s", workspace, name) : pstrdup(name);
	AuditEvent(action, "success", "secret", target, workspace ? workspace : "", NULL,
					   DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(j.data))),
					   psprintf(strcmp(action, "secret.set") == 0 ? "secret \"%s\" set" : "secret \"%s\" dropped", name),
					   NULL);
}

/* agent.set_secret(name text, value text, workspace_id text DEFAULT NULL, user_id text DEFAULT NULL) */
Datum
pg_agents_set_secret(PG_FUNCTION_ARGS)
{
	text	   *tname;
	text	   *tval;
	char	   *name;
	char	   *value;
	char	   *ws;
	char	   *user;
	int			vlen;
	bytea	   *ct;
	bool		created;
	Oid			types[4] = {TEXTOID, BYTEAOID, TEXTOID, TEXTOID};
	Datum		vals[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("the name and the value of a secret cannot be null")));
	tname = PG_GETARG_TEXT_PP(0);
	tval = PG_GETARG_TEXT_PP(1);
	name = text_to_cstring(tname);
	if (!ValidName(name, strlen(name)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid secret name"),
				 errdetail("A secret name has 1 to 100 letters, digits, '_', '.' or '-'.")));
	ws = WorkspaceArg(fcinfo, 2);
	user = UserArg(fcinfo, 3, ws);
	vlen = VARSIZE_ANY_EXHDR(tval);
	if (vlen == 0 || vlen > SECRET_MAX_LEN)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the value of secret \"%s\" must have 1 to %d bytes", name, SECRET_MAX_LEN)));
	value = text_to_cstring(tval);
	if (strchr(value, '\r') || strchr(value, '\n'))
	{
		explicit_bzero(value, vlen);
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the value of secret \"%s\" contains a line break", name),
				 errdetail("Secrets are sent in HTTP headers, where a line break is not allowed."),
				 errhint("Strip the trailing newline, e.g. pg_catalog.btrim(pg_catalog.pg_read_file(...), E'\\n').")));
	}
	ct = Encrypt(ws, user, name, value, vlen);
	explicit_bzero(value, vlen);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	vals[0] = CStringGetTextDatum(name);
	vals[1] = PointerGetDatum(ct);
	vals[2] = ws ? CStringGetTextDatum(ws) : (Datum) 0;
	nulls[2] = ws ? ' ' : 'n';
	vals[3] = user ? CStringGetTextDatum(user) : (Datum) 0;
	nulls[3] = user ? ' ' : 'n';
	/*
	 * the time in VALUES, not in DO UPDATE SET: Citus (where agent.secrets
	 * is a reference table) refuses a non-immutable function there
	 */
	if (SPI_execute_with_args("INSERT INTO agent.secrets AS s (name, ciphertext, updated_at, workspace_id, user_id) "
							  "VALUES ($1, $2, pg_catalog.now(), $3, $4) "
							  "ON CONFLICT ((coalesce(workspace_id, ''::pg_catalog.text)), "
							  "(coalesce(user_id, ''::pg_catalog.text)), name) "
							  "DO UPDATE SET ciphertext = excluded.ciphertext, "
							  "updated_at = excluded.updated_at "
							  "RETURNING (s.xmax OPERATOR(pg_catalog.=) '0'::pg_catalog.xid) AS created",
							  4, types, vals, nulls, false, 0) != SPI_OK_INSERT_RETURNING || SPI_processed != 1)
		elog(ERROR, "could not store secret \"%s\"", name);
	{
		bool		isnull;

		created = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	}
	SPI_finish();
	AuditSecret("secret.set", name, ws, user, created);
	ConfigChanged();
	PG_RETURN_VOID();
}

/* agent.drop_secret(name text, workspace_id text DEFAULT NULL, user_id text DEFAULT NULL): true when it existed */
Datum
pg_agents_drop_secret(PG_FUNCTION_ARGS)
{
	char	   *name;
	char	   *ws;
	char	   *user;
	Oid			types[3] = {TEXTOID, TEXTOID, TEXTOID};
	Datum		vals[3];
	char		nulls[3] = {' ', ' ', ' '};
	uint64		n;

	if (PG_ARGISNULL(0))
		PG_RETURN_BOOL(false);
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	ws = WorkspaceArg(fcinfo, 1);
	user = UserArg(fcinfo, 2, ws);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	vals[0] = CStringGetTextDatum(name);
	vals[1] = ws ? CStringGetTextDatum(ws) : (Datum) 0;
	nulls[1] = ws ? ' ' : 'n';
	vals[2] = user ? CStringGetTextDatum(user) : (Datum) 0;
	nulls[2] = user ? ' ' : 'n';
	if (SPI_execute_with_args("DELETE FROM agent.secrets s WHERE s.name OPERATOR(pg_catalog.=) $1 "
							  "AND s.workspace_id IS NOT DISTINCT FROM $2 "
							  "AND s.user_id IS NOT DISTINCT FROM $3",
							  3, types, vals, nulls, false, 0) != SPI_OK_DELETE)
		elog(ERROR, "could not drop secret \"%s\"", name);
	n = SPI_processed;
	SPI_finish();
	if (n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 user ? errmsg("secret \"%s\" of user \"%s\" does not exist in workspace \"%s\"", name, user, ws)
				 : ws ? errmsg("secret \"%s\" does not exist in workspace \"%s\"", name, ws)
				 : errmsg("secret \"%s\" does not exist", name)));
	AuditSecret("secret.drop", name, ws, user, false);
	ConfigChanged();
	PG_RETURN_BOOL(true);
}

/*
 * MCP header values (agent.mcp_servers.headers) may hold ${secret:NAME}:
 * replaced in place, in a transaction, at request time, among the secrets
 * of the server's workspace and the cluster's.  false with *error (naming
 * the header and the secret, never a value).
 */
bool
SecretsExpandJsonHeaders(json_t *headers, const char *workspace, char **error)
{
	const char *k;
	json_t	   *v;

	if (!json_is_object(headers))
		return true;
	json_object_foreach(headers, k, v)
	{
		char	   *x;
		char	   *err;

		if (!json_is_string(v) || !SecretsHasReference(json_string_value(v)))
			continue;
		x = SecretsExpandIn(json_string_value(v), workspace, &err);
		if (x == NULL)
		{
			*error = psprintf("header \"%s\" cannot be sent: %s", k, err);
			return false;
		}
		json_string_set(v, x);
		explicit_bzero(x, strlen(x));
		pfree(x);
	}
	return true;
}
