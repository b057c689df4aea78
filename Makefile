# pg_agents — PGXS build.  `make demo`, `make test`, `make bench` are the
# entry points; see README.md.

EXTENSION   = pg_agents
EXTVERSION  = $(shell sed -n "s/^default_version = '\(.*\)'/\1/p" pg_agents.control)
MODULE_big  = pg_agents

# one folder per module (docs/hacking.md): src/pg_agents.c and src/<module>/*.c
SRCS        = $(sort $(wildcard src/*.c src/*/*.c))
OBJS        = $(SRCS:.c=.o)

# The install script is generated from the ordered parts in sql/src/, so that
# each capability keeps its SQL in its own file.
SQL_PARTS   = $(sort $(wildcard sql/src/*.sql))
INSTALL_built = sql/$(EXTENSION)--$(EXTVERSION).sql
DATA_built  = $(INSTALL_built)
# Upgrade scripts (sql/pg_agents--<old>--<new>.sql, written by hand) and the
# install scripts of released versions (sql/released/), so that an older
# version can still be installed and upgraded.
# The upgrade script into the current version is generated too, from its
# parts in sql/upgrade/<old>--<new>/ (one per area, in name order), followed
# by sql/src/980_labels.sql (the functions' parallel labels) and
# sql/src/990_privileges.sql, the one statement of who may call and read
# what, which install and upgrade both end with.
UPGRADE_FROM = 0.3.0
# A part named NNN_x.include holds the path of a file of sql/src/ that is new
# in this version: that file is written once and goes into both scripts.
UPGRADE_PARTS = $(sort $(wildcard sql/upgrade/$(UPGRADE_FROM)--$(EXTVERSION)/*.sql sql/upgrade/$(UPGRADE_FROM)--$(EXTVERSION)/*.include))
UPGRADE_built = sql/$(EXTENSION)--$(UPGRADE_FROM)--$(EXTVERSION).sql
UPGRADE_TAIL = sql/src/980_labels.sql sql/src/990_privileges.sql
DATA_built += $(UPGRADE_built)
DATA        = $(filter-out $(DATA_built),$(wildcard sql/$(EXTENSION)--*--*.sql)) \
              $(wildcard sql/released/$(EXTENSION)--*.sql)

# The PostgreSQL to build for: PG_MAJOR=17 (or PG_CONFIG=...) to choose, else
# the newest one whose server development files are installed
# (tools/pg_version.sh).
ifndef PG_CONFIG
PG_CONFIG := $(or $(shell PG_MAJOR=$(PG_MAJOR) tools/pg_version.sh pg_config 2>/dev/null),$(if $(PG_MAJOR),/usr/lib/postgresql/$(PG_MAJOR)/bin/pg_config,pg_config))
endif
PG_CPPFLAGS = -I$(srcdir)/src -DPG_AGENTS_VERSION='"$(EXTVERSION)"' -std=gnu99 -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers -Wno-sign-compare
# GCC 15 (Debian forky) warns about char arrays initialised from a string
# without room for its NUL, which is how SPI's nulls arrays ("  ") are written.
NO_UNTERMINATED_WARNING := $(shell $(CC) -Werror -Wunterminated-string-initialization -E -x c /dev/null >/dev/null 2>&1 && echo -Wno-unterminated-string-initialization)
PG_CPPFLAGS += $(NO_UNTERMINATED_WARNING)
# WERROR=1 (CI: .ci/run) turns every warning into an error, in the extension
# and in bin/pg_agents_mcp.
WERROR_FLAG = $(if $(filter 1,$(WERROR)),-Werror)
PG_CPPFLAGS += $(WERROR_FLAG)
# libxml2's HTML parser reduces the pages web_fetch reads to text (src/tools/tools_web.c)
XML2_CFLAGS := $(shell pkg-config --cflags libxml-2.0 2>/dev/null)
XML2_LIBS   := $(or $(shell pkg-config --libs libxml-2.0 2>/dev/null),-lxml2)
PG_CPPFLAGS += $(XML2_CFLAGS)
SHLIB_LINK  = -lcurl -ljansson -lcrypto $(XML2_LIBS)
EXTRA_CLEAN = $(DATA_built) bin/pg_agents_mcp valgrind.out

# The Prometheus exporter's queries file, its alert rules and a Grafana
# dashboard (docs/monitoring.md), installed beside the extension's docs
# ($(docdir)/extension/ with `make install`, and so in the .deb).
DOCS        = monitoring/pg_agents_queries.yaml monitoring/alerts.yml monitoring/grafana_dashboard.json

# pg_regress: the inputs in test/sql, the expected outputs in the top-level
# expected/ (pg_cron's layout), the results in results/.  pg_regress looks for
# an expected file in <outputdir>/expected before <inputdir>/expected (and,
# on 16+, --expecteddir), so --inputdir=test with the default --outputdir=.
# serves 15, 17 and 18 alike.  `make installcheck` runs the suite on an
# installed server (docs/hacking.md: shared_preload_libraries =
# 'pg_agents,pg_cron' and cron.database_name = 'pg_agents_regress'); `make
# test` runs the same files on its private cluster (tools/run_tests.sh).
REGRESS      = $(sort $(basename $(notdir $(wildcard test/sql/*.sql))))
# The database is made fresh before the run (REGRESS_PREP) rather than by
# pg_regress, which cannot drop it while pg_cron's launcher is connected.
REGRESS_OPTS = --inputdir=test --use-existing
REGRESS_PREP = installcheck-db
# isolationtester specs (interleavings of sessions, step by step): the specs
# in test/isolation/specs, the expected outputs in test/isolation/expected,
# the results in output_iso/.  pg_isolation_regress makes their database
# fresh with the extension in it (--load-extension); it is not the one the
# worker serves (pg_agents.database), so the worker claims no run of theirs.
ISOLATION      = $(sort $(basename $(notdir $(wildcard test/isolation/specs/*.spec))))
ISOLATION_OPTS = --inputdir=test/isolation --load-extension=pg_agents

# JIT bitcode is not needed and would require clang on the build machine.
override with_llvm = no

PGXS := $(shell $(PG_CONFIG) --pgxs 2>/dev/null)
ifneq ($(PGXS),)
include $(PGXS)
# the database pg_regress creates for installcheck: the name make test's
# cluster uses too (expected/worker_settings.out shows it); after the include,
# which sets contrib_regression
CONTRIB_TESTDB = pg_agents_regress
ISOLATION_TESTDB = pg_agents_isolation

.PHONY: installcheck-db
installcheck-db:
	'$(bindir)/psql' -X -q -v ON_ERROR_STOP=1 -d postgres \
	    -c 'DROP DATABASE IF EXISTS $(CONTRIB_TESTDB) WITH (FORCE)' -c 'CREATE DATABASE $(CONTRIB_TESTDB)'
	'$(bindir)/psql' -X -q -v ON_ERROR_STOP=1 -d $(CONTRIB_TESTDB) \
	    -c 'CREATE EXTENSION pg_cron' -c 'CREATE EXTENSION pg_agents'
else
# Before `make deps` has run on a fresh machine there is no PGXS yet: the
# entry points below install it first and then call make again.
all:
	@echo "pg_agents: PostgreSQL server development files are missing ($(PG_CONFIG)); run 'make deps' first (make test and make demo do it for you)" >&2; exit 1
endif

# Short compiler lines ("  CC src/audit/audit_writer.c"); V=1 shows the whole commands.
ifneq ($(V),1)
Q = @
MAKEFLAGS += --silent
%.o: %.c
	@echo "  CC      $<"
	$(Q)$(COMPILE.c) -o $@ $<
endif

# A line `\ir PATH` of a part (psql's include, PATH relative to the part)
# stands for the file it names: each function or view that install and
# upgrade both define is written once, in sql/functions/ or sql/views/, and
# included by both (docs/hacking.md, "SQL written once").  SQL_EXPAND prints
# a file with its includes expanded (recursively), so that the generated
# scripts stay plain SQL; a missing file fails the build.
SQL_ONCE    = $(wildcard sql/functions/*.sql sql/views/*.sql)
SQL_EXPAND  = awk 'function out(f, d, l, p, r) { d = f; sub(/[^\/]*$$/, "", d); \
	while ((r = (getline l < f)) > 0) { \
	  if (l ~ /^\\ir[ \t]/) { p = l; sub(/^\\ir[ \t]+/, "", p); sub(/[ \t\r]+$$/, "", p); \
	    if (p !~ /^\//) p = d p; \
	    if ((getline l < p) < 0) { print "make: " f ": \\ir names no file: " p > "/dev/stderr"; exit 1 } \
	    close(p); out(p) } \
	  else print l } \
	if (r < 0) { print "make: cannot read " f > "/dev/stderr"; exit 1 } close(f) } \
	BEGIN { for (i = 1; i < ARGC; i++) out(ARGV[i]); exit 0 }'

$(INSTALL_built): $(SQL_PARTS) $(SQL_ONCE) sql/src pg_agents.control
	@{ echo "-- pg_agents $(EXTVERSION): generated from sql/src/*.sql by make; do not edit."; \
	   printf '%s\n' '\echo Use "CREATE EXTENSION pg_agents" to load this file. \quit'; \
	   for f in $(SQL_PARTS); do echo; echo "-- ---- $$f ----"; $(SQL_EXPAND) $$f || exit 1; done; } > $@ || { rm -f $@; exit 1; }

$(UPGRADE_built): $(UPGRADE_PARTS) sql/upgrade/$(UPGRADE_FROM)--$(EXTVERSION) $(UPGRADE_TAIL) pg_agents.control $(SQL_PARTS) $(SQL_ONCE)
	@{ echo "-- pg_agents $(UPGRADE_FROM) -> $(EXTVERSION): generated from sql/upgrade/$(UPGRADE_FROM)--$(EXTVERSION)/*.sql, sql/src/980_labels.sql and sql/src/990_privileges.sql by make; do not edit."; \
	   printf '%s\n' '\echo Use "ALTER EXTENSION pg_agents UPDATE" to load this file. \quit'; \
	   for f in $(UPGRADE_PARTS) $(UPGRADE_TAIL); do \
	     case $$f in *.include) src=$$(cat $$f); [ -f "$$src" ] || { echo "$$f names no file: $$src" >&2; exit 1; }; \
	       echo; echo "-- ---- $$f: $$src ----"; $(SQL_EXPAND) "$$src" || exit 1 ;; \
	     *) echo; echo "-- ---- $$f ----"; $(SQL_EXPAND) $$f || exit 1 ;; esac; done; } > $@ || { rm -f $@; exit 1; }

all: $(DATA_built)

# The MCP probe: the extension's own client (src/mcp/mcp_transport.c,
# mcp_protocol.c, mcp_async.c) on the command line.
MCP_CLIENT_SRCS = src/mcp/mcp_transport.c src/mcp/mcp_protocol.c src/mcp/mcp_async.c
all: bin/pg_agents_mcp
bin/pg_agents_mcp: tools/pg_agents_mcp.c $(MCP_CLIENT_SRCS) src/mcp/mcp.h src/mcp/mcp_int.h src/mcp/mcp_oauth.c src/mcp/mcp_oauth.h src/util/jansson_prelude.h src/mcp/http_easy.h pg_agents.control
	@mkdir -p bin
	$(if $(Q),@echo "  CC      $@")
	$(Q)$(CC) -std=gnu99 -O2 -Wall -Wextra -Wno-unused-parameter $(WERROR_FLAG) -Isrc -DPG_AGENTS_VERSION='"$(EXTVERSION)"' -o $@ tools/pg_agents_mcp.c $(MCP_CLIENT_SRCS) src/mcp/mcp_oauth.c -lcurl -ljansson -lcrypto

.PHONY: deps demo test bench soak check-tools test-matrix deb test-deb valgrind fuzz
deps:
	@tools/deps.sh

test: deps
	@$(MAKE) --no-print-directory all
	@tools/run_tests.sh

# The libFuzzer harnesses of test/fuzz (README.md there), each for
# FUZZ_SECONDS (default 600); make test runs each for about 20 s.
FUZZ_SECONDS ?= 600
fuzz: deps
	@test/fuzz/run.sh --libfuzzer $(FUZZ_SECONDS)

demo: deps
	@$(MAKE) --no-print-directory all
	@tools/demo.sh

bench: deps
	@$(MAKE) --no-print-directory all
	@tools/bench.sh

# the pg_regress and pgTAP suites against a server under valgrind memcheck
# (tools/run_tests.sh with PG_AGENTS_VALGRIND; TESTS=pattern for a part); not
# part of make test
valgrind: deps
	@tools/deps.sh --valgrind
	@$(MAKE) --no-print-directory all
	@PG_AGENTS_VALGRIND=$(CURDIR)/test/valgrind.supp tools/run_tests.sh

# a simulated week under faults in SOAK_MINUTES (default 5), then its
# reconciliation report (docs/soak.md); not part of make test
soak: deps
	@$(MAKE) --no-print-directory all
	@SOAK_MINUTES=$(or $(SOAK_MINUTES),5) tools/soak.sh

# make test on Debian 13 (PostgreSQL 17) and forky (PostgreSQL 18), each in a
# minimal root built with debootstrap (tools/matrix.sh; MATRIX="trixie" for one)
test-matrix:
	@tools/matrix.sh $(MATRIX)

# the Debian package for the installed PostgreSQL (dist/postgresql-NN-pg-agents_*.deb),
# and its test in a fresh root (tools/deb.sh)
deb: deps
	@tools/deps.sh --deb
	@tools/deb.sh build

test-deb: deb
	@tools/deb.sh test
$(OBJS): $(wildcard src/*.h src/*/*.h)
