/* fmgr.h for the fuzz harnesses: SQL-callable functions compile, never run */
#ifndef FMGR_H
#define FMGR_H
typedef struct FunctionCallInfoBaseData *FunctionCallInfo;
#define PG_FUNCTION_ARGS	FunctionCallInfo fcinfo
#define PG_FUNCTION_INFO_V1(f) extern Datum f(PG_FUNCTION_ARGS)
#define PG_GETARG_TEXT_PP(n) ((struct varlena *) ((void) fcinfo, NULL))
#define PG_GETARG_DATUM(n)	((Datum) ((void) fcinfo, 0))
#define PG_RETURN_BOOL(x)	return (Datum) ((x) ? 1 : 0)
#define PG_RETURN_NULL()	return (Datum) 0
#define PG_RETURN_DATUM(x)	return (Datum) (x)
#endif
