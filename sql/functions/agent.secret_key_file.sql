CREATE FUNCTION agent.secret_key_file(setting text DEFAULT NULL, config_file text DEFAULT NULL,
                                      data_dir text DEFAULT NULL,
                                      OUT path text, OUT inside_data_directory boolean)
LANGUAGE C STABLE
AS 'MODULE_PATHNAME', 'pg_agents_secret_key_file_info';
COMMENT ON FUNCTION agent.secret_key_file(text, text, text) IS
  'The key file of the secrets store and whether it lies inside the data directory (a base backup then holds key and ciphertext together): pg_agents.secret_key_file when set (relative: from the data directory), else pg_agents.key beside config_file when that lies outside the data directory, else in the data directory (a key file left there by an earlier version is kept). Without arguments, this server''s file; with any, the choice for those values (NULL: the server''s). Superusers only.';
