#!/usr/bin/env bash
# Prints docs/settings.md: every pg_agents.* setting as pg_settings of a server
# with the extension's library loaded shows it (name, default, context, what
# it does).  tools/settings_doc.sh > docs/settings.md, against the test
# cluster (tools/cluster.sh start; . its env file); test/t/041_settings_doc.t
# fails when the page and pg_settings differ.
set -euo pipefail
cat <<'HEAD'
# Settings

Every `pg_agents.*` setting, generated from `pg_settings` by
`tools/settings_doc.sh` (test/t/041_settings_doc.t fails when they differ).
Context: `postmaster` needs a restart, `sighup` a reload
(`SELECT pg_reload_conf()`), `superuser` is set by a superuser (also per
session or per database), `user` by anyone. Units are PostgreSQL's
(`SHOW` prints the value with its unit).

| setting | default | unit | context | meaning |
| --- | --- | --- | --- | --- |
HEAD
psql -XAtq -d "${1:-postgres}" -v ON_ERROR_STOP=1 <<'SQL'
SELECT format('| `%s` | %s | %s | %s | %s |', name,
              CASE WHEN coalesce(boot_val, '') = '' THEN '''''' ELSE '`' || boot_val || '`' END,
              coalesce(unit, ''), context,
              replace(short_desc || coalesce(' ' || extra_desc, ''), '|', '\|'))
  FROM pg_settings WHERE name LIKE 'pg\_agents.%' ORDER BY name
SQL
# the one setting pg_settings never lists (GUC_NO_SHOW_ALL: its value is
# superuser-only and never shown)
cat <<'TAIL'

Not in `pg_settings` (hidden from it on purpose, so that no view shows it):

| setting | default | unit | context | meaning |
| --- | --- | --- | --- | --- |
| `pg_agents.llm_api_key` | '' |  | superuser | API key of the default provider; superuser only, never shown to others, never in steps, logs or audit (prefer a provider with a `${secret:NAME}` key, docs/worker.md). |
TAIL
