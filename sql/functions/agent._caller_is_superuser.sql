CREATE FUNCTION agent._caller_is_superuser() RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT coalesce((SELECT r.rolsuper FROM pg_catalog.pg_roles r
                    WHERE r.rolname = CASE WHEN pg_catalog.current_setting('role') = 'none'
                                           THEN pg_catalog."session_user"()::text
                                           ELSE pg_catalog.current_setting('role') END), false)
$$;
COMMENT ON FUNCTION agent._caller_is_superuser() IS
  'Internal: whether the role the caller acts as (its SET ROLE, else the session user) is a superuser, also inside a SECURITY DEFINER function.';
