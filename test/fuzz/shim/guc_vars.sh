#!/bin/sh
# Prints a C file defining every pg_agents_* setting of src/util/guc.c with its
# default (an initializer that is not a plain constant becomes 0), for the
# fuzz harnesses that link src/ files without the server.
#   guc_vars.sh src/util/guc.c > guc_vars.c
echo '#include <stdbool.h>'
echo '#include <stddef.h>'
sed -n -E 's/^(char|int|bool|double)[[:space:]]+(\*?)[[:space:]]*(pg_agents_[a-z0-9_]+)[[:space:]]*=[[:space:]]*([^;]*);.*$/\1 \2\3 = \4;/p' "$1" |
    awk '{ split($0, a, " = "); v = a[2]; sub(/;$/, "", v);
           if (v ~ /^[-0-9 *+()]+$/ || v == "NULL" || v == "true" || v == "false") print; else print a[1] " = 0;" }'
