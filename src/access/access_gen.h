/*-------------------------------------------------------------------------
 *
 * access_gen.h
 *		The access generation (access_gen.c): which transactions change what
 *		agents may access, for the readable sets kept between statements.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_AGENTS_ACCESS_GEN_H
#define PG_AGENTS_ACCESS_GEN_H

#define PG_AGENTS_ACCESS_INFLIGHT 64

/* what a transaction changed of the access data, row by row (allowlist.c) */
#define PG_AGENTS_ACCESS_ITEMS 8
#define PG_AGENTS_ACCESS_ITEM_LEN 64
#define PGA_CHANGE_AGENT 1		/* an agent as a whole: its row and all its grants */
#define PGA_CHANGE_GRANT 2		/* one grant of an agent on (rtype, rid) */
#define PGA_CHANGE_RESOURCE 3	/* the ACL of one resource (rtype, rid) */
#define PGA_CHANGE_USER 4		/* the groups of one user (rid: the user, rtype: the group) */
#define PGA_CHANGE_AGENT_ROW 5	/* the row of an agent, its id unchanged (read it again) */
typedef struct PgAgentsAccessItem
{
	int			kind;
	int64		agent_id;
	char		rtype[PG_AGENTS_ACCESS_ITEM_LEN];
	char		rid[PG_AGENTS_ACCESS_ITEM_LEN];
} PgAgentsAccessItem;
typedef struct PgAgentsAccessChange
{
	uint64		seq;
	bool		all;			/* not described: everything may have changed */
	int			nitems;
	PgAgentsAccessItem items[PG_AGENTS_ACCESS_ITEMS];
} PgAgentsAccessChange;

extern void AccessNoteChange(void);
extern void AccessNoteItem(const PgAgentsAccessItem *item);
extern bool AccessChangedInXact(void);
extern bool AccessSampleSeq(uint64 *gen, uint64 *pubseq, TransactionId *inflight,
									uint64 *inflight_seq, int *n);
extern bool AccessChangeGet(uint64 seq, PgAgentsAccessChange *out);

/* its part of the shared memory, registered from _PG_init (shmem.h) */
extern void AccessGenShmemRegister(void);

#endif							/* PG_AGENTS_ACCESS_GEN_H */
