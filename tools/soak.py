#!/usr/bin/env python3
"""make soak: a simulated week of a small company's agents in SOAK_MINUTES of
wall time, under LLM and process faults, then a reconciliation of what ran
against an oracle that knows nothing of the extension (docs/soak.md).

Run by tools/soak.sh, which starts the cluster (pg_agents.worker_tick = off)
and the scripted LLM server and exports PG* and LLM_PORT/LLM_URL, PGDATA,
PG_AGENTS_BINDIR, PG_AGENTS_DIR.  Exit status 0 only with zero discrepancies.
"""
import json
import os
import random
import re
import subprocess
import sys
import time
import urllib.request
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

UTC = timezone.utc
MINUTES = float(os.environ.get("SOAK_MINUTES", "5"))
DURATION = MINUTES * 60.0
SEED = int(os.environ.get("SOAK_SEED", "22"))
SIM_START = datetime(2026, 10, 22, tzinfo=UTC)      # contains Europe's fall-back (Oct 25)
SIM_END = SIM_START + timedelta(days=7)
LLM_PORT = os.environ["LLM_PORT"]
LLM_URL = os.environ["LLM_URL"]
BINDIR = os.environ["PG_AGENTS_BINDIR"]
PGDATA = os.environ["PGDATA"]
DIR = os.environ["PG_AGENTS_DIR"]
TTL_S = 60                   # pg_agents.approval_ttl = 1min (the setting's unit is minutes)
LATE_S = 20                  # a "late" approval, well within the TTL
SELF_CAP = 3                 # pg_agents.self_retrigger_cap
HOURLY_CAP = 5               # the capped agent's hourly_run_cap
N_NOTES = max(400, int(DURATION * 0.6))   # rows the driver wakes once each
rng = random.Random(SEED)

SCHEDULES = {   # agent name -> (workspace, cron, zone)
    "hourly": ("acme", "0 * * * *", "UTC"),
    "daily7": ("acme", "0 7 * * *", "Europe/Paris"),
    "night": ("globex", "30 2 * * *", "Europe/Paris"),
    "weekly": ("initech", "0 9 * * 1", "America/New_York"),
}

FAULTS = {   # kind -> (scripted reply, pattern an error of this kind matches)
    "429": ({"status": 429, "retry_after": "1"}, r"429"),
    "500": ({"status": 500}, r"500"),
    "529": ({"status": 529}, r"529"),
    "timeout": ({"latency": 3}, r"timed out"),
    "malformed": ({"malformed": True}, r"malformed|parse|JSON|json"),
    "truncated": ({"truncated": True}, r"malformed|parse|JSON|json|truncat|partial|transfer|closed"),
}
# errors a process fault (kill -9, immediate restart) may leave on a run
PROCESS_FAULT_ERR = r"abandoned after \d+ attempts"


def log(msg):
    print("soak: " + msg, flush=True)


# ---------------------------------------------------------------------------
# database access: one psql per statement (survives crash-restarts)
# ---------------------------------------------------------------------------

def psql(sql, timeout=60):
    try:
        p = subprocess.run(["psql", "-XAtq", "-v", "ON_ERROR_STOP=1", "-F", "\t", "-c", sql],
                           capture_output=True, text=True, timeout=timeout,
                           env=dict(os.environ, PGOPTIONS="-c client_min_messages=warning"))
    except subprocess.TimeoutExpired:
        return False, "", "timeout"
    return p.returncode == 0, p.stdout.rstrip("\n"), p.stderr


def q(sql, timeout=120):
    """A statement that must succeed: retried while the server is away."""
    deadline = time.time() + timeout
    while True:
        ok, out, err = psql(sql)
        if ok:
            return out
        if time.time() > deadline:
            raise SystemExit("soak: statement failed for good: %s\n%s" % (sql[:200], err))
        time.sleep(0.5)


def rows(sql):
    out = q(sql)
    return [line.split("\t") for line in out.split("\n")] if out else []


def lit(s):
    return "'" + str(s).replace("'", "''") + "'"


def llm_script(key, replies):
    req = urllib.request.Request("http://127.0.0.1:%s/_script" % LLM_PORT,
                                 data=json.dumps({"key": key, "replies": replies}).encode(),
                                 headers={"Content-Type": "application/json"})
    urllib.request.urlopen(req, timeout=10).read()


def text_reply(text, **kw):
    r = {"text": text, "repeat": True}
    r.update(kw)
    return r


# ---------------------------------------------------------------------------
# setup
# ---------------------------------------------------------------------------

AG = {}       # name -> agent id
TRIG = {}     # schedule agent name -> trigger id


def mk_agent(ws, name, **cols):
    cols.setdefault("approval_mode", "none")
    cols.setdefault("hourly_run_cap", 100000)
    names = ["workspace_id", "owner_id", "name", "instructions", "scope"] + list(cols)
    vals = [lit(ws), lit("owner_" + ws), lit(name), lit("Soak agent %s." % name),
            "jsonb_build_object('llm_url', %s)" % lit(LLM_URL)]
    for v in cols.values():
        vals.append(lit(json.dumps(v)) + "::jsonb" if isinstance(v, (list, dict)) else lit(v))
    AG[name] = int(q("INSERT INTO agent.agents (%s) VALUES (%s) RETURNING id" % (", ".join(names), ", ".join(vals))))
    return AG[name]


def mk_trigger(agent, **cols):
    cols.setdefault("created_by", "owner_driver")
    names = ["agent_id"] + list(cols)
    vals = [str(AG[agent])]
    for v in cols.values():
        if isinstance(v, bool):
            vals.append("true" if v else "false")
        elif isinstance(v, (list, dict)):
            vals.append(lit(json.dumps(v)) + "::jsonb")
        else:
            vals.append(lit(v))
    return int(q("INSERT INTO agent.triggers (%s) VALUES (%s) RETURNING id" % (", ".join(names), ", ".join(vals))))


LOG_START = [0]


def setup():
    LOG_START[0] = os.path.getsize(DIR + "/server.log")
    for setting in ["pg_agents.worker_tick = off", "pg_agents.approval_ttl = '1min'",
                    "pg_agents.request_timeout = '2s'", "pg_agents.run_lease = '20s'",
                    "pg_agents.dedup_window = '60s'", "pg_agents.self_retrigger_cap = %d" % SELF_CAP,
                    "pg_agents.llm_url_allowlist = %s" % lit(LLM_URL)]:
        q("ALTER SYSTEM SET " + setting)
    q("SELECT pg_reload_conf()")
    time.sleep(1)
    q("""CREATE SCHEMA soak;
         CREATE TABLE soak.ticks (sim_now timestamptz PRIMARY KEY, at timestamptz NOT NULL DEFAULT clock_timestamp());
         CREATE TABLE soak.events (id bigserial PRIMARY KEY, kind text NOT NULL, key text NOT NULL, plan text,
                                   txid bigint NOT NULL DEFAULT txid_current(),
                                   at timestamptz NOT NULL DEFAULT clock_timestamp());
         CREATE TABLE soak.tickets (id bigserial PRIMARY KEY, ws text NOT NULL, title text, priority text, body text);
         CREATE TABLE soak.docs (id text PRIMARY KEY, ws text NOT NULL, kind text NOT NULL, title text, body text);
         GRANT USAGE ON SCHEMA soak TO agents_tool;
         GRANT SELECT, UPDATE ON soak.docs TO agents_tool;
         SELECT agent.watch_table('soak.tickets', 'collection', 'id', ARRAY['body'], 'ws');
         SELECT agent.audit_table('soak.tickets', 'ticket', NULL, 'ws');
         SELECT agent.watch_table('soak.docs', 'collection', 'id', NULL, 'ws');
         SELECT agent.register_resource_table('page', 'soak.docs', 'id', 'title', 'body');""")
    q("""INSERT INTO soak.docs SELECT 'note-' || g, 'globex', 'note', 'n', 'b' FROM generate_series(1, %d) g;
         INSERT INTO soak.docs SELECT 'loop-' || g, 'initech', 'loop', 'l', 'b' FROM generate_series(1, %d) g;
         INSERT INTO soak.docs VALUES ('page-1', 'globex', 'page', 'Status', 'old');""" % (N_NOTES, N_NOTES))

    # acme: schedules, a table watcher with a filter, a mention, a capped agent, dedup
    for name, (ws, cron, tz) in SCHEDULES.items():
        mk_agent(ws, name)
    mk_agent("acme", "triage")
    mk_agent("acme", "helper")
    mk_agent("acme", "capped", hourly_run_cap=HOURLY_CAP)
    mk_agent("acme", "burst")
    # globex: approvals, anti-loop, a budget that runs out
    mk_agent("globex", "approver", approval_mode="writes")
    mk_agent("globex", "scribe")
    mk_agent("globex", "spender", default_token_budget=30)
    # initech: delegation chain, LLM faults, a self-retriggering agent
    mk_agent("initech", "grandchild")
    mk_agent("initech", "child", delegation=[AG["grandchild"]])
    mk_agent("initech", "parent", delegation=[AG["child"]])
    mk_agent("initech", "flaky")
    mk_agent("initech", "echo")

    for name, (ws, cron, tz) in SCHEDULES.items():
        # created by the agent's owner: a run_as creator job fires while its
        # creator may edit the agent (docs/cron.md)
        TRIG[name] = mk_trigger(name, kind="schedule", schedule=cron, timezone=tz,
                                created_by="owner_" + ws,
                                prompt="Scheduled work [[soak:%s]]" % name)
        llm_script("[[soak:%s]]" % name, [text_reply("did %s" % name)])
    # the schedules start at the simulated start, not at the real now of the INSERT
    # (an UPDATE of next_run_at alone is left alone by the save trigger)
    q("UPDATE agent.triggers SET next_run_at = agent.cron_next(schedule, %s, timezone) WHERE kind = 'schedule'"
      % lit(SIM_START.isoformat()))

    mk_trigger("triage", kind="event", event_name="collection.row_added", resource_type="collection",
               resource_id="soak.tickets", filter={"all": [{"property": "priority", "op": "eq", "value": "high"}]},
               prompt="Triage the ticket [[soak:triage]]")
    llm_script("[[soak:triage]]", [text_reply("triaged")])
    mk_trigger("helper", kind="mention", prompt="Answer the mention [[soak:helper]]")
    llm_script("[[soak:helper]]", [text_reply("answered")])
    mk_trigger("capped", kind="event", event_name="soak.cap", resource_type="thing",
               prompt="Capped work [[soak:capped]]")
    llm_script("[[soak:capped]]", [text_reply("capped done")])
    mk_trigger("burst", kind="event", event_name="soak.burst", resource_type="thing",
               prompt="Burst work [[soak:burst]]")
    llm_script("[[soak:burst]]", [text_reply("burst done")])

    q("""INSERT INTO agent.resource_acl (resource_type, resource_id, principal, access) VALUES
           ('page', 'page-1', 'user:owner_globex', 'edit') ON CONFLICT DO NOTHING;
         INSERT INTO agent.access (agent_id, resource_type, resource_id, access) VALUES (%d, 'page', 'page-1', 'edit');"""
      % AG["approver"])
    mk_trigger("approver", kind="event", event_name="soak.approve", resource_type="thing",
               prompt="Update the status page [[soak:approver]]")
    llm_script("[[soak:approver]]", [{"tool": "write_resource", "repeat": True, "vary": True,
                                      "input": {"resource_type": "page", "resource_id": "page-1", "body": "v{n}"},
                                      "after_tool": {"text": "status handled"}}])
    # scribe: writes to the table it watches (anti-loop: its own writes never wake it)
    q("""INSERT INTO agent.resource_acl (resource_type, resource_id, principal, access)
           SELECT 'page', 'note-' || g, 'user:owner_globex', 'edit' FROM generate_series(1, %d) g ON CONFLICT DO NOTHING;
         INSERT INTO agent.access (agent_id, resource_type, resource_id, access)
           SELECT %d, 'page', 'note-' || g, 'edit' FROM generate_series(1, %d) g;""" % (N_NOTES, AG["scribe"], N_NOTES))
    mk_trigger("scribe", kind="event", event_name="collection.property_updated", resource_type="collection",
               resource_id="soak.docs", filter={"all": [{"property": "kind", "op": "eq", "value": "note"}]},
               prompt="Rewrite the note body")
    mk_trigger("spender", kind="event", event_name="soak.spend", resource_type="thing",
               prompt="Spend tokens [[soak:spender]]")
    llm_script("[[soak:spender]]", [text_reply("spent", usage={"in": 40, "out": 10})])

    mk_trigger("parent", kind="event", event_name="soak.project", resource_type="thing",
               prompt="Run the project [[soak:project-parent]]")
    llm_script("[[soak:project-parent]]", [{"tool": "delegate_to_agent", "repeat": True,
                                             "input": {"agent_id": AG["child"], "task": "Do part [[soak:project-c]]"},
                                             "after_tool": {"text": "project done"}}])
    llm_script("[[soak:project-c]]", [{"tool": "delegate_to_agent", "repeat": True,
                                       "input": {"agent_id": AG["grandchild"], "task": "Do a bit [[soak:pg]]"},
                                       "after_tool": {"text": "part done"}}])
    llm_script("[[soak:pg]]", [text_reply("bit done")])
    mk_trigger("flaky", kind="event", event_name="soak.flaky", resource_type="thing",
               prompt="Flaky provider [[soak:flaky]]")
    llm_script("[[soak:flaky]]", [text_reply("flaky ok")])
    q("""INSERT INTO agent.resource_acl (resource_type, resource_id, principal, access)
           SELECT 'page', 'loop-' || g, 'user:owner_initech', 'edit' FROM generate_series(1, %d) g ON CONFLICT DO NOTHING;
         INSERT INTO agent.access (agent_id, resource_type, resource_id, access)
           SELECT %d, 'page', 'loop-' || g, 'edit' FROM generate_series(1, %d) g;""" % (N_NOTES, AG["echo"], N_NOTES))
    # the changed row reaches the prompt only when the run may read the collection
    for ag, ws in (("scribe", "globex"), ("echo", "initech")):
        q("""INSERT INTO agent.resource_acl (resource_type, resource_id, principal, access)
               VALUES ('collection', 'soak.docs', 'user:owner_%s', 'read') ON CONFLICT DO NOTHING;
             INSERT INTO agent.access (agent_id, resource_type, resource_id, access)
               VALUES (%d, 'collection', 'soak.docs', 'read')""" % (ws, AG[ag]))
    mk_trigger("echo", kind="event", event_name="collection.property_updated", resource_type="collection",
               resource_id="soak.docs", allow_self_retrigger=True,
               filter={"all": [{"property": "kind", "op": "eq", "value": "loop"}]}, prompt="Echo the loop row")
    # MCP: a server that answers (echo), fails (isError), errs (JSON-RPC error), and one that hangs
    if os.environ.get("MCP_PORT"):
        base = "http://127.0.0.1:%s" % os.environ["MCP_PORT"]
        q("SELECT agent.mcp_add_server('py', %s, workspace_id => 'initech')" % lit(base + "/mcp"))
        q("SELECT agent.mcp_add_server('hang', %s, workspace_id => 'initech')" % lit(base + "/slow/mcp"))
        mk_agent("initech", "toolsmith")
        q("UPDATE agent.agents SET scope = scope || %s::jsonb WHERE id = %d" % (lit(json.dumps(
            {"mcp_tools": ["mcp__py__echo", "mcp__py__fail", "mcp__py__boom", "mcp__hang__echo"]})), AG["toolsmith"]))
        mk_trigger("toolsmith", kind="event", event_name="soak.mcp", resource_type="thing",
                   prompt="Use the tools [[soak:toolsmith]]")
        llm_script("[[soak:toolsmith]]", [{"repeat": True, "tool_calls": [
            {"name": "mcp__py__echo", "input": {"message": "hi"}}, {"name": "mcp__py__fail", "input": {}},
            {"name": "mcp__py__boom", "input": {}}, {"name": "mcp__hang__echo", "input": {"message": "hi"}}],
            "after_tool": {"text": "tools used"}}])
    # per-row scripts: the row's title carries its key, so a run writes the row that woke it
    for i in range(1, N_NOTES + 1):
        llm_script("[[soak:note-%d]]" % i, [{"tool": "write_resource", "repeat": True, "vary": True,
                                             "input": {"resource_type": "page", "resource_id": "note-%d" % i,
                                                       "body": "scribed {n}"},
                                             "after_tool": {"text": "note rewritten"}}])
        llm_script("[[soak:loop-%d]]" % i, [{"tool": "write_resource", "repeat": True, "vary": True,
                                             "input": {"resource_type": "page", "resource_id": "loop-%d" % i,
                                                       "body": "echo {n}"},
                                             "after_tool": {"text": "echoed"}}])
    log("setup: %d agents in 3 workspaces, schedules %s" % (len(AG), ", ".join(
        "%s '%s' %s" % (k, v[1], v[2]) for k, v in SCHEDULES.items())))


# ---------------------------------------------------------------------------
# actions (each logged in soak.events in the transaction that does it)
# ---------------------------------------------------------------------------

SEQ = {"n": 0}
STATS = {}


def bump(k, n=1):
    STATS[k] = STATS.get(k, 0) + n


def nid():
    SEQ["n"] += 1
    return SEQ["n"]


def ident(ws):
    return "SET pg_agents.workspace = %s; SET pg_agents.actor = 'user:driver_%s';" % (lit(ws), ws)


def fire_sql(ws, kind, event, key, plan=None, payload=None):
    return ident(ws) + (
        " WITH f AS (SELECT count(*) AS n FROM agent.fire_event(%s, 'thing', %s, %s::jsonb, NULL, %s))"
        " INSERT INTO soak.events (kind, key, plan) SELECT %s, %s, %s FROM f"
        % (lit(event), lit(key), lit(json.dumps(payload or {"n": key})), lit(key), lit(kind), lit(key),
           "NULL" if plan is None else lit(plan)))


def act_ticket():
    n = nid()
    prio = rng.choice(["high", "low", "low"])
    mention = rng.random() < 0.3
    body = "see [[agent:%d]] about it" % AG["helper"] if mention else "plain body"
    ok, _, _ = psql(ident("acme") + (
        " WITH t AS (INSERT INTO soak.tickets (ws, title, priority, body) VALUES ('acme', %s, %s, %s) RETURNING id)"
        " INSERT INTO soak.events (kind, key, plan) SELECT 'ticket', t.id::text, %s FROM t"
        % (lit("ticket %d" % n), lit(prio), lit(body), lit(prio + (",mention" if mention else "")))))
    bump("ticket" if ok else "ticket_failed")


NOTE_NEXT = {"note": 1, "loop": 1}


def act_row(kind):
    ws = "globex" if kind == "note" else "initech"
    i = NOTE_NEXT[kind]
    if i > N_NOTES:
        return
    NOTE_NEXT[kind] += 1   # each row woken once by the driver
    ok, _, _ = psql(ident(ws) + (
        " WITH u AS (UPDATE soak.docs SET title = %s WHERE id = %s RETURNING id)"
        " INSERT INTO soak.events (kind, key) SELECT %s, u.id FROM u"
        % (lit("[[soak:%s-%d]]" % (kind, i)), lit("%s-%d" % (kind, i)), lit(kind))))
    bump(kind if ok else kind + "_failed")


def act_fire(kind, ws, event, plan=None):
    key = "%s:%d" % (kind, nid())
    ok, _, _ = psql(fire_sql(ws, kind, event, key, plan))
    bump(kind if ok else kind + "_failed")
    return key


def act_burst():
    key = "burst:%d" % nid()
    script = "\n".join(fire_sql("acme", "burst", "soak.burst", key) + ";" for _ in range(50))
    p = subprocess.run(["psql", "-Xq", "-f", "-"], input=script, capture_output=True, text=True,
                       env=dict(os.environ, PGOPTIONS="-c client_min_messages=warning"))
    bump("burst_fires", 50)
    bump("burst")


def act_dups():
    key = "dup:%d" % nid()
    sql = fire_sql("acme", "dup", "soak.burst", key)
    procs = [subprocess.Popen(["psql", "-XAtq", "-c", sql], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              env=dict(os.environ, PGOPTIONS="-c client_min_messages=warning"))
             for _ in range(4)]
    for p in procs:
        p.wait()
    bump("dup")


def act_flaky():
    if rng.random() < 0.5:
        kind = rng.choice(sorted(FAULTS))
        try:
            llm_script("[[soak:flaky]]", [FAULTS[kind][0], text_reply("flaky ok")])
            q("INSERT INTO soak.events (kind, key) VALUES ('fault', %s)" % lit(kind))
            bump("fault_" + kind)
        except OSError:
            pass
    act_fire("flaky", "initech", "soak.flaky")


def decide_approvals():
    for key, run_id, ekey, plan, age in rows(
            "SELECT a.approval_key, r.id, e.key, e.plan, %d - extract(epoch FROM a.expires_at - now())::int"
            "  FROM agent.approvals a JOIN agent.runs r ON r.id = a.run_id"
            "  JOIN soak.events e ON e.kind = 'approve' AND e.key = r.input->>'event_id'"
            " WHERE a.status = 'pending'" % TTL_S):
        age = int(age)
        if plan == "quick" or (plan == "late" and age >= LATE_S):
            fn, dec = "agent.approve(%s, 'owner_globex', %s)" % (lit(key), run_id), "approved"
        elif plan == "deny":
            fn, dec = "agent.deny(%s, 'owner_globex', %s, 'not now')" % (lit(key), run_id), "denied"
        else:
            continue
        ok, _, _ = psql("WITH d AS (SELECT %s AS x) INSERT INTO soak.events (kind, key, plan) SELECT 'decision', %s, %s FROM d"
                        % (fn, lit(ekey), lit(dec)))
        bump("decision_" + dec if ok else "decision_failed")


# ---------------------------------------------------------------------------
# process faults
# ---------------------------------------------------------------------------

def worker_pid():
    ok, out, _ = psql("SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_agents worker' LIMIT 1", timeout=10)
    return int(out) if ok and out.strip().isdigit() else None


def kill_worker():
    pid = worker_pid()
    if pid:
        os.kill(pid, 9)
        log("fault: kill -9 of the worker (pid %d)" % pid)
        bump("kill_worker")


def as_pg(cmd):
    if os.getuid() == 0:
        return ["runuser", "-u", "postgres", "--"] + cmd
    return cmd


def restart_immediate():
    log("fault: immediate shutdown and restart of the postmaster")
    subprocess.run(as_pg([BINDIR + "/pg_ctl", "-D", PGDATA, "-m", "immediate", "-w", "stop"]),
                   capture_output=True, cwd="/")
    subprocess.run(as_pg([BINDIR + "/pg_ctl", "-D", PGDATA, "-l", DIR + "/server.log", "-w", "-t", "60", "start"]),
                   capture_output=True, cwd="/")
    bump("restart_immediate")


LONG_TX = []


def long_tx(secs):
    log("fault: a transaction held open for %d s" % secs)
    LONG_TX.append(subprocess.Popen(["psql", "-XAtq", "-c",
                                     "BEGIN; SELECT txid_current(); SELECT pg_sleep(%d); COMMIT;" % secs],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    bump("long_tx")


def rss_of(pid):
    """(VmRSS, RssAnon, RssShmem) in kB: the private memory (malloc and palloc)
    apart from the pages of shared memory the process has touched, which
    VmRSS counts too and which grow, up to shared_buffers, as the worker
    reads more distinct buffers (no leak)."""
    try:
        d = {}
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmRSS", "RssAnon", "RssShmem"):
                    d[k] = int(v.split()[0])
        return (d["VmRSS"], d["RssAnon"], d["RssShmem"])
    except (OSError, KeyError, ValueError, IndexError):
        return None


# ---------------------------------------------------------------------------
# the run
# ---------------------------------------------------------------------------

def tick(sim_now):
    # the simulated tick and its bookkeeping row commit together
    ok, _, _ = psql("INSERT INTO soak.ticks (sim_now) VALUES (%s); SELECT agent.tick(%s)"
                    % (lit(sim_now.isoformat()), lit(sim_now.isoformat())))
    bump("ticks" if ok else "ticks_failed")
    # what the worker's tick does on the real clock: leases, approval expiry, dedup cleanup
    psql("SELECT agent._tick_runs(now()); SELECT agent._events_cleanup(now())")


def active_runs():
    ok, out, _ = psql("SELECT count(*) FROM agent.runs WHERE status IN "
                      "('queued', 'running', 'waiting_approval', 'waiting_input', 'waiting_children')")
    return int(out) if ok else -1


def drive():
    t0 = time.time()
    # process faults at fixed fractions of the run (plus jitter)
    plan = sorted([(f + rng.uniform(-0.03, 0.03), what) for f, what in
                   [(0.1, "kill"), (0.2, "longtx"), (0.25, "kill"), (0.35, "kill"), (0.45, "kill"), (0.55, "restart")]])
    # (the last 40 %: one worker's life, for the memory check)
    RSS.clear()
    last_rss = 0
    actions = [(0.5, act_ticket), (0.12, lambda: act_row("note")), (0.05, lambda: act_row("loop")),
               (0.12, lambda: act_fire("cap", "acme", "soak.cap")),
               (0.03, act_burst), (0.04, act_dups),
               (0.08, lambda: act_fire("approve", "globex", "soak.approve",
                                       rng.choice(["quick", "late", "deny", "never"]))),
               (0.04, lambda: act_fire("spend", "globex", "soak.spend")),
               (0.05, lambda: act_fire("project", "initech", "soak.project")),
               (0.1, act_flaky)]
    if "toolsmith" in AG:
        actions.append((0.04, lambda: act_fire("mcp", "initech", "soak.mcp")))
    # approvals are asked for only while an unanswered one can still expire before the end
    while True:
        el = time.time() - t0
        frac = min(1.0, el / DURATION)
        sim_now = SIM_START + (SIM_END - SIM_START) * frac
        tick(sim_now)
        while plan and plan[0][0] <= frac:
            what = plan.pop(0)[1]
            if what == "kill":
                kill_worker()
            elif what == "restart":
                restart_immediate()
            elif what == "longtx":
                long_tx(max(10, int(DURATION * 0.1)))
        if frac >= 1.0:
            break
        for p, fn in actions:
            if rng.random() < p:
                if fn is actions[6][1] and DURATION - el < TTL_S + 15:
                    continue
                fn()
        decide_approvals()
        if time.time() - last_rss > 3:
            pid = worker_pid()
            if pid:
                r = rss_of(pid)
                if r:
                    RSS.append((time.time() - t0, pid, r))
            last_rss = time.time()
        time.sleep(0.2)
    log("simulated week done at %.0f s wall; draining" % (time.time() - t0))
    deadline = time.time() + TTL_S + 90
    while time.time() < deadline:
        psql("SELECT agent._tick_runs(now()); SELECT agent._events_cleanup(now())")
        decide_approvals()
        if active_runs() == 0:
            break
        time.sleep(1)
    for p in LONG_TX:
        p.wait()
    log("drained after %.0f s wall" % (time.time() - t0))


RSS = []


# ---------------------------------------------------------------------------
# the oracle and the report
# ---------------------------------------------------------------------------

def cron_slots(cron, tz, start, end):
    """Slots of a simple cron expression (minute, hour or '*', '*', '*', dow or
    '*'), independently of the extension: every UTC minute whose local wall
    time matches; a fixed hour in a repeated (fall-back) hour fires once, at
    the first occurrence (fold 0); the window has no spring-forward gap."""
    mi, hr, dom, mon, dow = cron.split()
    assert dom == "*" and mon == "*"
    z = ZoneInfo(tz)
    out = []
    t = start.replace(second=0, microsecond=0) + timedelta(minutes=1)
    while t <= end:
        loc = t.astimezone(z)
        if loc.minute == int(mi) and (hr == "*" or (loc.hour == int(hr) and loc.fold == 0)) \
                and (dow == "*" or (loc.isoweekday() % 7) == int(dow)):
            out.append(t)
        t += timedelta(minutes=1)
    return out


def ts(s):
    return datetime.fromisoformat(s.replace(" ", "T")).astimezone(UTC) if s else None


def reconcile():
    D = []    # discrepancies

    def bad(msg):
        D.append(msg)

    ticks = [ts(r[0]) for r in rows("SELECT sim_now FROM soak.ticks ORDER BY sim_now")]
    runs = {}
    for r in rows("SELECT id, agent_id, origin, status, coalesce(error, ''), coalesce(input->>'event_id', ''),"
                  " coalesce(input->>'scheduled_for', ''), coalesce(trigger_id, 0), coalesce(parent_run_id, 0),"
                  " root_run_id, depth, coalesce(input->'payload'->>'row_id', ''), created_at,"
                  " coalesce(input->>'self_chain', '') FROM agent.runs ORDER BY id"):
        runs[int(r[0])] = dict(id=int(r[0]), agent=int(r[1]), origin=r[2], status=r[3], error=r[4], event_id=r[5],
                               sched=r[6], trigger=int(r[7]), parent=int(r[8]), root=int(r[9]), depth=int(r[10]),
                               row_id=r[11], created=ts(r[12]), chain=r[13])
    name_of = {v: k for k, v in AG.items()}
    by_agent = {}
    for r in runs.values():
        by_agent.setdefault(name_of.get(r["agent"], "?"), []).append(r)
    events = rows("SELECT kind, key, coalesce(plan, ''), txid FROM soak.events ORDER BY id")
    ev = {}
    for kind, key, plan, txid in events:
        ev.setdefault(kind, []).append((key, plan, int(txid)))
    checked = set()
    faults_injected = [k for k, _, _ in ev.get("fault", [])]
    fault_pat = "|".join("(%s)" % FAULTS[k][1] for k in set(faults_injected)) or "$^"
    report = []

    def status_ok(r, allowed, what):
        checked.add(r["id"])
        if r["status"] in allowed:
            return
        if r["status"] == "failed" and re.search(PROCESS_FAULT_ERR, r["error"]):
            bump("runs_lost_to_process_faults")
            return
        bad("%s: run %d is %s (%s), expected %s" % (what, r["id"], r["status"], r["error"][:120], "/".join(allowed)))

    # 1. schedules: exactly one run per firing slot, with scheduled_for = the slot
    for name, (ws, cron, tz) in SCHEDULES.items():
        slots = cron_slots(cron, tz, SIM_START, SIM_END + timedelta(days=1))
        exp, i = [], 0
        for t in ticks:
            if i < len(slots) and slots[i] <= t:
                exp.append(slots[i])
                while i < len(slots) and slots[i] <= t:
                    i += 1
        got = sorted(ts(r["sched"]) for r in by_agent.get(name, []) if r["origin"] == "schedule")
        for r in by_agent.get(name, []):
            status_ok(r, ("succeeded",), "schedule %s" % name)
        missing = sorted(set(exp) - set(got))
        extra = [g for g in got if got.count(g) > 1 or g not in exp]
        report.append("schedule %-7s %-12s %-17s slots in week %3d  firings expected %3d  runs %3d" %
                      (name, "'%s'" % cron, tz, len(cron_slots(cron, tz, SIM_START, SIM_END)), len(exp), len(got)))
        if missing:
            bad("schedule %s: %d slots without a run, e.g. %s" % (name, len(missing), missing[:3]))
        if extra:
            bad("schedule %s: %d runs for no slot or duplicated, e.g. %s" % (name, len(extra), extra[:3]))
        if name == "night":
            oct25 = [g for g in got if g.date().isoformat() == "2026-10-25"]
            report.append("  night on 2026-10-25 (repeated 02:00-02:59 in Paris): %s" % [g.isoformat() for g in oct25])

    def one_run(agent, pred, what, allowed):
        rs = [r for r in by_agent.get(agent, []) if pred(r)]
        if len(rs) != 1:
            bad("%s: %d runs, expected exactly 1" % (what, len(rs)))
        for r in rs:
            status_ok(r, allowed, what)
        return rs

    # 2. table watcher (filter on priority) and mentions, audit of each write
    audits = set((a, int(b)) for a, b in rows(
        "SELECT target_id, txid FROM agent.audit_log WHERE target_type = 'ticket'"))
    n_high = n_mention = 0
    for key, plan, txid in ev.get("ticket", []):
        prio, mention = plan.split(",")[0], "mention" in plan
        trs = [r for r in by_agent.get("triage", []) if r["row_id"] == key]
        if prio == "high":
            n_high += 1
            one_run("triage", lambda r: r["row_id"] == key, "ticket %s (high)" % key, ("succeeded",))
        elif trs:
            bad("ticket %s (low): %d triage runs, expected none (filter)" % (key, len(trs)))
        if mention:
            n_mention += 1
            one_run("helper", lambda r: r["row_id"] == key and r["origin"] == "mention",
                    "ticket %s mention" % key, ("succeeded",))
        if (key, txid) not in audits:
            bad("ticket %s: no audit row of its insert (txid %d)" % (key, txid))
    report.append("watcher  tickets %d (high %d, mentions %d); audit rows of them %d" %
                  (len(ev.get("ticket", [])), n_high, n_mention, len(audits)))

    # 3. anti-loop: one scribe run per driver update, none from its own writes
    for key, plan, txid in ev.get("note", []):
        one_run("scribe", lambda r: r["event_id"].startswith("%d:" % txid), "note %s update" % key, ("succeeded",))
    n_scribe = len(by_agent.get("scribe", []))
    if n_scribe != len(ev.get("note", [])):
        bad("anti-loop: scribe has %d runs for %d driver updates" % (n_scribe, len(ev.get("note", []))))
    writes = dict((int(a), int(n)) for a, n in rows(
        "SELECT r.agent_id, count(*) FROM agent.run_steps s JOIN agent.runs r ON r.id = s.run_id"
        " WHERE s.kind = 'write' GROUP BY 1"))
    if writes.get(AG["scribe"], 0) != n_scribe:
        bad("anti-loop: %d scribe runs made %d writes, expected one each" % (n_scribe, writes.get(AG["scribe"], 0)))
    report.append("anti-loop  driver updates %d, scribe runs %d, their writes %d (runs woken by them: %d)" %
                  (len(ev.get("note", [])), n_scribe, writes.get(AG["scribe"], 0), n_scribe - len(ev.get("note", []))))

    # 4. self-retrigger: each chain = the driver's run + SELF_CAP self-runs, then capped (audited)
    capped = int(q("SELECT count(*) FROM agent.audit_log WHERE action = 'event.self_retrigger_capped'"))
    echo_runs = by_agent.get("echo", [])
    for key, plan, txid in ev.get("loop", []):
        one_run("echo", lambda r: r["event_id"].startswith("%d:" % txid), "loop %s update" % key, ("succeeded",))
    for r in echo_runs:
        status_ok(r, ("succeeded",), "echo")
    n_loop = len(ev.get("loop", []))
    if len(echo_runs) != n_loop * (1 + SELF_CAP):
        bad("self-retrigger: %d echo runs for %d chains, expected %d" % (len(echo_runs), n_loop, n_loop * (1 + SELF_CAP)))
    if capped != n_loop:
        bad("self-retrigger: %d event.self_retrigger_capped audit rows for %d chains" % (capped, n_loop))
    chains = sorted(set(r["chain"] for r in echo_runs))
    report.append("self-retrigger  chains %d, echo runs %d (self_chain values %s), capped audit rows %d" %
                  (n_loop, len(echo_runs), chains, capped))

    # 5. dedup: bursts of 50 and concurrent duplicates make one run per event id
    for kind in ("burst", "dup"):
        keys = sorted(set(k for k, _, _ in ev.get(kind, [])))
        for key in keys:
            one_run("burst", lambda r: r["event_id"] == key, "%s %s" % (kind, key), ("succeeded",))
        report.append("dedup %-5s events %d (fires committed %d) -> runs %d" % (
            kind, len(keys), len(ev.get(kind, [])),
            len([r for r in by_agent.get("burst", []) if r["event_id"] in keys])))
    if len(by_agent.get("burst", [])) != len(set(k for kd in ("burst", "dup") for k, _, _ in ev.get(kd, []))):
        bad("dedup: burst agent has %d runs" % len(by_agent.get("burst", [])))

    # 6. hourly cap (real clock): a run is budget_exceeded iff the cap was reached in the hour before it
    cap_runs = sorted(by_agent.get("capped", []), key=lambda r: r["id"])
    for key, _, _ in ev.get("cap", []):
        one_run("capped", lambda r: r["event_id"] == key, "cap %s" % key, ("succeeded", "budget_exceeded"))
    for r in cap_runs:
        prior = [x for x in cap_runs if x["id"] < r["id"] and x["status"] != "budget_exceeded"
                 and x["created"] > r["created"] - timedelta(hours=1)]
        want = "budget_exceeded" if len(prior) >= HOURLY_CAP else "succeeded"
        if r["status"] != want and not re.search(PROCESS_FAULT_ERR, r["error"]):
            bad("cap: run %d is %s, expected %s (%d runs in the hour before)" % (r["id"], r["status"], want, len(prior)))
    report.append("hourly cap %d  events %d -> runs %d (succeeded %d, budget_exceeded %d)" % (
        HOURLY_CAP, len(ev.get("cap", [])), len(cap_runs), len([r for r in cap_runs if r["status"] == "succeeded"]),
        len([r for r in cap_runs if r["status"] == "budget_exceeded"])))

    # 7. approvals: approved -> succeeded, denied -> succeeded (the run goes on), undecided -> expired
    dec = {k: p for k, p, _ in ev.get("decision", [])}
    tally = {}
    for key, plan, _ in ev.get("approve", []):
        want = {"approved": "succeeded", "denied": "succeeded"}.get(dec.get(key), "expired")
        tally[(plan, dec.get(key, "none"))] = tally.get((plan, dec.get(key, "none")), 0) + 1
        one_run("approver", lambda r: r["event_id"] == key, "approval %s (%s, %s)" % (key, plan, dec.get(key)), (want,))
    report.append("approvals  " + ", ".join("%s/%s %d" % (k[0], k[1], v) for k, v in sorted(tally.items())))
    expired = int(q("SELECT count(*) FROM agent.audit_log WHERE action = 'approval.expire'"))
    report.append("  approval.expire audit rows %d" % expired)

    # 8. budgets
    for key, _, _ in ev.get("spend", []):
        one_run("spender", lambda r: r["event_id"] == key, "spend %s" % key, ("budget_exceeded",))
    report.append("budget  events %d -> runs %d budget_exceeded" % (
        len(ev.get("spend", [])), len([r for r in by_agent.get("spender", []) if r["status"] == "budget_exceeded"])))

    # 9. delegation: root -> child -> grandchild, each once
    for key, _, _ in ev.get("project", []):
        roots = one_run("parent", lambda r: r["event_id"] == key, "project %s" % key, ("succeeded",))
        for root in roots:
            tree = [r for r in runs.values() if r["root"] == root["id"]]
            kids = [r for r in tree if r["parent"] == root["id"]]
            gk = [r for r in tree if kids and r["parent"] == kids[0]["id"]]
            if len(tree) != 3 or len(kids) != 1 or len(gk) != 1 or name_of.get(kids[0]["agent"]) != "child" \
                    or name_of.get(gk[0]["agent"]) != "grandchild":
                bad("project %s: tree of run %d is %s" % (key, root["id"],
                                                          [(r["id"], name_of.get(r["agent"]), r["depth"]) for r in tree]))
            for r in tree:
                status_ok(r, ("succeeded",), "project %s tree" % key)
    report.append("delegation  projects %d, runs of parent/child/grandchild %d/%d/%d" % (
        len(ev.get("project", [])), len(by_agent.get("parent", [])), len(by_agent.get("child", [])),
        len(by_agent.get("grandchild", []))))

    # 10. LLM faults: succeeded after retries, or failed with an error of an injected kind
    fl = {}
    for key, _, _ in ev.get("flaky", []):
        for r in one_run("flaky", lambda r: r["event_id"] == key, "flaky %s" % key, ("succeeded", "failed")):
            if r["status"] == "failed":
                if not re.search(fault_pat, r["error"]):
                    bad("flaky %s: run %d failed with an error of no injected fault: %s" % (key, r["id"], r["error"]))
                lab = "failed: " + r["error"][:40]
            else:
                lab = r["status"]
            fl[lab] = fl.get(lab, 0) + 1
    n_failed = sum(v for k, v in fl.items() if k.startswith("failed"))
    n_fatal = len([k for k in faults_injected if k in ("malformed", "truncated")])
    if n_failed > len(faults_injected):
        bad("flaky: %d failed runs for %d injected faults" % (n_failed, len(faults_injected)))
    retries = int(q("SELECT count(*) FROM agent.run_steps WHERE status = 'retry'"))
    report.append("llm faults injected %s (fatal kinds %d); flaky runs %s; retry steps %d" % (
        {k: faults_injected.count(k) for k in sorted(set(faults_injected))}, n_fatal, fl, retries))

    # 10b. MCP: tool failures and a hanging server are tool results, the run goes on
    for key, _, _ in ev.get("mcp", []):
        one_run("toolsmith", lambda r: r["event_id"] == key, "mcp %s" % key, ("succeeded",))
    if "toolsmith" in AG:
        msteps = dict((a, int(b)) for a, b in rows(
                "SELECT s.kind || ':' || coalesce(s.name, '') || ':' || s.status, count(*) FROM agent.run_steps s"
                " JOIN agent.runs r ON r.id = s.run_id WHERE r.agent_id = %d AND s.kind <> 'llm' GROUP BY 1 ORDER BY 1"
                % AG["toolsmith"]))
        n_mcp = len(by_agent.get("toolsmith", []))
        for st, want in (("tool:mcp__py__echo:ok", n_mcp), ("tool:mcp__py__fail:error", n_mcp),
                         ("tool:mcp__py__boom:error", n_mcp)):
            if msteps.get(st, 0) != want:
                bad("mcp: %d steps %s for %d runs" % (msteps.get(st, 0), st, n_mcp))
        if sum(v for k, v in msteps.items() if "mcp__hang__echo" in k and not k.endswith(":ok")) != n_mcp:
            bad("mcp: the hanging server's calls are not one failed step per run: %s" % msteps)
        report.append("mcp  events %d -> runs %d; tool steps %s" % (len(ev.get("mcp", [])), n_mcp, msteps))

    # 11. nothing else ran, nothing left active, roll-ups add up
    others = [r for r in runs.values() if r["id"] not in checked]
    if others:
        bad("%d runs no rule expects, e.g. %s" % (len(others), [(r["id"], name_of.get(r["agent"]), r["origin"], r["status"])
                                                                  for r in others[:5]]))
    active = [r for r in runs.values() if r["status"] in ("queued", "running", "waiting_approval", "waiting_input",
                                                          "waiting_children")]
    if active:
        bad("%d runs still active after the drain: %s" % (len(active), [(r["id"], r["status"]) for r in active[:5]]))
    roll = rows("SELECT r.id, r.tokens_total, (SELECT sum(x.tokens_in + x.tokens_out) FROM agent.runs x"
                " WHERE x.root_run_id = r.id) FROM agent.runs r WHERE r.parent_run_id IS NULL"
                " AND r.tokens_total <> (SELECT sum(x.tokens_in + x.tokens_out) FROM agent.runs x WHERE x.root_run_id = r.id)")
    for rid, tot, s in roll:
        bad("tokens: root %s has tokens_total %s, its tree used %s" % (rid, tot, s))
    st = {}
    for r in runs.values():
        st[r["status"]] = st.get(r["status"], 0) + 1
    report.append("runs %d by status %s; roots whose tokens_total differs from the tree's sum: %d" %
                  (len(runs), dict(sorted(st.items())), len(roll)))
    if STATS.get("runs_lost_to_process_faults"):
        report.append("runs failed 'abandoned' after repeated process faults: %d" % STATS["runs_lost_to_process_faults"])

    # 12. worker memory: its private memory (RssAnon: malloc and palloc) flat
    # within one worker's life after warm-up; the shared memory it touched
    # (RssShmem, part of VmRSS) is bounded by shared_buffers and only reported
    by_pid = {}
    for t, pid, r in RSS:
        by_pid.setdefault(pid, []).append((t, r))
    longest = max(by_pid.values(), key=len) if by_pid else []
    if len(longest) >= 6:
        warm = longest[len(longest) // 3:]

        def span(i):
            return min(r[i] for _, r in warm), max(r[i] for _, r in warm)
        lo, hi = span(1)
        vlo, vhi = span(0)
        slo, shi = span(2)
        report.append("worker memory (kB) over its longest life (%d samples, %d workers), after warm-up: "
                      "private (RssAnon) %d..%d (+%d); VmRSS %d..%d (+%d), of which shared memory touched "
                      "(RssShmem) %d..%d (+%d, bounded by shared_buffers %s)" %
                      (len(longest), len(by_pid), lo, hi, hi - lo, vlo, vhi, vhi - vlo, slo, shi, shi - slo,
                       q("SHOW shared_buffers")))
        if hi - lo > max(8192, lo // 5):
            bad("worker private memory (RssAnon) grew from %d kB to %d kB after warm-up" % (lo, hi))
    else:
        report.append("worker memory: too few samples in one worker's life (%d)" % len(longest))

    # 13. sizes
    # (agent.audit_log is partitioned, its parent holds nothing: the sum over pg_partition_tree)
    sizes = rows("SELECT c, n, pg_size_pretty(coalesce((SELECT sum(pg_total_relation_size(t.relid))"
                 " FROM pg_partition_tree(c::regclass) t), pg_total_relation_size(c))) FROM (VALUES"
                 " ('agent.runs', (SELECT count(*) FROM agent.runs)), ('agent.run_steps', (SELECT count(*) FROM agent.run_steps)),"
                 " ('agent.audit_log', (SELECT count(*) FROM agent.audit_log)),"
                 " ('agent.event_dedup', (SELECT count(*) FROM agent.event_dedup)),"
                 " ('agent.run_state', (SELECT count(*) FROM agent.run_state)),"
                 " ('agent.run_messages', (SELECT count(*) FROM agent.run_messages))) v(c, n)")
    report.append("sizes " + ", ".join("%s %s rows %s" % (c, n, s) for c, n, s in sizes))
    dd = int(q("SELECT count(*) FROM agent.event_dedup WHERE seen_at < now() - interval '60 s' - interval '5 s'"))
    if dd:
        bad("event_dedup: %d fingerprints older than the window after cleanup" % dd)

    # 14. server log
    known = [("kill -9 of the worker", r"pg_agents worker.*terminated by signal 9|terminated by signal 9: Killed"),
             ("crash restart", r"terminating any other active server processes|all server processes terminated|"
                               r"database system was not properly shut down|database system was interrupted|"
                               r"redo starts|redo done|invalid record length"),
             ("connections refused while restarting", r"the database system is (in recovery mode|starting up|"
                                                      r"shutting down|not yet accepting connections)"),
             ("connection lost to the restart", r"terminating connection because of crash|"
                                                r"connection to client lost|could not send data to client"),
             ("LLM fault (worker log)", r"pg_agents worker.*(429|500|529|timed out|malformed|LLM)"),
             ]
    counts = {}
    unknown = []
    with open(DIR + "/server.log", errors="replace") as f:
        f.seek(LOG_START[0])
        for line in f:
            if not re.search(r"\b(ERROR|PANIC|FATAL|WARNING|LOG):", line) and "terminated by signal" not in line:
                continue
            if not re.search(r"ERROR|PANIC|FATAL|terminated by signal|crash", line):
                continue
            for label, pat in known:
                if re.search(pat, line):
                    counts[label] = counts.get(label, 0) + 1
                    break
            else:
                unknown.append(line.rstrip())
    report.append("server log: " + ", ".join("%s %d" % kv for kv in sorted(counts.items())) +
                  "; other ERROR/PANIC/FATAL lines %d" % len(unknown))
    for line in unknown[:15]:
        report.append("  | " + line[:200])
    if unknown:
        bad("server log: %d ERROR/PANIC/FATAL lines not caused by an injected fault" % len(unknown))

    print("\n==== soak reconciliation (SOAK_MINUTES=%g, seed %d, simulated %s .. %s) ====" %
          (MINUTES, SEED, SIM_START.isoformat(), SIM_END.isoformat()))
    print("committed ticks %d; actions %s" % (len(ticks), dict(sorted(STATS.items()))))
    for line in report:
        print(line)
    print("discrepancies: %d" % len(D))
    groups = {}
    for d in D:
        groups.setdefault(d.split()[0], []).append(d)
    for g in groups.values():
        for d in g[:5]:
            print("  DISCREPANCY " + d)
        if len(g) > 5:
            print("  ... and %d more like it" % (len(g) - 5))
    return len(D)


def main():
    setup()
    drive()
    n = reconcile()
    sys.exit(0 if n == 0 else 1)


if __name__ == "__main__":
    main()
