/* lib/stringinfo.h for the fuzz harnesses (palloc'd, as the server's) */
#ifndef STRINGINFO_H
#define STRINGINFO_H
typedef struct StringInfoData
{
	char	   *data;
	int			len;
	int			maxlen;
	int			cursor;
} StringInfoData;
typedef StringInfoData *StringInfo;
extern StringInfo makeStringInfo(void);
extern void initStringInfo(StringInfo s);
extern void resetStringInfo(StringInfo s);
extern void appendStringInfo(StringInfo s, const char *fmt,...) __attribute__((format(printf, 2, 3)));
extern void appendStringInfoString(StringInfo s, const char *str);
extern void appendStringInfoChar(StringInfo s, char c);
extern void appendBinaryStringInfo(StringInfo s, const void *data, int len);
extern void enlargeStringInfo(StringInfo s, int needed);
#endif
