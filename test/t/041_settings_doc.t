#!/usr/bin/env bash
# The settings a DBA pastes from are true (issue 32): docs/settings.md is
# exactly what tools/settings_doc.sh makes from pg_settings (every
# pg_agents.* setting, its default, unit, context and description), and each
# row of README.md's short table names a real setting with its real context.
. "$PG_AGENTS_ENV"
set -u
. "$(dirname "$0")/../fixtures/tap.sh"
root="$(cd "$(dirname "$0")/../.." && pwd)"
plan 3
got=$("$root/tools/settings_doc.sh" "$PGDATABASE" 2>&1)
diff=$(diff <(printf '%s\n' "$got") "$root/docs/settings.md")
is "$diff" "" "docs/settings.md is what pg_settings says (regenerate: tools/settings_doc.sh > docs/settings.md)"
n=$(psql -XAtq -c "SELECT count(*) FROM pg_settings WHERE name LIKE 'pg\_agents.%'")
is "$(grep -c '^| `pg_agents\.' "$root/docs/settings.md")" "$((n + 1))" "docs/settings.md has a row for each of the $n settings and pg_agents.llm_api_key"
bad=
while IFS='|' read -r _ name _ context _; do
    name=$(echo "$name" | tr -d ' `'); context=$(echo "$context" | tr -d ' ')
    real=$(psql -XAtq -c "SELECT context FROM pg_settings WHERE name = '$name'")
    [ "$name" = pg_agents.llm_api_key ] && real=superuser   # hidden from pg_settings
    [ "$real" = "$context" ] || bad+="$name ($context, pg_settings: ${real:-none}) "
done < <(sed -n '/^## Configuration/,/^## /p' "$root/README.md" | grep '^| `pg_agents\.')
is "$bad" "" "every setting of README.md's table exists with the context it says"
done_testing
