/*-------------------------------------------------------------------------
 *
 * run_rollup.c
 *		The latency histograms of agent.run_stats (docs/operations.md,
 *		"run_stats at a year of history").
 *
 * run_stats reports p50/p95 of duration, queue wait and LLM latency as a
 * histogram quantile, computed the same way whether the values come from
 * agent.runs or from the rollup of agent.run_rollup, so that both give
 * exactly the same figures.  A latency in ms falls into bucket 0 below 1 ms,
 * else 1 + floor(32 * log2(ms)) (32 buckets per doubling, at most
 * PGA_HIST_BUCKETS - 1: about 2^40 ms and more).  A histogram is a bigint[]
 * of (bucket, count) pairs, flattened, buckets ascending, counts > 0.
 *
 *   agent._hist(ms float8)        aggregate: the histogram of the values
 *   agent._hist_merge(h bigint[]) aggregate: the sum of histograms
 *   agent._hist_quantile(h, q)    the value of the bucket holding the
 *                                 ceil(q * n)-th value (nearest rank): 0 for
 *                                 bucket 0, else 2^((b - 0.5) / 32), the
 *                                 geometric middle of the bucket (within
 *                                 1.1 % of every value of it)
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#define PGA_HIST_PER_DOUBLING 32
#define PGA_HIST_BUCKETS (1 + PGA_HIST_PER_DOUBLING * 40 + 1)

typedef struct PgaHist
{
	int64		counts[PGA_HIST_BUCKETS];
	int64		n;
} PgaHist;

static int
hist_bucket(double ms)
{
	double		b;

	if (!(ms >= 1.0))			/* below 1 ms (and NaN) */
		return 0;
	b = 1.0 + floor(PGA_HIST_PER_DOUBLING * log2(ms));
	if (b >= PGA_HIST_BUCKETS - 1)
		return PGA_HIST_BUCKETS - 1;
	return (int) b;
}

static PgaHist *
hist_state(FunctionCallInfo fcinfo)
{
	MemoryContext aggcontext;

	if (!AggCheckCallContext(fcinfo, &aggcontext))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("histogram transition function called in a non-aggregate context")));
	if (!PG_ARGISNULL(0))
		return (PgaHist *) PG_GETARG_POINTER(0);
	return (PgaHist *) MemoryContextAllocZero(aggcontext, sizeof(PgaHist));
}

PG_FUNCTION_INFO_V1(pg_agents_hist_add);
Datum
pg_agents_hist_add(PG_FUNCTION_ARGS)
{
	PgaHist    *h = hist_state(fcinfo);

	if (!PG_ARGISNULL(1))
	{
		double		ms = PG_GETARG_FLOAT8(1);

		if (!isnan(ms))
		{
			h->counts[hist_bucket(ms)]++;
			h->n++;
		}
	}
	PG_RETURN_POINTER(h);
}

/* the pairs of a histogram array, checked */
static int64 *
hist_pairs(ArrayType *a, int *npairs)
{
	int			n;

	if (ARR_NDIM(a) == 0)
	{
		*npairs = 0;
		return NULL;
	}
	if (ARR_NDIM(a) != 1 || ARR_HASNULL(a) || ARR_ELEMTYPE(a) != INT8OID)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid histogram"),
				 errdetail("A histogram is a one-dimensional bigint array of (bucket, count) pairs without NULLs.")));
	n = ArrayGetNItems(ARR_NDIM(a), ARR_DIMS(a));
	if (n % 2 != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid histogram"),
				 errdetail("A histogram has an even number of elements: (bucket, count) pairs.")));
	*npairs = n / 2;
	return (int64 *) ARR_DATA_PTR(a);
}

PG_FUNCTION_INFO_V1(pg_agents_hist_merge_add);
Datum
pg_agents_hist_merge_add(PG_FUNCTION_ARGS)
{
	PgaHist    *h = hist_state(fcinfo);

	if (!PG_ARGISNULL(1))
	{
		ArrayType  *a = PG_GETARG_ARRAYTYPE_P(1);
		int			np;
		int64	   *p = hist_pairs(a, &np);

		for (int i = 0; i < np; i++)
		{
			int64		b = p[2 * i];
			int64		c = p[2 * i + 1];

			if (b < 0 || b >= PGA_HIST_BUCKETS || c < 0)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("invalid histogram bucket %lld or count %lld", (long long) b, (long long) c)));
			h->counts[b] += c;
			h->n += c;
		}
	}
	PG_RETURN_POINTER(h);
}

PG_FUNCTION_INFO_V1(pg_agents_hist_final);
Datum
pg_agents_hist_final(PG_FUNCTION_ARGS)
{
	PgaHist    *h;
	Datum	   *elems;
	int			k = 0;
	int			nb = 0;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	h = (PgaHist *) PG_GETARG_POINTER(0);
	if (h->n == 0)
		PG_RETURN_NULL();
	for (int b = 0; b < PGA_HIST_BUCKETS; b++)
		if (h->counts[b] > 0)
			nb++;
	elems = palloc(sizeof(Datum) * 2 * nb);
	for (int b = 0; b < PGA_HIST_BUCKETS; b++)
	{
		if (h->counts[b] > 0)
		{
			elems[k++] = Int64GetDatum((int64) b);
			elems[k++] = Int64GetDatum(h->counts[b]);
		}
	}
	PG_RETURN_ARRAYTYPE_P(construct_array(elems, k, INT8OID, sizeof(int64), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}

PG_FUNCTION_INFO_V1(pg_agents_hist_quantile);
Datum
pg_agents_hist_quantile(PG_FUNCTION_ARGS)
{
	ArrayType  *a = PG_GETARG_ARRAYTYPE_P(0);
	double		q = PG_GETARG_FLOAT8(1);
	int			np;
	int64	   *p;
	int64		n = 0;
	int64		rank;
	int64		cum = 0;

	if (isnan(q) || q < 0 || q > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("quantile %g is not between 0 and 1", q)));
	p = hist_pairs(a, &np);
	for (int i = 0; i < np; i++)
		n += p[2 * i + 1];
	if (n <= 0)
		PG_RETURN_NULL();
	rank = (int64) ceil(q * (double) n);
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	for (int i = 0; i < np; i++)
	{
		cum += p[2 * i + 1];
		if (cum >= rank)
		{
			int64		b = p[2 * i];

			if (b <= 0)
				PG_RETURN_FLOAT8(0.0);
			PG_RETURN_FLOAT8(pow(2.0, ((double) b - 0.5) / PGA_HIST_PER_DOUBLING));
		}
	}
	PG_RETURN_NULL();				/* not reached */
}
