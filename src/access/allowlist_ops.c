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
#include "optimizer/paths.h"
#include "optimizer/plancat.h"
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
		req->lossy = false;
		PG_RETURN_POINTER(list_make1(make_opclause(op, BOOLOID, false,
												   (Expr *) copyObject(linitial(fe->args)),
												   (Expr *) copyObject(query),
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
			 * The index's recheck runs ~~ itself on the candidates: only a
			 * constant pattern, known not to make it fail.
			 */
			if (!IsA(pattern, Const) || ((Const *) pattern)->constisnull ||
				LikePatternBad(DatumGetTextPP(((Const *) pattern)->constvalue)))
				PG_RETURN_POINTER(NULL);
			req->lossy = false;
			PG_RETURN_POINTER(list_make1(make_opclause(op, BOOLOID, false,
													   (Expr *) copyObject(linitial(fe->args)),
													   (Expr *) copyObject(pattern),
													   InvalidOid, fe->inputcollid)));
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
 * The leakproof twin of a condition (see above), or NULL: agent.ts_match,
 * agent.like or agent.ilike over the same arguments.
 */
static Expr *
LeakproofTwin(Expr *clause)
{
	OpExpr	   *op = (OpExpr *) clause;
	Const	   *c;
	Oid			fn;
	Oid			twin;

	if (!IsA(op, OpExpr) || list_length(op->args) != 2 || !IsA(lsecond(op->args), Const))
		return NULL;
	c = (Const *) lsecond(op->args);
	if (c->constisnull)
		return NULL;
	fn = OidIsValid(op->opfuncid) ? op->opfuncid : get_opcode(op->opno);
	switch (fn)
	{
		case F_TS_MATCH_VQ:
			if (TsQueryTooDeep(DatumGetTSQuery(c->constvalue)))
				return NULL;
			twin = AgentFunction2("ts_match", TSVECTOROID, TSQUERYOID);
			break;
		case F_TEXTLIKE:
		case F_TEXTICLIKE:
			if (LikePatternBad(DatumGetTextPP(c->constvalue)))
				return NULL;
			twin = AgentFunction2(fn == F_TEXTLIKE ? "like" : "ilike", TEXTOID, TEXTOID);
			break;
		default:
			return NULL;
	}
	if (!OidIsValid(twin) || !get_func_leakproof(twin))
		return NULL;
	return (Expr *) makeFuncExpr(twin, BOOLOID, copyObject(op->args), InvalidOid,
								 op->inputcollid, COERCE_EXPLICIT_CALL);
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
			break;
		}
	}
	if (!policy)
		return;
	foreach(lc, rel->baserestrictinfo)
	{
		RestrictInfo *ri = lfirst_node(RestrictInfo, lc);
		Expr	   *twin;

		if (ri->leakproof || ri->security_level <= rel->baserestrict_min_security ||
			ri->orclause != NULL)
			continue;
		twin = LeakproofTwin(ri->clause);
		if (twin == NULL || contain_leaked_vars((Node *) twin))
			continue;
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
	if (changed && rel->indexlist != NIL)
		create_index_paths(root, rel);
}

/* _PG_init: the hook above */
void
AllowlistInitHooks(void)
{
	prev_set_rel_pathlist_hook = set_rel_pathlist_hook;
	set_rel_pathlist_hook = AllowlistRelPathlist;
}
