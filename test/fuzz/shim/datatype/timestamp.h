/* datatype/timestamp.h for the fuzz harnesses */
#ifndef DATATYPE_TIMESTAMP_H
#define DATATYPE_TIMESTAMP_H
typedef int64 TimestampTz;
#endif
