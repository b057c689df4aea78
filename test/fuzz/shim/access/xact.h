/* access/xact.h for the fuzz harnesses: never in a transaction */
#ifndef XACT_H
#define XACT_H
extern bool IsTransactionState(void);
#endif
