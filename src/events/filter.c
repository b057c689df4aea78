/*-------------------------------------------------------------------------
 *
 * filter.c
 *		Trigger filters: validation when a trigger is saved, evaluation
 *		against an event payload when an event is dispatched.
 *
 * A filter is a jsonb object, every part optional:
 *
 *	{"all": [cond, ...], "any": [cond, ...], "keywords": ["outage", ...],
 *	 "view": "schema.view_name"}
 *
 * where a cond is {"property": "priority", "op": "eq", "value": "high"}.
 * A property is looked up in payload->'row' first, then at the payload's top
 * level.  "changed" and "changed_to" read the payload's "changed" array.
 * Keywords match, case-insensitively and as whole words, any string value of
 * the row (of the payload when it has no row).  "view" requires the payload's
 * row_id to appear in the view's id column.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "access/xact.h"
#include "storage/latch.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/formatting.h"
#include "utils/hsearch.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/guc.h"
#include "utils/regproc.h"
#include "utils/syscache.h"
#include "utils/timeout.h"
#include "utils/varlena.h"

#include "events.h"
#include "util/compat.h"
#include "util/guc.h"
#include "util/spi_util.h"
#include "util/user_sql.h"

PG_FUNCTION_INFO_V1(pg_agents_validate_filter);
PG_FUNCTION_INFO_V1(pg_agents_filter_matches);
PG_FUNCTION_INFO_V1(pg_agents_saving_role);

typedef enum FilterOp
{
	OP_EQ,
	OP_NEQ,
	OP_CONTAINS,
	OP_NOT_CONTAINS,
	OP_GT,
	OP_GTE,
	OP_LT,
	OP_LTE,
	OP_IN,
	OP_IS_EMPTY,
	OP_IS_NOT_EMPTY,
	OP_CHANGED,
	OP_CHANGED_TO,
	OP_UNKNOWN
} FilterOp;

static const char *const op_names[] = {
	"eq", "neq", "contains", "not_contains", "gt", "gte", "lt", "lte", "in",
	"is_empty", "is_not_empty", "changed", "changed_to"
};

#define VALID_OPS_HINT "Valid operators are eq, neq, contains, not_contains, gt, gte, lt, lte, in, is_empty, is_not_empty, changed and changed_to."

/* --------------------------------------------------------------------------
 * small jsonb helpers
 * --------------------------------------------------------------------------
 */

/* the operator a filter condition names, or OP_UNKNOWN */
static FilterOp
LookupOp(const char *s, int len)
{
	int			i;

	for (i = 0; i < (int) lengthof(op_names); i++)
		if ((int) strlen(op_names[i]) == len && strncmp(op_names[i], s, len) == 0)
			return (FilterOp) i;
	return OP_UNKNOWN;
}

/* whether the operator takes no value */
static bool
OpIsUnary(FilterOp op)
{
	return op == OP_IS_EMPTY || op == OP_IS_NOT_EMPTY || op == OP_CHANGED;
}

/* Gets key of an object container into *res; false when absent. */
static bool
GetKey(JsonbContainer *jc, const char *key, JsonbValue *res)
{
	if (jc == NULL || !JsonContainerIsObject(jc))
		return false;
	return getKeyJsonValueFromContainer(jc, key, strlen(key), res) != NULL;
}

/* whether v is a jsonb array (array) or object (!array) */
static bool
IsContainer(const JsonbValue *v, bool array)
{
	if (v->type != jbvBinary)
		return false;
	return array ? JsonContainerIsArray(v->val.binary.data) && !JsonContainerIsScalar(v->val.binary.data)
		: JsonContainerIsObject(v->val.binary.data);
}

/* A raw scalar wrapped in a container is unwrapped to the scalar. */
static void
Unwrap(JsonbValue *v)
{
	if (v->type == jbvBinary && JsonContainerIsScalar(v->val.binary.data))
	{
		JsonbValue	s;

		if (JsonbExtractScalar(v->val.binary.data, &s))
			*v = s;
	}
}

/* copies of a property value and a filter value, each unwrapped */
static void
UnwrapPair(const JsonbValue *a, const JsonbValue *b, JsonbValue *x, JsonbValue *y)
{
	*x = *a;
	*y = *b;
	Unwrap(x);
	Unwrap(y);
}

/* a jsonb string value as a palloc'd C string */
static char *
JsonbValueCString(const JsonbValue *v)
{
	return pnstrdup(v->val.string.val, v->val.string.len);
}

/* Whether a string spells a JSON-ish number (so that numeric_in accepts it). */
static bool
LooksNumeric(const char *s, int len)
{
	int			i = 0;
	bool		digits = false;

	while (i < len && s[i] == ' ')
		i++;
	if (i < len && (s[i] == '-' || s[i] == '+'))
		i++;
	while (i < len && isdigit((unsigned char) s[i]))
		i++, digits = true;
	if (i < len && s[i] == '.')
	{
		i++;
		while (i < len && isdigit((unsigned char) s[i]))
			i++, digits = true;
	}
	if (!digits)
		return false;
	if (i < len && (s[i] == 'e' || s[i] == 'E'))
	{
		bool		edigits = false;

		i++;
		if (i < len && (s[i] == '-' || s[i] == '+'))
			i++;
		while (i < len && isdigit((unsigned char) s[i]))
			i++, edigits = true;
		if (!edigits)
			return false;
	}
	while (i < len && s[i] == ' ')
		i++;
	/* keep exponents sane so numeric_in never fails on range */
	return i == len && len < 64;
}

/* A numeric for a numeric value or a numeric-looking string, else NULL. */
static Numeric
AsNumeric(const JsonbValue *v)
{
	if (v->type == jbvNumeric)
		return v->val.numeric;
	if (v->type == jbvString && LooksNumeric(v->val.string.val, v->val.string.len))
	{
		char	   *s = JsonbValueCString(v);
		const char *p = s;
		int			exp = 0;

		/* refuse huge exponents, which numeric_in would reject */
		while (*p && *p != 'e' && *p != 'E')
			p++;
		if (*p)
			exp = atoi(p + 1);
		if (exp > 1000 || exp < -1000)
			return NULL;
		return DatumGetNumeric(DirectFunctionCall3(numeric_in, CStringGetDatum(s),
												   ObjectIdGetDatum(InvalidOid),
												   Int32GetDatum(-1)));
	}
	return NULL;
}

/* numeric_cmp of two numerics */
static int
NumericCmp(Numeric a, Numeric b)
{
	return DatumGetInt32(DirectFunctionCall2(numeric_cmp, NumericGetDatum(a),
											 NumericGetDatum(b)));
}

/* byte order of two jsonb strings, the shorter first on a tie */
static int
StringCmp(const JsonbValue *a, const JsonbValue *b)
{
	int			n = Min(a->val.string.len, b->val.string.len);
	int			c = memcmp(a->val.string.val, b->val.string.val, n);

	if (c != 0)
		return c;
	return a->val.string.len - b->val.string.len;
}

/*
 * Equality of a property value and a filter value: same JSON value, or a
 * number and a string spelling the same number, or a boolean and the string
 * "true"/"false".
 */
static bool
ValuesEqual(JsonbValue *a, JsonbValue *b)
{
	JsonbValue	x,
				y;

	UnwrapPair(a, b, &x, &y);
	if (x.type == jbvBinary || y.type == jbvBinary)
	{
		if (x.type != jbvBinary || y.type != jbvBinary)
			return false;
		if (JsonContainerIsArray(x.val.binary.data) != JsonContainerIsArray(y.val.binary.data))
			return false;
		return compareJsonbContainers(x.val.binary.data, y.val.binary.data) == 0;
	}
	if (x.type == y.type)
	{
		switch (x.type)
		{
			case jbvNull:
				return true;
			case jbvBool:
				return x.val.boolean == y.val.boolean;
			case jbvString:
				return StringCmp(&x, &y) == 0;
			case jbvNumeric:
				return NumericCmp(x.val.numeric, y.val.numeric) == 0;
			default:
				return false;
		}
	}
	if (x.type == jbvNumeric || y.type == jbvNumeric)
	{
		Numeric		nx = AsNumeric(&x),
					ny = AsNumeric(&y);

		return nx && ny && NumericCmp(nx, ny) == 0;
	}
	if (x.type == jbvBool || y.type == jbvBool)
	{
		JsonbValue *bv = x.type == jbvBool ? &x : &y;
		JsonbValue *sv = x.type == jbvBool ? &y : &x;
		const char *want = bv->val.boolean ? "true" : "false";

		return sv->type == jbvString && sv->val.string.len == (int) strlen(want) &&
			strncmp(sv->val.string.val, want, sv->val.string.len) == 0;
	}
	return false;
}

/* Ordering for gt/gte/lt/lte: numbers numerically, strings bytewise. */
static bool
ValuesCompare(JsonbValue *a, JsonbValue *b, int *cmp)
{
	JsonbValue	x,
				y;
	Numeric		nx,
				ny;

	UnwrapPair(a, b, &x, &y);
	nx = AsNumeric(&x);
	ny = AsNumeric(&y);
	if (nx && ny && (x.type == jbvNumeric || y.type == jbvNumeric ||
					 (x.type == jbvString && y.type == jbvString)))
	{
		/* two strings compare as numbers only when both spell numbers */
		*cmp = NumericCmp(nx, ny);
		return true;
	}
	if (x.type == jbvString && y.type == jbvString)
	{
		*cmp = StringCmp(&x, &y);
		return true;
	}
	return false;
}

/* Case-insensitive substring test on two strings. */
static bool
StringContains(const JsonbValue *hay, const JsonbValue *needle)
{
	char	   *h,
			   *n;

	if (needle->val.string.len == 0)
		return true;
	if (needle->val.string.len > hay->val.string.len)
		return false;
	h = str_tolower(hay->val.string.val, hay->val.string.len, DEFAULT_COLLATION_OID);
	n = str_tolower(needle->val.string.val, needle->val.string.len, DEFAULT_COLLATION_OID);
	return strstr(h, n) != NULL;
}

/*
 * the contains operator: an element of an array, a key of an object, or a
 * substring of a string (case-insensitive; a number or boolean as its text)
 */
static bool
ValueContains(JsonbValue *pv, JsonbValue *fv)
{
	JsonbValue	x,
				y;

	UnwrapPair(pv, fv, &x, &y);
	if (IsContainer(&x, true))
	{
		JsonbIterator *it = JsonbIteratorInit(x.val.binary.data);
		JsonbValue	e;
		JsonbIteratorToken tok;

		while ((tok = JsonbIteratorNext(&it, &e, true)) != WJB_DONE)
			if (tok == WJB_ELEM && ValuesEqual(&e, &y))
				return true;
		return false;
	}
	if (x.type == jbvString && y.type == jbvString)
		return StringContains(&x, &y);
	if (x.type == jbvString && (y.type == jbvNumeric || y.type == jbvBool))
	{
		JsonbValue	s;
		char	   *txt;

		if (y.type == jbvNumeric)
			txt = DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(y.val.numeric)));
		else
			txt = y.val.boolean ? "true" : "false";
		s.type = jbvString;
		s.val.string.val = txt;
		s.val.string.len = strlen(txt);
		return StringContains(&x, &s);
	}
	if (IsContainer(&x, false) && y.type == jbvString)
	{
		JsonbValue	dummy;

		return getKeyJsonValueFromContainer(x.val.binary.data, y.val.string.val,
											y.val.string.len, &dummy) != NULL;
	}
	return false;
}

/* the is_empty operator: null, a blank string, an empty array or object */
static bool
ValueIsEmpty(JsonbValue *v)
{
	JsonbValue	x = *v;

	Unwrap(&x);
	switch (x.type)
	{
		case jbvNull:
			return true;
		case jbvString:
			{
				int			i;

				for (i = 0; i < x.val.string.len; i++)
					if (!isspace((unsigned char) x.val.string.val[i]))
						return false;
				return true;
			}
		case jbvBinary:
			return JsonContainerSize(x.val.binary.data) == 0;
		default:
			return false;
	}
}

/* Whether the payload's "changed" array names prop. */
static bool
PropertyChanged(JsonbContainer *payload, const JsonbValue *prop)
{
	JsonbValue	changed;
	JsonbIterator *it;
	JsonbValue	e;
	JsonbIteratorToken tok;

	if (!GetKey(payload, "changed", &changed) || !IsContainer(&changed, true))
		return false;
	it = JsonbIteratorInit(changed.val.binary.data);
	while ((tok = JsonbIteratorNext(&it, &e, true)) != WJB_DONE)
		if (tok == WJB_ELEM && e.type == jbvString && StringCmp(&e, prop) == 0)
			return true;
	return false;
}

/* Looks a property up in payload->'row', then in the payload itself. */
static bool
LookupProperty(JsonbContainer *payload, const JsonbValue *prop, JsonbValue *res)
{
	JsonbValue	row;

	if (payload == NULL || !JsonContainerIsObject(payload))
		return false;
	if (GetKey(payload, "row", &row) && IsContainer(&row, false) &&
		getKeyJsonValueFromContainer(row.val.binary.data, prop->val.string.val,
									 prop->val.string.len, res) != NULL)
		return true;
	return getKeyJsonValueFromContainer(payload, prop->val.string.val,
										prop->val.string.len, res) != NULL;
}

/*
 * whether the payload satisfies one filter condition {property, operator,
 * value}
 */
static bool
EvalCond(JsonbContainer *cond, JsonbContainer *payload)
{
	JsonbValue	prop,
				opv,
				fv,
				pv;
	bool		found;
	bool		has_value;
	FilterOp	op;

	if (!GetKey(cond, "property", &prop) || prop.type != jbvString ||
		!GetKey(cond, "op", &opv) || opv.type != jbvString)
		return false;
	op = LookupOp(opv.val.string.val, opv.val.string.len);
	has_value = GetKey(cond, "value", &fv);
	found = LookupProperty(payload, &prop, &pv);

	switch (op)
	{
		case OP_EQ:
			if (!has_value)
				return false;
			if (!found)
				return fv.type == jbvNull;
			return ValuesEqual(&pv, &fv);
		case OP_NEQ:
			if (!has_value)
				return false;
			if (!found)
				return fv.type != jbvNull;
			return !ValuesEqual(&pv, &fv);
		case OP_CONTAINS:
			return has_value && found && ValueContains(&pv, &fv);
		case OP_NOT_CONTAINS:
			return has_value && !(found && ValueContains(&pv, &fv));
		case OP_GT:
		case OP_GTE:
		case OP_LT:
		case OP_LTE:
			{
				int			c;

				if (!has_value || !found || !ValuesCompare(&pv, &fv, &c))
					return false;
				return op == OP_GT ? c > 0 : op == OP_GTE ? c >= 0 : op == OP_LT ? c < 0 : c <= 0;
			}
		case OP_IN:
			{
				JsonbIterator *it;
				JsonbValue	e;
				JsonbIteratorToken tok;
				JsonbValue	x;

				if (!has_value || !found || !IsContainer(&fv, true))
					return false;
				x = pv;
				Unwrap(&x);
				it = JsonbIteratorInit(fv.val.binary.data);
				while ((tok = JsonbIteratorNext(&it, &e, true)) != WJB_DONE)
				{
					if (tok != WJB_ELEM)
						continue;
					if (IsContainer(&x, true) ? ValueContains(&x, &e) : ValuesEqual(&x, &e))
						return true;
				}
				return false;
			}
		case OP_IS_EMPTY:
			return !found || ValueIsEmpty(&pv);
		case OP_IS_NOT_EMPTY:
			return found && !ValueIsEmpty(&pv);
		case OP_CHANGED:
			return PropertyChanged(payload, &prop);
		case OP_CHANGED_TO:
			return has_value && PropertyChanged(payload, &prop) && found && ValuesEqual(&pv, &fv);
		case OP_UNKNOWN:
			return false;
	}
	return false;
}

/* --------------------------------------------------------------------------
 * keywords
 * --------------------------------------------------------------------------
 */

/* a byte of a word for keyword matching (non-ASCII bytes count as letters) */
static inline bool
IsWordByte(unsigned char c)
{
	return isalnum(c) || c == '_' || c >= 0x80;
}

/* Whole-word occurrence of lowered needle in lowered hay. */
static bool
WholeWordIn(const char *hay, const char *needle)
{
	size_t		nlen = strlen(needle);
	const char *p = hay;

	if (nlen == 0)
		return false;
	while ((p = strstr(p, needle)) != NULL)
	{
		bool		left = (p == hay) || !IsWordByte((unsigned char) p[-1]);
		bool		right = !IsWordByte((unsigned char) p[nlen]);

		if (left && right)
			return true;
		p++;
	}
	return false;
}

/*
 * whether one of the filter's keywords occurs as a whole word in the
 * payload's row (or the payload), case-insensitively
 */
static bool
KeywordsMatch(JsonbContainer *keywords, JsonbContainer *payload)
{
	JsonbValue	row;
	JsonbContainer *scope = payload;
	List	   *needles = NIL;
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;

	if (JsonContainerSize(keywords) == 0)
		return true;
	if (payload == NULL)
		return false;
	if (GetKey(payload, "row", &row) && row.type == jbvBinary)
		scope = row.val.binary.data;

	it = JsonbIteratorInit(keywords);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
		if (tok == WJB_ELEM && v.type == jbvString && v.val.string.len > 0)
			needles = lappend(needles, str_tolower(v.val.string.val, v.val.string.len,
												   DEFAULT_COLLATION_OID));
	if (needles == NIL)
		return false;

	it = JsonbIteratorInit(scope);
	while ((tok = JsonbIteratorNext(&it, &v, false)) != WJB_DONE)
	{
		char	   *low;
		ListCell   *lc;

		if ((tok != WJB_VALUE && tok != WJB_ELEM) || v.type != jbvString)
			continue;
		low = str_tolower(v.val.string.val, v.val.string.len, DEFAULT_COLLATION_OID);
		foreach(lc, needles)
			if (WholeWordIn(low, (const char *) lfirst(lc)))
				return true;
	}
	return false;
}

/* --------------------------------------------------------------------------
 * view membership
 * --------------------------------------------------------------------------
 */

/*
 * A view is user-supplied SQL: it never runs with the extension's rights.
 * It is evaluated as the role that saved the trigger (agent.triggers.saved_by)
 * under SECURITY_RESTRICTED_OPERATION (no SET ROLE, no temporary objects, as
 * PostgreSQL does for REFRESH MATERIALIZED VIEW), with
 * search_path = pg_catalog, pg_temp, inside an internal subtransaction that
 * is always rolled back (nothing the view did stays: writes, settings), and
 * bounded by pg_agents.filter_view_timeout (a timer of our own, which
 * interrupts a running or lock-waiting query like statement_timeout does
 * and leaves the caller's statement_timeout alone).  A failure or a timeout
 * is returned as a message: the event does not match that trigger, and the
 * caller's write goes on.
 *
 * Plans are kept per (view, role): a plan prepared for one role never runs
 * for another (the executor checks privileges again at each run anyway).
 */
typedef struct ViewPlanKey
{
	Oid			relid;
	Oid			role;
} ViewPlanKey;

typedef struct ViewPlan
{
	ViewPlanKey key;
	SPIPlanPtr	plan;
} ViewPlan;

static HTAB *view_plans = NULL;

/* Resolves a view name to its relation, or InvalidOid. */
static Oid
ResolveView(const char *name, bool *syntax_ok)
{
	List	   *volatile names = NIL;
	volatile bool ok = true;
	MemoryContext cxt = CurrentMemoryContext;

	PG_TRY();
	{
		names = stringToQualifiedNameList(name);
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(cxt);
		FlushErrorState();
		ok = false;
	}
	PG_END_TRY();
	*syntax_ok = ok;
	if (!ok || names == NIL || list_length(names) > 2)
	{
		*syntax_ok = false;
		return InvalidOid;
	}
	return RangeVarGetRelid(makeRangeVarFromNameList(names), NoLock, true);
}

/* The query itself; runs inside the protected section of ViewHasRowId. */
static bool
ViewQuery(Oid relid, Oid role, const char *row_id)
{
	ViewPlanKey key;
	ViewPlan   *vp;
	bool		found;
	Datum		arg;
	Oid			argtype = TEXTOID;
	int			ret;
	bool		result;

	if (view_plans == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(ViewPlanKey);
		ctl.entrysize = sizeof(ViewPlan);
		ctl.hcxt = TopMemoryContext;
		view_plans = hash_create("pg_agents filter view plans", 16, &ctl,
								 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	memset(&key, 0, sizeof(key));
	key.relid = relid;
	key.role = role;
	vp = hash_search(view_plans, &key, HASH_ENTER, &found);
	if (!found)
		vp->plan = NULL;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (vp->plan == NULL)
	{
		char	   *sql = psprintf("SELECT 1 FROM %s.%s v WHERE v.id::pg_catalog.text OPERATOR(pg_catalog.=) $1 LIMIT 1",
								   quote_identifier(get_namespace_name(get_rel_namespace(relid))),
								   quote_identifier(get_rel_name(relid)));
		(void) SpiUtilKeptPlan(&vp->plan, sql, 1, &argtype);
	}
	arg = CStringGetTextDatum(row_id);
	ret = SPI_execute_plan(vp->plan, &arg, NULL, true, 1);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "filter view query failed: %s", SPI_result_code_string(ret));
	result = SPI_processed > 0;
	SPI_finish();
	return result;
}

typedef struct ViewCheck
{
	Oid			relid;
	Oid			role;
	const char *row_id;
	bool		found;			/* out */
} ViewCheck;

/* the body of ViewHasRowId, as the filter's role (UserSqlRun) */
static void
ViewCheckBody(void *arg)
{
	ViewCheck  *vc = (ViewCheck *) arg;

	if (pg_class_aclcheck(vc->relid, vc->role, ACL_SELECT) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for view \"%s\"", get_rel_name(vc->relid))));
	vc->found = ViewQuery(vc->relid, vc->role, vc->row_id);
}

/*
 * Whether row_id is in the view, read as role; on failure (error, time-out)
 * false with *error set.
 */
static bool
ViewHasRowId(Oid relid, Oid role, const char *row_id, char **error)
{
	ViewCheck	vc = {relid, role, row_id, false};
	char	   *message;

	switch (UserSqlRun(role, pg_agents_filter_view_timeout, ViewCheckBody, &vc, &message))
	{
		case USER_SQL_OK:
			return vc.found;
		case USER_SQL_TIMED_OUT:
			*error = psprintf("took longer than pg_agents.filter_view_timeout (%d ms)",
							  pg_agents_filter_view_timeout);
			return false;
		case USER_SQL_FAILED:
			*error = message;
			return false;
	}
	return false;
}

/*
 * whether the payload's row_id is in the filter's view, read as the
 * trigger's saver (ViewHasRowId); a missing view does not match
 */
static bool
ViewMatches(const JsonbValue *viewname, JsonbContainer *payload, FilterEval *ev)
{
	char	   *name = JsonbValueCString(viewname);
	bool		syntax_ok;
	Oid			relid = ResolveView(name, &syntax_ok);
	JsonbValue	rid;
	char	   *row_id;
	char	   *error = NULL;
	bool		result;

	if (!OidIsValid(relid) || get_attnum(relid, "id") == InvalidAttrNumber)
	{
		if (ev != NULL && ev->error == NULL)
			ev->error = psprintf("filter view \"%s\" does not exist or has no column \"id\"", name);
		ereport(WARNING,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("filter view \"%s\" does not exist or has no column \"id\"", name),
				 errdetail("The event does not match the trigger.")));
		return false;
	}
	if (!GetKey(payload, "row_id", &rid))
		return false;
	Unwrap(&rid);
	if (rid.type == jbvString)
		row_id = JsonbValueCString(&rid);
	else if (rid.type == jbvNumeric)
		row_id = DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(rid.val.numeric)));
	else
		return false;

	if (ev == NULL || !OidIsValid(ev->role))
		error = pstrdup("the trigger records no role that saved it");
	else if (!SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(ev->role)))
		error = pstrdup("the role that saved the trigger no longer exists");
	else if (isAnyTempNamespace(get_rel_namespace(relid)) && !pg_class_ownercheck(relid, ev->role))
	{
		/*
		 * pg_temp names the writing session's own schema: another session's
		 * role must not get its temporary view read as the saving role.
		 */
		error = pstrdup("a temporary view is read only for the role that owns it");
	}
	if (error != NULL)
		result = false;
	else
		result = ViewHasRowId(relid, ev->role, row_id, &error);
	if (error != NULL)
	{
		char	   *msg = psprintf("filter view \"%s\": %s", name, error);
		Oid			outer = GetOuterUserId();
		bool		own;

		if (ev != NULL && ev->error == NULL)
			ev->error = msg;
		/*
		 * The view's error may quote what its role reads: the writing
		 * session sees it only when it is that role (or a superuser); the
		 * trigger's last_error always has it.
		 */
		own = ev != NULL && (outer == ev->role || superuser_arg(outer));
		ereport(WARNING,
				(errcode(ERRCODE_WARNING),
				 own ? errmsg("%s", msg) :
				 errmsg("filter view \"%s\" failed", name),
				 errdetail("The event does not match the trigger%s.",
						   ev && ev->trigger_id ? psprintf(" " INT64_FORMAT, ev->trigger_id) : ""),
				 errhint("The view is read with the rights of the role that saved the trigger, within pg_agents.filter_view_timeout.")));
	}
	return result;
}

/* --------------------------------------------------------------------------
 * evaluation
 * --------------------------------------------------------------------------
 */

/*
 * Whether payload satisfies filter.  The filter is assumed valid (it was
 * checked when the trigger was saved); anything malformed simply fails to
 * match.  Runs view queries through SPI (nested connections are fine), as
 * ev->role; a view that fails sets ev->error (the first such message).
 */
bool
EventsFilterMatches(Jsonb *filter, Jsonb *payload, FilterEval *ev)
{
	JsonbContainer *f = filter ? &filter->root : NULL;
	JsonbContainer *p = payload ? &payload->root : NULL;
	JsonbValue	part;

	if (f == NULL || !JsonContainerIsObject(f) || JsonContainerSize(f) == 0)
		return true;

	if (GetKey(f, "all", &part))
	{
		JsonbIterator *it;
		JsonbValue	e;
		JsonbIteratorToken tok;

		if (!IsContainer(&part, true))
			return false;
		it = JsonbIteratorInit(part.val.binary.data);
		while ((tok = JsonbIteratorNext(&it, &e, true)) != WJB_DONE)
		{
			if (tok != WJB_ELEM)
				continue;
			if (!IsContainer(&e, false) || !EvalCond(e.val.binary.data, p))
				return false;
		}
	}
	if (GetKey(f, "any", &part))
	{
		JsonbIterator *it;
		JsonbValue	e;
		JsonbIteratorToken tok;
		bool		any = false;
		bool		empty = true;

		if (!IsContainer(&part, true))
			return false;
		it = JsonbIteratorInit(part.val.binary.data);
		while ((tok = JsonbIteratorNext(&it, &e, true)) != WJB_DONE)
		{
			if (tok != WJB_ELEM)
				continue;
			empty = false;
			if (IsContainer(&e, false) && EvalCond(e.val.binary.data, p))
			{
				any = true;
				break;
			}
		}
		if (!empty && !any)
			return false;
	}
	if (GetKey(f, "keywords", &part))
	{
		if (!IsContainer(&part, true) || !KeywordsMatch(part.val.binary.data, p))
			return false;
	}
	if (GetKey(f, "view", &part))
	{
		if (part.type != jbvString || !ViewMatches(&part, p, ev))
			return false;
	}
	return true;
}

/* --------------------------------------------------------------------------
 * validation
 * --------------------------------------------------------------------------
 */

#define FILTER_ERROR(hint, ...) \
	ereport(ERROR, \
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE), \
			 errmsg(__VA_ARGS__), \
			 (hint) ? errhint("%s", (const char *) (hint)) : 0))

/* checks one filter condition when a trigger is saved; errors with a hint */
static void
ValidateCond(JsonbValue *c, const char *where)
{
	JsonbContainer *cond;
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	JsonbValue	prop,
				opv,
				fv;
	FilterOp	op;
	char	   *opname;
	bool		has_value;

	if (!IsContainer(c, false))
		FILTER_ERROR("A condition is written {\"property\": \"priority\", \"op\": \"eq\", \"value\": \"high\"}.",
					 "invalid filter: %s must be an object", where);
	cond = c->val.binary.data;

	it = JsonbIteratorInit(cond);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok != WJB_KEY)
			continue;
		if (!((v.val.string.len == 8 && strncmp(v.val.string.val, "property", 8) == 0) ||
			  (v.val.string.len == 2 && strncmp(v.val.string.val, "op", 2) == 0) ||
			  (v.val.string.len == 5 && strncmp(v.val.string.val, "value", 5) == 0)))
			FILTER_ERROR("A condition has the keys property, op and value.",
						 "invalid filter: unknown key \"%s\" in %s", JsonbValueCString(&v), where);
	}

	if (!GetKey(cond, "property", &prop))
		FILTER_ERROR(NULL, "invalid filter: missing property in %s", where);
	if (prop.type != jbvString || prop.val.string.len == 0)
		FILTER_ERROR(NULL, "invalid filter: property must be a non-empty string in %s", where);
	if (!GetKey(cond, "op", &opv))
		FILTER_ERROR(VALID_OPS_HINT, "invalid filter: missing operator in %s", where);
	if (opv.type != jbvString)
		FILTER_ERROR(VALID_OPS_HINT, "invalid filter: operator must be a string in %s", where);
	opname = JsonbValueCString(&opv);
	op = LookupOp(opv.val.string.val, opv.val.string.len);
	if (op == OP_UNKNOWN)
		FILTER_ERROR(VALID_OPS_HINT, "invalid filter: unknown operator \"%s\" in %s", opname, where);

	has_value = GetKey(cond, "value", &fv);
	if (OpIsUnary(op))
	{
		if (has_value)
			FILTER_ERROR(NULL, "invalid filter: operator \"%s\" takes no value in %s", opname, where);
		return;
	}
	if (!has_value)
		FILTER_ERROR(NULL, "invalid filter: operator \"%s\" needs a value in %s", opname, where);
	Unwrap(&fv);
	switch (op)
	{
		case OP_IN:
			if (!IsContainer(&fv, true))
				FILTER_ERROR(NULL, "invalid filter: operator \"in\" needs an array value in %s", where);
			break;
		case OP_GT:
		case OP_GTE:
		case OP_LT:
		case OP_LTE:
			if (fv.type != jbvNumeric && fv.type != jbvString)
				FILTER_ERROR(NULL, "invalid filter: operator \"%s\" needs a number or a string value in %s",
							 opname, where);
			break;
		case OP_CONTAINS:
		case OP_NOT_CONTAINS:
			if (fv.type == jbvNull || fv.type == jbvBinary)
				FILTER_ERROR(NULL, "invalid filter: operator \"%s\" needs a string, number or boolean value in %s",
							 opname, where);
			break;
		default:
			break;
	}
}

/*
 * checks a list of filter conditions (all_of / any_of) when a trigger is
 * saved
 */
static void
ValidateCondList(JsonbValue *list, const char *name)
{
	JsonbIterator *it;
	JsonbValue	e;
	JsonbIteratorToken tok;
	int			i = 0;

	if (!IsContainer(list, true))
		FILTER_ERROR(NULL, "invalid filter: \"%s\" must be an array of conditions", name);
	it = JsonbIteratorInit(list->val.binary.data);
	while ((tok = JsonbIteratorNext(&it, &e, true)) != WJB_DONE)
	{
		char		where[64];

		if (tok != WJB_ELEM)
			continue;
		snprintf(where, sizeof(where), "%s[%d]", name, i++);
		ValidateCond(&e, where);
	}
}

/*
 * Refuses an invalid filter with an error that names the bad part.
 */
static void
PgAgentsValidateFilter(Jsonb *filter)
{
	JsonbContainer *f = &filter->root;
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;

	if (!JsonContainerIsObject(f))
		FILTER_ERROR("A filter is written {\"all\": [...], \"any\": [...], \"keywords\": [...], \"view\": \"schema.view\"}.",
					 "invalid filter: a filter must be a JSON object");

	it = JsonbIteratorInit(f);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		const char *k;
		int			len;

		if (tok != WJB_KEY)
			continue;
		k = v.val.string.val;
		len = v.val.string.len;
		if (!((len == 3 && strncmp(k, "all", 3) == 0) ||
			  (len == 3 && strncmp(k, "any", 3) == 0) ||
			  (len == 8 && strncmp(k, "keywords", 8) == 0) ||
			  (len == 4 && strncmp(k, "view", 4) == 0)))
			FILTER_ERROR("A filter has the keys all, any, keywords and view.",
						 "invalid filter: unknown key \"%s\"", JsonbValueCString(&v));
	}

	if (GetKey(f, "all", &v))
		ValidateCondList(&v, "all");
	if (GetKey(f, "any", &v))
		ValidateCondList(&v, "any");
	if (GetKey(f, "keywords", &v))
	{
		JsonbIterator *kit;
		JsonbValue	e;
		int			i = 0;

		if (!IsContainer(&v, true))
			FILTER_ERROR(NULL, "invalid filter: \"keywords\" must be an array of strings");
		kit = JsonbIteratorInit(v.val.binary.data);
		while ((tok = JsonbIteratorNext(&kit, &e, true)) != WJB_DONE)
		{
			if (tok != WJB_ELEM)
				continue;
			if (e.type != jbvString || e.val.string.len == 0)
				FILTER_ERROR(NULL, "invalid filter: keywords[%d] must be a non-empty string", i);
			i++;
		}
	}
	if (GetKey(f, "view", &v))
	{
		char	   *name;
		bool		syntax_ok;
		Oid			relid;

		if (v.type != jbvString || v.val.string.len == 0)
			FILTER_ERROR(NULL, "invalid filter: \"view\" must be a string naming a view");
		name = JsonbValueCString(&v);
		relid = ResolveView(name, &syntax_ok);
		if (!syntax_ok)
			FILTER_ERROR(NULL, "invalid filter: invalid view name \"%s\"", name);
		if (!OidIsValid(relid))
			FILTER_ERROR("Create the view first, or name it with its schema.",
						 "invalid filter: view \"%s\" does not exist", name);
		if (get_attnum(relid, "id") == InvalidAttrNumber)
			FILTER_ERROR("The view must have a column named id holding the row ids.",
						 "invalid filter: view \"%s\" has no column \"id\"", name);
		/*
		 * The saving role is the outer one (SET ROLE included), not the owner
		 * of a SECURITY DEFINER function such as agent.create_from_draft: the
		 * view will be read with that role's rights.
		 */
		if (pg_class_aclcheck(relid, GetOuterUserId(), ACL_SELECT) != ACLCHECK_OK)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("invalid filter: permission denied for view \"%s\"", name),
					 errdetail("The role saving the trigger must be allowed to read the view: it is read with that role's rights.")));
	}
}

/* --------------------------------------------------------------------------
 * SQL interface
 * --------------------------------------------------------------------------
 */

/* agent.validate_filter(filter jsonb) RETURNS void */
Datum
pg_agents_validate_filter(PG_FUNCTION_ARGS)
{
	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid filter: a filter must be a JSON object"),
				 errhint("Use '{}' for no filter.")));
	PgAgentsValidateFilter(PG_GETARG_JSONB_P(0));
	PG_RETURN_VOID();
}

/* agent.filter_matches(filter jsonb, payload jsonb) RETURNS boolean */
Datum
pg_agents_filter_matches(PG_FUNCTION_ARGS)
{
	Jsonb	   *filter = PG_ARGISNULL(0) ? NULL : PG_GETARG_JSONB_P(0);
	Jsonb	   *payload = PG_ARGISNULL(1) ? NULL : PG_GETARG_JSONB_P(1);

	FilterEval	ev;

	/* evaluated with the caller's own rights */
	memset(&ev, 0, sizeof(ev));
	ev.role = GetUserId();
	PG_RETURN_BOOL(EventsFilterMatches(filter, payload, &ev));
}

/*
 * agent._saving_role(requested regrole DEFAULT NULL) RETURNS regrole
 *
 * The role that saves a trigger: the outer role of the session (the one SET
 * ROLE chose, or the session user), which SECURITY DEFINER functions do not
 * change.  A superuser may name another role (requested), as the upgrade
 * does for triggers saved before saved_by existed.
 */
Datum
pg_agents_saving_role(PG_FUNCTION_ARGS)
{
	Oid			outer = GetOuterUserId();

	if (!PG_ARGISNULL(0) && OidIsValid(PG_GETARG_OID(0)) && superuser_arg(outer))
		PG_RETURN_OID(PG_GETARG_OID(0));
	PG_RETURN_OID(outer);
}
