CREATE TABLE agent.comment_tables (
    tbl                regclass PRIMARY KEY,
    one                boolean NOT NULL DEFAULT true CHECK (one),
    target_type_column name NOT NULL,
    target_id_column   name NOT NULL,
    body_column        name NOT NULL,
    author_column      name NOT NULL,
    registered_by      text NOT NULL DEFAULT current_user,
    registered_at      timestamptz NOT NULL DEFAULT now(),
    workspace_column   name,
    CONSTRAINT comment_tables_one_key UNIQUE (one)
);
COMMENT ON TABLE agent.comment_tables IS
  'The application table of comments the add_comment tool inserts into (at most one). Database-wide, like a catalog (a Citus reference table).';
COMMENT ON COLUMN agent.comment_tables.tbl IS 'The application table of comments.';
COMMENT ON COLUMN agent.comment_tables.one IS 'Always true: at most one comment table is registered.';
COMMENT ON COLUMN agent.comment_tables.target_type_column IS 'Column holding the resource type of the commented resource (page, or the type of a row).';
COMMENT ON COLUMN agent.comment_tables.target_id_column IS 'Column holding the id of the commented resource.';
COMMENT ON COLUMN agent.comment_tables.body_column IS 'Column holding the text of the comment.';
COMMENT ON COLUMN agent.comment_tables.author_column IS 'Column holding the author: agent:<id> (user:<id> for a manual run) for a comment of the add_comment tool.';
COMMENT ON COLUMN agent.comment_tables.registered_by IS 'Role that registered the table.';
COMMENT ON COLUMN agent.comment_tables.registered_at IS 'When it was registered.';
COMMENT ON COLUMN agent.comment_tables.workspace_column IS 'Column add_comment sets to the run''s workspace, for a comment table holding the comments of several workspaces; NULL: none.';
