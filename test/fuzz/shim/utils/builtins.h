/* utils/builtins.h for the fuzz harnesses */
#ifndef BUILTINS_H
#define BUILTINS_H
#include "fmgr.h"
struct varlena;
typedef struct varlena text;
extern char *text_to_cstring(const text *t);
extern text *cstring_to_text(const char *s);
#endif
