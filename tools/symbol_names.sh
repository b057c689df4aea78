#!/usr/bin/env bash
# tools/symbol_names.sh: the one-off rename that gave the exported symbols one
# naming scheme (issue 34; docs/hacking.md, "The C modules"): every exported
# function and non-GUC variable is <Module>CamelCase, GUC variables are
# pg_agents_<setting>, SQL-callable functions and background-worker entry
# points keep the names the SQL and the registrations use.
#
#   tools/symbol_names.sh map     print the rename list (old new)
#   tools/symbol_names.sh apply   rename over word boundaries in src/, tools/,
#                                 test/fuzz/ and docs/ (refuses a new name that
#                                 is already a word of the tree or a symbol of
#                                 the postgres binary)
set -euo pipefail
cd "$(dirname "$0")/.."

camel() {   # mcp_client_new -> McpClientNew
    echo "$1" | awk -F_ '{ s = ""; for (i = 1; i <= NF; i++) s = s toupper(substr($i, 1, 1)) substr($i, 2); print s }'
}

map() {
    cat <<'MAP'
PgAgentsAccessOnCitus AccessOnCitus
PgAgentsAccessRelid AccessRelid
PgAgentsSessionWorkspace AccessSessionWorkspace
PgAgentsAccessChangeGet AccessChangeGet
PgAgentsAccessChangedInXact AccessChangedInXact
PgAgentsAccessSampleSeq AccessSampleSeq
PgAgentsNoteAccessChange AccessNoteChange
PgAgentsNoteAccessItem AccessNoteItem
PgAgentsAclResourcesOf AccessAclResourcesOf
PgAgentsAgentState AccessAgentState
PgAgentsAgentVisible AccessAgentIdVisible
PgAgentsReadableIds AccessReadableIds
PgAgentsReadableOne AccessReadableOne
PgAgentsTypeHasParent AccessTypeHasParent
access_queries AccessQueries
access_rels AccessRelations
access_rows_index AccessRowsIndex
access_rows_spi AccessRowsSpi
PgAgentsAuditEvent AuditEvent
pg_agents_audit_as_worker AuditAsWorker
audit_al_attnum AuditLogAttnum
audit_al_relid AuditLogRelid
audit_pend_cxt AuditPendingCxt
PgAgentsCapMemoGet EventsCapMemoGet
PgAgentsCapMemoSet EventsCapMemoSet
PgAgentsDispatch EventsDispatch
PgAgentsEventHasCandidates EventsHasCandidates
PgAgentsEnqueueRun EventsEnqueueRun
PgAgentsCountUnknownWorkspace EventsCountUnknownWorkspace
PgAgentsInitEventStats EventsInitStats
PgAgentsFilterMatches EventsFilterMatches
cron_civil_from_days CronCivilFromDays
cron_days_from_civil CronDaysFromCivil
cron_describe_spec CronDescribeSpec
cron_matches_civil CronMatchesCivil
cron_next_instant CronNextInstant
cron_parse CronParse
PgAgentsInitRateLimitShmem RateInitShmem
PgAgentsInitLauncherHooks RunsInitLauncherHooks
PgAgentsRegisterWorker RunsRegisterWorker
PgAgentsWorkerClaimsStopped RunsWorkerClaimsStopped
PgAgentsWorkerDraining RunsWorkerDraining
PgAgentsWorkerNoteError RunsWorkerNoteError
PgAgentsWorkerNoteMcp RunsWorkerNoteMcp
PgAgentsWorkerPauseSyncBegin RunsWorkerPauseSyncBegin
PgAgentsWorkerPaused RunsWorkerPaused
PgAgentsWorkerSetState RunsWorkerSetState
PgAgentsConfigChanged ConfigChanged
PgAgentsConfigGeneration ConfigGeneration
PgAgentsActorIsAgent GucActorIsAgent
PgAgentsDefineGucs GucDefineAll
PgAgentsEffectiveDelegationDepth GucEffectiveDelegationDepth
PgAgentsRedactJsonb RedactJsonb
PgAgentsRedactPushJsonb RedactPushJsonb
PgAgentsRedactPushString RedactPushString
PgAgentsRedactText RedactText
PgAgentsRedactorInit RedactInit
PgAgentsSensitiveName RedactSensitiveName
PgaCheckIndex RelcheckIndex
PgaCitusCheckNotParallel RelcheckCitusNotParallel
PgaCitusManaged RelcheckCitusManaged
PgaElevate RelcheckElevate
PgaIndexKey RelcheckIndexKey
PgaIndexNullKey RelcheckIndexNullKey
PgaRegisterRelcacheCallback RelcheckRegisterCallback
PgaRestore RelcheckRestore
PgaSpiCustomAcl RelcheckSpiCustomAcl
PgaSpiInsertTuples RelcheckSpiInsertTuples
PgAgentsClusterRunsElsewhere ShmemClusterRunsElsewhere
PgAgentsDbSlotAt ShmemDbSlotAt
PgAgentsDbSlotFor ShmemDbSlotFor
PgAgentsDbSlotFree ShmemDbSlotFree
PgAgentsInitShmem ShmemInitAll
PgAgentsLauncherPid ShmemLauncherPid
PgAgentsShmemAddPart ShmemAddPart
PgAgentsShmemAvailable ShmemAvailable
PgAgentsWorkerShmem ShmemWorker
PgAgentsRequestWake WakeRequest
PgAgentsSetWorkerLatch WakeSetWorkerLatch
MAP
    # the MCP client's snake_case functions (src/mcp/, also in
    # bin/pg_agents_mcp and the fuzz harnesses), camel-cased
    # (mcp_async_free: McpAsyncFree is the MCP family's ToolAsyncRoutine free)
    for s in $(cat tools/symbol_names.mcp); do
        case $s in
            mcp_async_free) echo "$s McpAsyncRequestFree" ;;
            *) echo "$s $(camel "$s")" ;;
        esac
    done
}

case ${1:-} in
    map) map ;;
    apply)
        m=$(mktemp); trap 'rm -f "$m"' EXIT
        map >"$m"; export MAP=$m
        files=$(git ls-files src tools test/fuzz docs Makefile | grep -Ev '^tools/symbol_names\.' | while read -r f; do [ -f "$f" ] && [ ! -L "$f" ] && grep -Iq . "$f" && echo "$f"; done)
        pgsyms=$(nm -D --defined-only "$(pg_config --bindir)/postgres" 2>/dev/null | awk '{print $3}')
        bad=0
        while read -r old new; do
            if grep -qw -- "$new" $files; then echo "collision in the tree: $new (for $old)" >&2; bad=1; fi
            if grep -qx -- "$new" <<<"$pgsyms"; then echo "collision with postgres: $new" >&2; bad=1; fi
        done <"$m"
        [ $(awk '{print $2}' "$m" | sort | uniq -d | wc -l) -eq 0 ] || { echo "duplicate new names" >&2; bad=1; }
        [ $bad -eq 0 ] || exit 1
        # a word, not a file's name (cron_parse.c, access_rows_spi.o)
        perl -i -pe 'BEGIN { open(M, "<", $ENV{MAP}); while (<M>) { chomp; my ($o, $n) = split / /; $r{$o} = $n } $re = join("|", map { quotemeta } sort { length($b) <=> length($a) } keys %r) }
            s/(?<![\w\/.])($re)\b(?!\.[a-z]\b|\.sh\b|\.md\b)/$r{$1}/g' $files
        ;;
    *) echo "usage: $0 map|apply" >&2; exit 2 ;;
esac
