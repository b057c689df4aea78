#!/usr/bin/env python3
"""SQL-level randomized fuzzer of the trigger filter evaluator (src/events/filter.c).

Throws random filters (valid-looking and garbage) and random payloads at
agent.validate_filter and agent.filter_matches and checks that:
  - nothing crashes or hangs (statement_timeout), the server stays up;
  - an invalid filter is refused with 22023 / 42501 only;
  - on valid filters: results are never NULL, a single condition gives the
    same answer under "all" and "any", and eq/neq, contains/not_contains,
    is_empty/is_not_empty are exact complements;
  - "all" is the conjunction and "any" the disjunction of its conditions.
Usage: events_filter_fuzz.py CASES [SEED]   (libpq environment: PGHOST...)
Prints a summary line; exit status 0 when every case passed.
"""
import json, os, random, subprocess, sys, tempfile

OPS = ["eq", "neq", "contains", "not_contains", "gt", "gte", "lt", "lte", "in",
       "is_empty", "is_not_empty", "changed", "changed_to"]
PROPS = ["priority", "title", "points", "labels", "done", "owner", "due", "id", "x", "", "row", "changed"]
WORDS = ["outage", "Outage", "server", "down", "ÉTÉ", "naïve", "a", "", " ", "[[agent:1]]", "1e5", "-3.25",
         "1e999", "2026-01-01", "true", "null", "\\", "\"", "x" * 300, "ü" * 50, "%s", "\t\n"]


def rscalar(r):
    k = r.randrange(7)
    if k == 0: return r.choice(WORDS)
    if k == 1: return r.randint(-10**6, 10**6)
    if k == 2: return r.choice([0.5, -1e300, 1e-300, 3.14159, 10**30])
    if k == 3: return r.choice([True, False])
    if k == 4: return None
    if k == 5: return "".join(r.choice("abcXYZ 019-_.:,!éß") for _ in range(r.randrange(12)))
    return str(r.randint(-1000, 1000))


def rvalue(r, depth=0):
    k = r.randrange(10)
    if depth < 4 and k == 0:
        return [rvalue(r, depth + 1) for _ in range(r.randrange(5))]
    if depth < 4 and k == 1:
        return {r.choice(PROPS + WORDS[:5]): rvalue(r, depth + 1) for _ in range(r.randrange(5))}
    return rscalar(r)


def rcond(r, valid_bias):
    if r.random() < 0.03:
        return rvalue(r)                       # garbage condition
    c = {}
    if r.random() < 0.995: c["property"] = r.choice(PROPS) if r.random() < 0.9 else rvalue(r)
    if r.random() < 0.995: c["op"] = r.choice(OPS) if r.random() < valid_bias else r.choice(["equals", "", "EQ", 1, None])
    if c.get("op") in ("is_empty", "is_not_empty", "changed"):
        if r.random() < 0.05: c["value"] = rvalue(r)
    elif c.get("op") == "in":
        c["value"] = [rscalar(r) for _ in range(r.randrange(4))] if r.random() < 0.9 else rvalue(r)
    elif r.random() < 0.97:
        c["value"] = rscalar(r) if r.random() < 0.85 else rvalue(r)
    if r.random() < 0.02: c["extra"] = 1
    return c


def rfilter(r):
    if r.random() < 0.02:
        return rvalue(r)
    f = {}
    bias = 0.99
    if r.random() < 0.7: f["all"] = [rcond(r, bias) for _ in range(r.randrange(4))] if r.random() < 0.97 else rvalue(r)
    if r.random() < 0.5: f["any"] = [rcond(r, bias) for _ in range(r.randrange(4))] if r.random() < 0.97 else rvalue(r)
    if r.random() < 0.3: f["keywords"] = [r.choice(WORDS) for _ in range(r.randrange(3))] if r.random() < 0.9 else rvalue(r)
    if r.random() < 0.1: f["view"] = r.choice(["public.events_fuzz_view", "events_fuzz_view", "no.such.view", "a.b.c.d",
                                               "\"bad", "", "pg_catalog.pg_class", 5])
    if r.random() < 0.02: f["unknown"] = True
    return f


def rpayload(r):
    row = {p: rvalue(r) for p in r.sample(PROPS, r.randrange(len(PROPS)))}
    p = {"table": "public.t", "row_id": r.choice(["1", "2", 3, None, "x"]), "row": row}
    if r.random() < 0.5: p["changed"] = r.sample(PROPS, r.randrange(4))
    if r.random() < 0.3: p["old"] = {k: rvalue(r) for k in r.sample(PROPS, 3)}
    if r.random() < 0.2: p[r.choice(PROPS)] = rvalue(r)
    if r.random() < 0.05: p["row"] = rvalue(r)
    return p


CHECK_SQL = r"""
SET client_min_messages = error;
SET statement_timeout = '120s';
CREATE TEMP TABLE fuzz_cases (n int, f jsonb, p jsonb);
\copy fuzz_cases FROM '%(file)s'
DROP VIEW IF EXISTS public.events_fuzz_view;
DROP TABLE IF EXISTS public.events_fuzz_t;
CREATE TABLE public.events_fuzz_t (id text);
INSERT INTO public.events_fuzz_t VALUES ('1'), ('3');
CREATE VIEW public.events_fuzz_view AS SELECT id FROM public.events_fuzz_t;
CREATE FUNCTION pg_temp.m(f jsonb, p jsonb) RETURNS boolean LANGUAGE sql AS $$ SELECT agent.filter_matches(f, p) $$;
CREATE FUNCTION pg_temp.fuzz_case(f jsonb, p jsonb) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE
  r boolean; a1 boolean; y1 boolean; nr boolean; c jsonb; neg text;
  conj boolean := true; disj boolean := false; nany int := 0;
BEGIN
  BEGIN
    PERFORM agent.validate_filter(f);
  EXCEPTION WHEN invalid_parameter_value OR insufficient_privilege THEN
    PERFORM agent.filter_matches(f, p);   -- must not crash either
    RETURN 'invalid';
  END;
  r := pg_temp.m(f, p);
  IF r IS NULL THEN RETURN 'VIOLATION null result'; END IF;
  FOR c IN SELECT e FROM jsonb_array_elements(coalesce(f->'all', '[]')) e
           UNION ALL SELECT e FROM jsonb_array_elements(coalesce(f->'any', '[]')) e LOOP
    a1 := pg_temp.m(jsonb_build_object('all', jsonb_build_array(c)), p);
    y1 := pg_temp.m(jsonb_build_object('any', jsonb_build_array(c)), p);
    IF a1 IS DISTINCT FROM y1 THEN RETURN 'VIOLATION all/any disagree on ' || c; END IF;
    neg := CASE c->>'op' WHEN 'eq' THEN 'neq' WHEN 'neq' THEN 'eq' WHEN 'contains' THEN 'not_contains'
                          WHEN 'not_contains' THEN 'contains' WHEN 'is_empty' THEN 'is_not_empty'
                          WHEN 'is_not_empty' THEN 'is_empty' END;
    IF neg IS NOT NULL THEN
      nr := pg_temp.m(jsonb_build_object('all', jsonb_build_array(jsonb_set(c, '{op}', to_jsonb(neg)))), p);
      IF nr = a1 THEN RETURN 'VIOLATION ' || neg || ' is not the complement of ' || c; END IF;
    END IF;
  END LOOP;
  FOR c IN SELECT e FROM jsonb_array_elements(coalesce(f->'all', '[]')) e LOOP
    conj := conj AND pg_temp.m(jsonb_build_object('all', jsonb_build_array(c)), p);
  END LOOP;
  FOR c IN SELECT e FROM jsonb_array_elements(coalesce(f->'any', '[]')) e LOOP
    nany := nany + 1;
    disj := disj OR pg_temp.m(jsonb_build_object('all', jsonb_build_array(c)), p);
  END LOOP;
  IF nany = 0 THEN disj := true; END IF;
  IF r AND NOT (conj AND disj) THEN RETURN 'VIOLATION match although all/any fail'; END IF;
  IF NOT r AND conj AND disj AND f ?| ARRAY['keywords', 'view'] = false THEN
    RETURN 'VIOLATION no match although all/any hold';
  END IF;
  RETURN CASE WHEN r THEN 'match' ELSE 'nomatch' END;
END
$f$;
SELECT CASE WHEN o LIKE 'VIOLATION%%' THEN o || ' | filter ' || f::text || ' | payload ' || p::text ELSE o END, count(*)
FROM (SELECT pg_temp.fuzz_case(f, p) AS o, f, p FROM fuzz_cases) s
GROUP BY 1 ORDER BY 1;
DROP VIEW public.events_fuzz_view;
DROP TABLE public.events_fuzz_t;
SELECT 'alive', 1;
"""


def main():
    cases = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else random.randrange(1 << 30)
    r = random.Random(seed)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "cases.tsv")
        with open(path, "w") as fh:
            for i in range(cases):
                row = [str(i), json.dumps(rfilter(r)), json.dumps(rpayload(r))]
                # COPY text format: escape backslashes, tabs and newlines
                fh.write("\t".join(x.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n") for x in row) + "\n")
        sql = CHECK_SQL % {"file": path}
        p = subprocess.run(["psql", "-XAtq", "-F", "\t", "-v", "ON_ERROR_STOP=1"], input=sql,
                           capture_output=True, text=True, timeout=900)
    outcomes = {}
    violations = []
    for line in p.stdout.splitlines():
        if "\t" not in line:
            continue
        k, v = line.rsplit("\t", 1)
        if k.startswith("VIOLATION"):
            violations.append(k)
        outcomes[k] = int(v)
    alive = outcomes.pop("alive", 0) == 1
    summary = ", ".join("%s=%d" % (k, v) for k, v in sorted(outcomes.items()) if not k.startswith("VIOLATION"))
    print("events filter fuzz: seed %d, %d cases: %s" % (seed, cases, summary))
    for v in violations[:10]:
        print("VIOLATION:", v[:2000])
    if p.returncode != 0 or not alive:
        print("psql failed (rc %d): %s" % (p.returncode, p.stderr[-3000:]))
        return 1
    total = sum(v for k, v in outcomes.items())
    if total != cases:
        print("only %d of %d cases reported" % (total, cases))
        return 1
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
