-- Redaction rules, one line each (docs/audit.md).
-- credential-shaped names hide string, array and object values; numbers,
-- booleans and nulls stay
SELECT agent.redact('{"password": "hunter2", "passwd": "x", "db_pass": "x", "pwd": "x",
  "client_secret": "x", "AWS_SECRET_ACCESS_KEY": "x", "token": "x", "accessToken": "x",
  "refresh_token": "x", "apiKey": "x", "api_key": "x", "X-Api-Key": "x", "apikey": "x",
  "Authorization": "x", "cookie": "x", "Set-Cookie": "x", "private_key": "x",
  "privateKey": "x", "access_key": "x", "credentials": {"u": "a"}, "jwt": ["x"],
  "otp": "123456"}');
SELECT agent.redact('{"token_budget": 100, "tokens_in": 5, "max_tokens": "5", "password": null,
  "secret": true, "keyboard": "x", "monkey": "x", "author": "x", "secretary": "x", "passenger": "x"}');
-- nested keys are checked at every level
SELECT agent.redact('{"a": {"b": [{"token": "t"}, {"ok": "fine"}]}}');
-- values shaped like credentials, inside any string
SELECT agent.redact(jsonb_build_object(
  'hdr_b', 'Authorization: Bearer abc.DEF-123_456',
  'hdr_basic', 'Authorization: Basic dXNlcjpwYXNzd29yZA==',
  'prose', 'Basic information for the bearer of good news',
  'openai', 'key sk-proj-abcdefghijklmnopqrstuvwxyz0123 end',
  'anthropic', 'sk-ant-api03-abcdefghijklmnopqrstuvwxyz',
  'github', 'ghp_abcdefghijklmnopqrstuvwxyz0123456789',
  'github_pat', 'github_pat_11ABCDEFG0123456789_abcdefghijklmnop',
  'gitlab', 'glpat-abcdefghij0123456789',
  'slack', 'xoxb-1234567890-abcdefghij',
  'aws', 'id AKIAIOSFODNN7EXAMPLE here',
  'google', 'AIzaSyA-abcdefghijklmnopqrstuvwxyz01234',
  'jwt', 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U',
  'pem', E'-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\n-----END RSA PRIVATE KEY-----\nafter',
  'public_pem', E'-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkq\n-----END PUBLIC KEY-----',
  'url', 'postgres://bob:hunter2@db.example.com:5432/app',
  'pair', 'host=db user=bob password=hunter2 sslmode=require',
  'json_text', '{"api_key": "abc123", "name": "x"}',
  'hdr_t', 'authorization: Token abcdef123456',
  'opaque', 'Zx8Qp2Lm7Rt4Vb9Nc3Kd6Fg1Hj5Sa0We',
  'sha256', 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
  'uuid', '550e8400-e29b-41d4-a716-446655440000',
  'path', '/usr/lib/postgresql/15/lib/pg_agents.so',
  'identifier', 'this_is_a_very_long_identifier_name_2024'));
-- scalars and arrays at the root
SELECT agent.redact('"Bearer abcdefgh12345678"'), agent.redact('["ok", "ghp_abcdefghijklmnopqrstuvwxyz0123"]'),
       agent.redact('42'), agent.redact('null');
-- long strings are cut at 2048 bytes, with the original size
SELECT length(r ->> 's') AS kept, right(r ->> 's', 30) AS tail
  FROM (SELECT agent.redact(jsonb_build_object('s', repeat('abc ', 1000))) AS r) x;
-- a secret straddling the cut is redacted before the cut: nothing of it is kept
SELECT (r ->> 's') LIKE '%ghp%' OR (r ->> 's') LIKE '%abcdef%' AS leaked, right(r ->> 's', 34) AS tail
  FROM (SELECT agent.redact(jsonb_build_object('s', repeat('x', 2040) || ' ghp_abcdefghijklmnopqrstuvwxyz0123')) AS r) x;
-- nesting deeper than 8 levels is cut
SELECT agent.redact('{"1":{"2":{"3":{"4":{"5":{"6":{"7":{"8":{"9":{"10":1}}}}}}}}}}');
-- more than 500 members: the rest is counted
SELECT jsonb_array_length(r) AS kept, r -> 500 AS marker
  FROM (SELECT agent.redact(jsonb_agg(g)) AS r FROM generate_series(1, 600) g) x;
SELECT count(*) AS keys, r -> '[TRUNCATED]' AS marker
  FROM (SELECT agent.redact(jsonb_object_agg('k' || g, g)) AS r FROM generate_series(1, 600) g) x,
       jsonb_object_keys(r) GROUP BY r;
-- the whole document is capped at 64 KiB of text
SELECT length(r::text) < 70000 AS capped, r -> 'k40' AS late_value
  FROM (SELECT agent.redact(jsonb_object_agg('k' || lpad(g::text, 2, '0'), repeat('y', 2000))) AS r
          FROM generate_series(1, 40) g) x;
-- audit rows: column names and values go through the same rules
CREATE TABLE public.audit_rr_users (id int PRIMARY KEY, email text, password_hash text,
                                    settings jsonb, note text, login_count int, token_count int);
SELECT agent.audit_table('public.audit_rr_users', 'user');
INSERT INTO audit_rr_users VALUES (1, 'a@example.com', '$2b$12$abcdefghijklmnopqrstuv',
  '{"theme": "dark", "github_token": "ghp_abcdefghijklmnopqrstuvwxyz0123"}',
  'call with Bearer abcdefgh12345678', 3, 4);
UPDATE audit_rr_users SET password_hash = 'new-hash', login_count = 4 WHERE id = 1;
INSERT INTO audit_rr_users (id, note) VALUES (2, repeat('z', 5000));
SELECT action, changes FROM agent.audit_log WHERE target_type = 'user' AND target_id = '1' ORDER BY id;
SELECT length(changes ->> 'note') AS kept, right(changes ->> 'note', 24) AS tail
  FROM agent.audit_log WHERE target_type = 'user' AND target_id = '2';
-- summaries of named events are redacted too
SELECT agent._audit_event('x.redact_test', p_inputs => '{"api_key": "k", "q": "ok"}',
                          p_summary => 'called with password=hunter2');
SELECT inputs, summary FROM agent.audit_log WHERE action = 'x.redact_test';
SELECT agent.unaudit_table('public.audit_rr_users');
DROP TABLE public.audit_rr_users;
