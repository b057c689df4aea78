/*-------------------------------------------------------------------------
 *
 * allowlist_ops.c
 *		The leakproof operators that let an agent's search under the
 *		allowlist start from a text or trigram index: agent.ts_match,
 *		agent.like, agent.ilike and their planner support.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_am_d.h"
#include "catalog/pg_class.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "nodes/pathnodes.h"
#include "nodes/supportnodes.h"
#include "optimizer/clauses.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/plancat.h"
#include "optimizer/restrictinfo.h"
#include "parser/parse_func.h"
#include "parser/parse_oper.h"
#include "mb/pg_wchar.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "tsearch/ts_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/plancache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/uuid.h"

#include "access.h"
#include "access_gen.h"
#include "allowlist.h"
#include "util/compat.h"
#include "util/guc.h"
#include "util/relcheck.h"
#include "util/shmem.h"

PG_FUNCTION_INFO_V1(pg_agents_ts_match);
PG_FUNCTION_INFO_V1(pg_agents_ts_match_support);
PG_FUNCTION_INFO_V1(pg_agents_like);
PG_FUNCTION_INFO_V1(pg_agents_ilike);
PG_FUNCTION_INFO_V1(pg_agents_like_support);
PG_FUNCTION_INFO_V1(pg_agents_search_arg_tsquery);
PG_FUNCTION_INFO_V1(pg_agents_search_arg_text);

/* ------------------------------------------------------------------------
 * agent.ts_match: a leakproof full-text match
 * ------------------------------------------------------------------------
 *
 * Row-level security evaluates the policies before any condition whose
 * function is not LEAKPROOF, and only a leakproof condition may become an
 * index condition beneath them.  pg_catalog's tsvector @@ tsquery is not
 * marked LEAKPROOF (and changing pg_catalog is not ours to do), so under the
 * allowlist an agent's search cannot start from the text index.
 * agent.ts_match(tsvector, tsquery) is the same match, marked LEAKPROOF:
 * its result depends on its arguments only and it raises no error that
 * depends on them (ts_match_vq searches the vector for the query's lexemes;
 * the one data-dependent error it could raise, stack depth on a deeply
 * nested query, is avoided: a query nested deeper than TS_MATCH_MAX_DEPTH
 * levels matches nothing).  Its support function lets the planner use a
 * GIN or GiST index whose operator family has @@ (the default tsvector_ops)
 * and estimate it as @@.
 */
#define TS_MATCH_MAX_DEPTH 256

static Expr *SearchArgGuard(Expr *arg, Oid type);

/*
 * Whether the query nests deeper than TS_MATCH_MAX_DEPTH levels (or is
 * malformed), walked with an explicit stack so that the check itself cannot
 * run out of stack.
 */
static bool
TsQueryTooDeep(TSQuery q)
{
	QueryItem  *items = GETQUERY(q);
	int		   *stack;
	int		   *depth;
	int			top = 0;
	bool		deep = false;

	if (q->size <= TS_MATCH_MAX_DEPTH)
		return false;			/* the depth is at most the number of items */
	stack = palloc(sizeof(int) * q->size);
	depth = palloc(sizeof(int) * q->size);
	stack[top] = 0;
	depth[top++] = 1;
	while (top > 0 && !deep)
	{
		int			i = stack[--top];
		int			d = depth[top];

		if (d > TS_MATCH_MAX_DEPTH)
			deep = true;
		else if (i >= 0 && i < q->size && items[i].type == QI_OPR)
		{
			/* operands: item + 1, and for binary operators item + left */
			if (top + 2 > q->size)
			{
				deep = true;	/* malformed: never reached for a valid query */
				break;
			}
			stack[top] = i + 1;
			depth[top++] = d + 1;
			if (items[i].qoperator.oper != OP_NOT)
			{
				stack[top] = i + items[i].qoperator.left;
				depth[top++] = d + 1;
			}
		}
	}
	pfree(stack);
	pfree(depth);
	return deep;
}

/*
 * agent.ts_match(tsvector, tsquery) RETURNS boolean (see above): tsvector @@
 * tsquery, but false for a query TsQueryTooDeep refuses.
 */
Datum
pg_agents_ts_match(PG_FUNCTION_ARGS)
{
	TSQuery		q = PG_GETARG_TSQUERY(1);

	if (TsQueryTooDeep(q))
		PG_RETURN_BOOL(false);
	return DirectFunctionCall2Coll(ts_match_vq, PG_GET_COLLATION(),
								   PG_GETARG_DATUM(0), PointerGetDatum(q));
}

/* pg_catalog.@@ (tsvector, tsquery) */
static Oid
TsMatchOperator(void)
{
	return LookupOperName(NULL, list_make2(makeString("pg_catalog"), makeString("@@")),
						  TSVECTOROID, TSQUERYOID, true, -1);
}

/*
 * agent._ts_match_support(internal): planner support of agent.ts_match: the
 * selectivity of @@, and @@ as an index condition on a tsvector index.
 */
Datum
pg_agents_ts_match_support(PG_FUNCTION_ARGS)
{
	Node	   *rawreq = (Node *) PG_GETARG_POINTER(0);
	Oid			op;

	if (IsA(rawreq, SupportRequestSelectivity))
	{
		SupportRequestSelectivity *req = (SupportRequestSelectivity *) rawreq;

		op = TsMatchOperator();
		if (!OidIsValid(op) || list_length(req->args) != 2)
			PG_RETURN_POINTER(NULL);
		if (req->is_join)
			req->selectivity = join_selectivity(req->root, op, req->args, req->inputcollid,
												req->jointype, req->sjinfo);
		else
			req->selectivity = restriction_selectivity(req->root, op, req->args,
													   req->inputcollid, req->varRelid);
		PG_RETURN_POINTER(req);
	}
	if (IsA(rawreq, SupportRequestIndexCondition))
	{
		SupportRequestIndexCondition *req = (SupportRequestIndexCondition *) rawreq;
		FuncExpr   *fe = (FuncExpr *) req->node;
		Node	   *query;

		if (!IsA(fe, FuncExpr) || list_length(fe->args) != 2 || req->indexarg != 0)
			PG_RETURN_POINTER(NULL);
		op = TsMatchOperator();
		if (!OidIsValid(op) || !op_in_opfamily(op, req->opfamily))
			PG_RETURN_POINTER(NULL);
		query = lsecond(fe->args);
		/* a constant query too deep for ts_match stays ts_match's */
		if (IsA(query, Const) && !((Const *) query)->constisnull &&
			TsQueryTooDeep(DatumGetTSQuery(((Const *) query)->constvalue)))
			PG_RETURN_POINTER(NULL);
		/*
		 * Any other query ($1, an expression of parameters): the index
		 * condition, which the bitmap's recheck evaluates on rows the policy
		 * has not filtered yet, reads it through agent._search_arg, which
		 * raises on a query too deep when the scan starts (its keys are
		 * computed before any row is read), whatever the rows.
		 */
		if (!IsA(query, Const))
		{
			query = (Node *) SearchArgGuard((Expr *) query, TSQUERYOID);
			if (query == NULL)
				PG_RETURN_POINTER(NULL);
		}
		else
			query = copyObject(query);
		req->lossy = false;
		PG_RETURN_POINTER(list_make1(make_opclause(op, BOOLOID, false,
												   (Expr *) copyObject(linitial(fe->args)),
												   (Expr *) query,
												   InvalidOid, fe->inputcollid)));
	}
	PG_RETURN_POINTER(NULL);
}

/* ------------------------------------------------------------------------
 * agent.like and agent.ilike: leakproof LIKE and ILIKE
 * ------------------------------------------------------------------------
 *
 * The same matches as text LIKE and ILIKE (~~, ~~*), marked LEAKPROOF, so
 * that under the allowlist a pattern search can start from a trigram index
 * (pg_trgm's gin_trgm_ops or gist_trgm_ops, whose operator families have ~~
 * and ~~*) or a btree prefix, and filter with the policy afterwards.  The
 * errors of LIKE that depend on its arguments (a pattern ending with the
 * escape character; running out of stack on thousands of %) are avoided:
 * such a pattern matches nothing.  (ILIKE
 * lower-cases both sides first, which raises nothing on text that is valid
 * in the database encoding, as PostgreSQL ensures all stored text is.)
 */

/*
 * Could LIKE raise an error on this pattern, whatever the string?  A pattern
 * ending with an unpaired escape character (a backslash) always can; one
 * with more than LIKE_MAX_WILDCARDS % signs could run out of stack (the
 * matcher recurses once per %) depending on the string.  Such patterns match
 * nothing through agent.like.
 */
#define LIKE_MAX_WILDCARDS 256

/*
 * The test described above LIKE_MAX_WILDCARDS; bytes that are not valid text
 * in the database encoding are refused too.
 */
static bool
LikePatternBad(text *pat)
{
	const char *p = VARDATA_ANY(pat);
	int			len = VARSIZE_ANY_EXHDR(pat);
	int			wildcards = 0;

	while (len > 0)
	{
		int			l;

		if (*p == '%' && ++wildcards > LIKE_MAX_WILDCARDS)
			return true;
		if (*p == '\\')
		{
			if (len == 1)
				return true;
			p++;
			len--;
		}
		l = pg_mblen(p);
		if (l > len)
			return true;		/* not valid text: never from the database */
		p += l;
		len -= l;
	}
	return false;
}

/*
 * agent.like / agent.ilike: false for a pattern LikePatternBad refuses,
 * otherwise the matcher's (textlike or texticlike) answer
 */
static Datum
like_call(FunctionCallInfo fcinfo, PGFunction matcher)
{
	text	   *pat = PG_GETARG_TEXT_PP(1);

	if (LikePatternBad(pat))
		PG_RETURN_BOOL(false);
	return DirectFunctionCall2Coll(matcher, PG_GET_COLLATION(), PG_GETARG_DATUM(0),
								   PointerGetDatum(pat));
}

/* agent.like(text, text) RETURNS boolean: LIKE, through like_call. */
Datum
pg_agents_like(PG_FUNCTION_ARGS)
{
	return like_call(fcinfo, textlike);
}

/* agent.ilike(text, text) RETURNS boolean: ILIKE, through like_call. */
Datum
pg_agents_ilike(PG_FUNCTION_ARGS)
{
	return like_call(fcinfo, texticlike);
}

/* ------------------------------------------------------------------------
 * agent._search_arg: the guard of a search argument that is not a constant
 * ------------------------------------------------------------------------
 *
 * A query or pattern the planner cannot see ($1 of a generic plan, a plpgsql
 * variable, an expression of them) cannot be checked at plan time as a
 * constant is.  agent._search_arg returns it unchanged, or raises the error
 * the twin avoids (too deep a query; a pattern ending with the escape
 * character or with too many %) from its argument alone: evaluated once
 * before the scan (a one-time condition of the plan) and as the right side
 * of the index condition (computed when the scan starts), it fails before
 * any row is read, so whether it fails says nothing about the rows.
 */

/* agent._search_arg(tsquery) RETURNS tsquery: see above */
Datum
pg_agents_search_arg_tsquery(PG_FUNCTION_ARGS)
{
	TSQuery		q = PG_GETARG_TSQUERY(0);

	if (TsQueryTooDeep(q))
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("text search query is nested too deeply for a search under the allowlist"),
				 errdetail("An agent's search matches a query nested at most %d levels deep.",
						   TS_MATCH_MAX_DEPTH)));
	PG_RETURN_POINTER(q);
}

/* agent._search_arg(text) RETURNS text: see above */
Datum
pg_agents_search_arg_text(PG_FUNCTION_ARGS)
{
	text	   *pat = PG_GETARG_TEXT_PP(0);

	if (LikePatternBad(pat))
	{
		const char *p = VARDATA_ANY(pat);
		int			len = VARSIZE_ANY_EXHDR(pat);

		if (len > 0 && p[len - 1] == '\\')
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_ESCAPE_SEQUENCE),
					 errmsg("LIKE pattern must not end with escape character")));
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("LIKE pattern has too many wildcards for a search under the allowlist"),
				 errdetail("An agent's search takes a pattern with at most %d %% signs.",
						   LIKE_MAX_WILDCARDS)));
	}
	PG_RETURN_TEXT_P(pat);
}

/* agent._search_arg(<type>) */
static Oid
SearchArgFunction(Oid type)
{
	return LookupFuncName(list_make2(makeString("agent"), makeString("_search_arg")),
						  1, &type, true);
}

/*
 * agent._search_arg(arg) over a copy of the expression (of type tsquery or
 * text), or NULL when this installation has no such function.
 */
static Expr *
SearchArgGuard(Expr *arg, Oid type)
{
	Oid			fn = SearchArgFunction(type);

	if (!OidIsValid(fn) || exprType((Node *) arg) != type)
		return NULL;
	return (Expr *) makeFuncExpr(fn, type, list_make1(copyObject(arg)),
								 InvalidOid, exprCollation((Node *) arg), COERCE_EXPLICIT_CALL);
}

/*
 * agent._like_support(internal): planner support of agent.like and
 * agent.ilike: the estimates and btree prefix conditions of LIKE and ILIKE
 * (their own support functions), and ~~ / ~~* as the index condition on an
 * index whose operator family has it (pg_trgm).
 */
Datum
pg_agents_like_support(PG_FUNCTION_ARGS)
{
	Node	   *rawreq = (Node *) PG_GETARG_POINTER(0);
	bool		ci;
	Oid			op;

	if (IsA(rawreq, SupportRequestSelectivity))
		ci = ((SupportRequestSelectivity *) rawreq)->funcid != InvalidOid &&
			strcmp(get_func_name(((SupportRequestSelectivity *) rawreq)->funcid), "ilike") == 0;
	else if (IsA(rawreq, SupportRequestIndexCondition))
		ci = strcmp(get_func_name(((SupportRequestIndexCondition *) rawreq)->funcid), "ilike") == 0;
	else
		PG_RETURN_POINTER(NULL);

	if (IsA(rawreq, SupportRequestIndexCondition))
	{
		SupportRequestIndexCondition *req = (SupportRequestIndexCondition *) rawreq;
		FuncExpr   *fe = (FuncExpr *) req->node;
		Node	   *pattern;

		if (!IsA(fe, FuncExpr) || list_length(fe->args) != 2 || req->indexarg != 0)
			PG_RETURN_POINTER(NULL);
		pattern = lsecond(fe->args);
		op = LookupOperName(NULL, list_make2(makeString("pg_catalog"), makeString(ci ? "~~*" : "~~")),
							TEXTOID, TEXTOID, true, -1);
		if (OidIsValid(op) && op_in_opfamily(op, req->opfamily))
		{
			/*
			 * The index's recheck runs ~~ itself on the candidates: a
			 * constant pattern known not to make it fail, or any other
			 * through agent._search_arg (which raises on a pattern that
			 * could, when the scan starts, whatever the rows).
			 */
			Expr	   *arg = NULL;

			if (!IsA(pattern, Const))
				arg = SearchArgGuard((Expr *) pattern, TEXTOID);
			else if (!((Const *) pattern)->constisnull &&
					 !LikePatternBad(DatumGetTextPP(((Const *) pattern)->constvalue)))
				arg = (Expr *) copyObject(pattern);
			if (arg != NULL)
			{
				req->lossy = false;
				PG_RETURN_POINTER(list_make1(make_opclause(op, BOOLOID, false,
														   (Expr *) copyObject(linitial(fe->args)),
														   arg, InvalidOid, fe->inputcollid)));
			}
		}
	}
	/* a btree prefix (lossy: the match stays as a filter), and the estimates */
	PG_RETURN_DATUM(DirectFunctionCall1(ci ? texticlike_support : textlike_support,
										PointerGetDatum(rawreq)));
}

/* ------------------------------------------------------------------------
 * The query's own @@, LIKE and ILIKE under the allowlist
 * ------------------------------------------------------------------------
 *
 * An application that writes WHERE tsv @@ q (not agent.ts_match) gets, as an
 * agent, the policy first: @@ is not leakproof, so it may neither become an
 * index condition nor run before the policy, and the only plan left probes
 * the id index with the whole readable set (one probe per grant, whatever
 * the term).  The rows @@ would see before the policy are not the issue when
 * its arguments cannot make it fail: agent.ts_match, agent.like and
 * agent.ilike are these same matches, leakproof.  So once the planner has
 * built a relation's paths, a condition of the query on a relation that
 * carries an allowlist policy (agent._allowlist_has among its conditions)
 * that is
 *
 *		tsvector @@ <constant tsquery>		(not nested deeper than ts_match takes)
 *		text ~~ <constant pattern>		(a pattern like_call does not refuse)
 *		text ~~* <constant pattern>
 *
 * is replaced by its leakproof twin (the same answer on every row, since the
 * constant is one the twin does not refuse), marked leakproof, and the
 * index paths are built again: the planner then chooses by cost between
 * the readable set as an index condition (few grants) and the text index
 * with the readable set as a filter (a selective term), exactly as for a
 * query written with agent.ts_match.  A condition whose other side is not
 * a constant, or whose twin would still read a non-leakproof function,
 * stays as it was (and after the policy).
 */
static set_rel_pathlist_hook_type prev_set_rel_pathlist_hook = NULL;

/* agent.<name>(a, b), InvalidOid when this installation has none */
static Oid
AgentFunction2(const char *name, Oid a, Oid b)
{
	Oid			argtypes[2] = {a, b};

	return LookupFuncName(list_make2(makeString("agent"), makeString(pstrdup(name))),
						  2, argtypes, true);
}

/* whether the expression calls agent._allowlist_has (the policy's test) */
static bool
CallsAllowlistHas(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, FuncExpr))
	{
		Oid			fn = ((FuncExpr *) node)->funcid;
		char	   *name = get_func_name(fn);

		if (name != NULL && strcmp(name, "_allowlist_has") == 0 &&
			get_func_namespace(fn) == get_namespace_oid("agent", true))
			return true;
	}
	return expression_tree_walker(node, CallsAllowlistHas, context);
}

/*
 * Whether the right side of a condition, not a constant, is one the twin may
 * take with a guard: it reads no column (of this relation or any other) and
 * nothing volatile, runs no subplan and returns no set, so that it is a value
 * fixed for the scan ($1 of a generic plan, a plpgsql variable, an initplan's
 * result, an expression of them) which agent._search_arg can check once
 * before the scan.
 */
static bool
SearchArgFixed(Node *arg, Oid type)
{
	return exprType(arg) == type && !contain_var_clause(arg) &&
		!contain_volatile_functions(arg) && !contain_subplans(arg) &&
		!expression_returns_set(arg) && !contain_agg_clause(arg) &&
		!contain_window_function(arg);
}

/*
 * The leakproof twin of a condition (see above), or NULL: agent.ts_match,
 * agent.like or agent.ilike over the same arguments.  When the right side is
 * not a constant, *guard is set to the one-time condition that checks it
 * before the scan: agent._search_arg(<right side>) IS NOT NULL.
 */
static Expr *
LeakproofTwin(Expr *clause, Expr **guard)
{
	OpExpr	   *op = (OpExpr *) clause;
	Node	   *right;
	Const	   *c = NULL;
	Oid			fn;
	Oid			twin;
	Oid			argtype;

	*guard = NULL;
	if (!IsA(op, OpExpr) || list_length(op->args) != 2)
		return NULL;
	right = lsecond(op->args);
	if (IsA(right, Const))
	{
		c = (Const *) right;
		if (c->constisnull)
			return NULL;
	}
	fn = OidIsValid(op->opfuncid) ? op->opfuncid : get_opcode(op->opno);
	switch (fn)
	{
		case F_TS_MATCH_VQ:
			if (c != NULL && TsQueryTooDeep(DatumGetTSQuery(c->constvalue)))
				return NULL;
			twin = AgentFunction2("ts_match", TSVECTOROID, TSQUERYOID);
			argtype = TSQUERYOID;
			break;
		case F_TEXTLIKE:
		case F_TEXTICLIKE:
			if (c != NULL && LikePatternBad(DatumGetTextPP(c->constvalue)))
				return NULL;
			twin = AgentFunction2(fn == F_TEXTLIKE ? "like" : "ilike", TEXTOID, TEXTOID);
			argtype = TEXTOID;
			break;
		default:
			return NULL;
	}
	if (!OidIsValid(twin) || !get_func_leakproof(twin))
		return NULL;
	if (c == NULL)
	{
		NullTest   *nt;
		Expr	   *arg;

		if (!SearchArgFixed(right, argtype) ||
			(arg = SearchArgGuard((Expr *) right, argtype)) == NULL)
			return NULL;
		nt = makeNode(NullTest);
		nt->arg = arg;
		nt->nulltesttype = IS_NOT_NULL;
		nt->argisrow = false;
		nt->location = -1;
		*guard = (Expr *) nt;
	}
	return (Expr *) makeFuncExpr(twin, BOOLOID, copyObject(op->args), InvalidOid,
								 op->inputcollid, COERCE_EXPLICIT_CALL);
}

/*
 * Whether an unparameterized path scans by an index condition taken from one
 * of the restrictions in rinfos (a plain or bitmap index scan).
 */
static bool
PathUsesClauses(Path *path, List *rinfos)
{
	ListCell   *lc;

	switch (nodeTag(path))
	{
		case T_IndexPath:
			foreach(lc, ((IndexPath *) path)->indexclauses)
			{
				if (list_member_ptr(rinfos, lfirst_node(IndexClause, lc)->rinfo))
					return true;
			}
			return false;
		case T_BitmapHeapPath:
			return PathUsesClauses(((BitmapHeapPath *) path)->bitmapqual, rinfos);
		case T_BitmapAndPath:
			foreach(lc, ((BitmapAndPath *) path)->bitmapquals)
			{
				if (PathUsesClauses((Path *) lfirst(lc), rinfos))
					return true;
			}
			return false;
		case T_BitmapOrPath:
			foreach(lc, ((BitmapOrPath *) path)->bitmapquals)
			{
				if (PathUsesClauses((Path *) lfirst(lc), rinfos))
					return true;
			}
			return false;
		default:
			return false;
	}
}

/*
 * set_rel_pathlist_hook: the twins of a relation's conditions under an
 * allowlist policy, and its index paths again when there are any.
 */
static void
AllowlistRelPathlist(PlannerInfo *root, RelOptInfo *rel, Index rti, RangeTblEntry *rte)
{
	ListCell   *lc;
	bool		policy = false;
	bool		changed = false;
	List	   *guards = NIL;
	List	   *policy_ris = NIL;
	List	   *guarded_ris = NIL;
	ListCell   *lc2;

	if (prev_set_rel_pathlist_hook)
		prev_set_rel_pathlist_hook(root, rel, rti, rte);
	/*
	 * A plain scan of one table or materialized view only: not the parent of
	 * an inheritance tree (its children come here themselves), not under
	 * TABLESAMPLE (whose paths are not index paths), not a relation proven
	 * empty.
	 */
	if (rte->rtekind != RTE_RELATION || rel->rtekind != RTE_RELATION || rte->inh ||
		rte->tablesample != NULL ||
		(rte->relkind != RELKIND_RELATION && rte->relkind != RELKIND_MATVIEW) ||
		(rel->reloptkind != RELOPT_BASEREL && rel->reloptkind != RELOPT_OTHER_MEMBER_REL) ||
		rel->baserestrictinfo == NIL || IS_DUMMY_REL(rel) ||
		!GucActorIsAgent(pg_agents_actor))
		return;
	foreach(lc, rel->baserestrictinfo)
	{
		RestrictInfo *ri = lfirst_node(RestrictInfo, lc);

		if (ri->security_level == rel->baserestrict_min_security &&
			CallsAllowlistHas((Node *) ri->clause, NULL))
		{
			policy = true;
			policy_ris = lappend(policy_ris, ri);
		}
	}
	if (!policy)
		return;
	foreach(lc, rel->baserestrictinfo)
	{
		RestrictInfo *ri = lfirst_node(RestrictInfo, lc);
		Expr	   *twin;
		Expr	   *guard;

		if (ri->leakproof || ri->security_level <= rel->baserestrict_min_security ||
			ri->orclause != NULL || ri->pseudoconstant)
			continue;
		twin = LeakproofTwin(ri->clause, &guard);
		if (twin == NULL || contain_leaked_vars((Node *) twin))
			continue;
		if (guard != NULL)
		{
			guards = lappend(guards, guard);
			guarded_ris = lappend(guarded_ris, ri);
		}
		ri->clause = twin;
		ri->leakproof = true;
		/*
		 * Costed again as the twin (cost_qual_eval kept the operator's): the
		 * plan's filter then orders it as it orders agent.ts_match written
		 * by hand, after the readable set's bisection, so that a candidate
		 * of the text index that is not readable costs a bisection, not a
		 * match.
		 */
		ri->eval_cost.startup = -1;
		changed = true;
	}
	/*
	 * The guards of the right sides that are not constants, as one-time
	 * conditions (pseudoconstant: a Result above whichever scan is chosen
	 * evaluates them before the scan's first row), so that a query or
	 * pattern the twin would refuse raises before any row is read, and
	 * never reaches the index's recheck.
	 */
	foreach(lc, guards)
	{
		RestrictInfo *gri;

#if PG_VERSION_NUM >= 160000
		gri = make_restrictinfo(root, (Expr *) lfirst(lc), true, false, false, true, 0,
								rel->relids, NULL, NULL);
#else
		gri = make_restrictinfo(root, (Expr *) lfirst(lc), true, false, true, 0,
								rel->relids, NULL, NULL);
#endif
		rel->baserestrictinfo = lappend(rel->baserestrictinfo, gri);
		root->hasPseudoConstantQuals = true;
		/* an index scan takes its conditions from its index's list */
		foreach(lc2, rel->indexlist)
		{
			IndexOptInfo *index = (IndexOptInfo *) lfirst(lc2);

			if (index->indrestrictinfo != rel->baserestrictinfo)
				index->indrestrictinfo = lappend(index->indrestrictinfo, gri);
		}
	}
	if (changed && rel->indexlist != NIL)
	{
		List	   *probes = NIL;
		bool		text_path = false;

		/*
		 * A generic plan (a guarded twin) is made once for every value of
		 * its argument, which the planner estimates at a default (0.5 % of
		 * the rows for @@): a plan probing the id index with every grant
		 * then costs one probe per grant even for a term that matches
		 * nothing (25-1700 times the unrestricted query), while starting
		 * from the text index costs about what the unrestricted query costs
		 * (it reads the same candidates, and tests each against the
		 * readable set by bisection).  So the probes of the readable set
		 * (unparameterized) are set aside while the index paths are built
		 * again without them, and come back only if no path starts from the
		 * twin's index condition: the plan then stays within the
		 * unrestricted query's cost whatever the value.
		 */
		if (guarded_ris != NIL)
		{
			foreach(lc, rel->pathlist)
			{
				Path	   *path = (Path *) lfirst(lc);

				if (path->param_info == NULL && PathUsesClauses(path, policy_ris))
				{
					probes = lappend(probes, path);
					rel->pathlist = foreach_delete_current(rel->pathlist, lc);
				}
			}
		}
		if (guarded_ris == NIL)
			create_index_paths(root, rel);
		else
		{
			/*
			 * The index paths without the policy as an index condition (it
			 * stays the scan's filter: the plan takes its conditions from
			 * baserestrictinfo), so that no probe of the readable set
			 * dominates the text index's path and drops it.
			 */
			List	   *saved = NIL;

			foreach(lc, rel->indexlist)
			{
				IndexOptInfo *index = (IndexOptInfo *) lfirst(lc);
				List	   *l = NIL;

				saved = lappend(saved, index->indrestrictinfo);
				foreach(lc2, index->indrestrictinfo)
				{
					RestrictInfo *ri = lfirst_node(RestrictInfo, lc2);

					if (list_member_ptr(policy_ris, ri))
					{
						/*
						 * a copy that no index matches (pseudoconstant), whose
						 * columns still count (no index-only scan without id)
						 */
						RestrictInfo *c = makeNode(RestrictInfo);

						memcpy(c, ri, sizeof(RestrictInfo));
						c->pseudoconstant = true;
						ri = c;
					}
					l = lappend(l, ri);
				}
				index->indrestrictinfo = l;
			}
			create_index_paths(root, rel);
			forboth(lc, rel->indexlist, lc2, saved)
				((IndexOptInfo *) lfirst(lc))->indrestrictinfo = (List *) lfirst(lc2);
			foreach(lc, rel->pathlist)
			{
				Path	   *path = (Path *) lfirst(lc);

				if (path->param_info == NULL && PathUsesClauses(path, guarded_ris))
					text_path = true;
			}
			if (!text_path)
			{
				foreach(lc, probes)
					add_path(rel, (Path *) lfirst(lc));
			}
		}
	}
}

/* _PG_init: the hook above */
void
AllowlistInitHooks(void)
{
	prev_set_rel_pathlist_hook = set_rel_pathlist_hook;
	set_rel_pathlist_hook = AllowlistRelPathlist;
}
