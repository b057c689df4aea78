/*-------------------------------------------------------------------------
 *
 * jsonb_build.c
 *		Pushing keys and values onto a JsonbParseState: the one copy of the
 *		helpers that event payloads (dispatch.c, watch.c) and the audit
 *		trigger (audit.c) build their jsonb with.  Strings are not copied:
 *		they must live until pushJsonbValue's WJB_END_OBJECT.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "jsonb_build.h"

#include "utils/numeric.h"

/* an object key */
void
JsonbBuildKey(JsonbParseState **ps, const char *key)
{
	JsonbValue	k;

	k.type = jbvString;
	k.val.string.val = (char *) key;
	k.val.string.len = strlen(key);
	(void) pushJsonbValue(ps, WJB_KEY, &k);
}

/* an object value: a string, or JSON null for NULL */
static void
JsonbBuildString(JsonbParseState **ps, const char *val)
{
	JsonbValue	v;

	if (val == NULL)
		v.type = jbvNull;
	else
	{
		v.type = jbvString;
		v.val.string.val = (char *) val;
		v.val.string.len = strlen(val);
	}
	(void) pushJsonbValue(ps, WJB_VALUE, &v);
}

/* an object value: a jsonb document, as is */
void
JsonbBuildJsonb(JsonbParseState **ps, Jsonb *j)
{
	JsonbValue	v;

	v.type = jbvBinary;
	v.val.binary.data = &j->root;
	v.val.binary.len = VARSIZE(j) - VARHDRSZ;
	(void) pushJsonbValue(ps, WJB_VALUE, &v);
}

/* an object value: an array of the strings of a List of char * */
void
JsonbBuildStringArray(JsonbParseState **ps, List *strings)
{
	ListCell   *lc;
	JsonbValue	v;

	(void) pushJsonbValue(ps, WJB_BEGIN_ARRAY, NULL);
	foreach(lc, strings)
	{
		v.type = jbvString;
		v.val.string.val = (char *) lfirst(lc);
		v.val.string.len = strlen(v.val.string.val);
		(void) pushJsonbValue(ps, WJB_ELEM, &v);
	}
	(void) pushJsonbValue(ps, WJB_END_ARRAY, NULL);
}

/* "key": "val" (null for NULL) */
void
JsonbBuildTextField(JsonbParseState **ps, const char *key, const char *val)
{
	JsonbBuildKey(ps, key);
	JsonbBuildString(ps, val);
}

/* "key": val */
void
JsonbBuildIntField(JsonbParseState **ps, const char *key, int64 val)
{
	JsonbValue	v;

	JsonbBuildKey(ps, key);
	v.type = jbvNumeric;
	v.val.numeric = int64_to_numeric(val);
	(void) pushJsonbValue(ps, WJB_VALUE, &v);
}
