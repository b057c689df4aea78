-- §7.1: agent.can_access / agent.explain_access, every cell of the matrix.
--
-- The cells: regime x mode x direct grant (none/read/edit) x workspace_shared
-- grant (none/read/edit) x the subject's ACL (none, user read/edit, group
-- read/edit) x the resource shared with the whole workspace (none/read/edit).
-- The subject is the owner for autonomous runs and the calling user for
-- manual runs.  Each cell has its own agent, owner, user and resource, and its
-- expected reason is written out below (docs/access.md gives the rules).
-- Then: suspended, deleted and unknown agents, workspace isolation, run-time
-- evaluation of workspace shares, a custom ACL function, bad arguments.
BEGIN;
SELECT plan(388);

CREATE TEMP TABLE cells (n int PRIMARY KEY, regime text, mode text, grant_state text,
                         ws_grant text, acl text, ws_share text, expected text);
INSERT INTO cells VALUES
  (1, 'autonomous', 'read', 'none', 'none', 'none', 'none', 'not_granted'),
  (2, 'autonomous', 'read', 'none', 'none', 'none', 'read', 'not_granted'),
  (3, 'autonomous', 'read', 'none', 'none', 'none', 'edit', 'not_granted'),
  (4, 'autonomous', 'read', 'none', 'none', 'user-read', 'none', 'not_granted'),
  (5, 'autonomous', 'read', 'none', 'none', 'user-read', 'read', 'not_granted'),
  (6, 'autonomous', 'read', 'none', 'none', 'user-read', 'edit', 'not_granted'),
  (7, 'autonomous', 'read', 'none', 'none', 'user-edit', 'none', 'not_granted'),
  (8, 'autonomous', 'read', 'none', 'none', 'user-edit', 'read', 'not_granted'),
  (9, 'autonomous', 'read', 'none', 'none', 'user-edit', 'edit', 'not_granted'),
  (10, 'autonomous', 'read', 'none', 'none', 'group-read', 'none', 'not_granted'),
  (11, 'autonomous', 'read', 'none', 'none', 'group-read', 'read', 'not_granted'),
  (12, 'autonomous', 'read', 'none', 'none', 'group-read', 'edit', 'not_granted'),
  (13, 'autonomous', 'read', 'none', 'none', 'group-edit', 'none', 'not_granted'),
  (14, 'autonomous', 'read', 'none', 'none', 'group-edit', 'read', 'not_granted'),
  (15, 'autonomous', 'read', 'none', 'none', 'group-edit', 'edit', 'not_granted'),
  (16, 'autonomous', 'read', 'none', 'read', 'none', 'none', 'not_granted'),
  (17, 'autonomous', 'read', 'none', 'read', 'none', 'read', 'granted_workspace_shared'),
  (18, 'autonomous', 'read', 'none', 'read', 'none', 'edit', 'granted_workspace_shared'),
  (19, 'autonomous', 'read', 'none', 'read', 'user-read', 'none', 'not_granted'),
  (20, 'autonomous', 'read', 'none', 'read', 'user-read', 'read', 'granted_workspace_shared'),
  (21, 'autonomous', 'read', 'none', 'read', 'user-read', 'edit', 'granted_workspace_shared'),
  (22, 'autonomous', 'read', 'none', 'read', 'user-edit', 'none', 'not_granted'),
  (23, 'autonomous', 'read', 'none', 'read', 'user-edit', 'read', 'granted_workspace_shared'),
  (24, 'autonomous', 'read', 'none', 'read', 'user-edit', 'edit', 'granted_workspace_shared'),
  (25, 'autonomous', 'read', 'none', 'read', 'group-read', 'none', 'not_granted'),
  (26, 'autonomous', 'read', 'none', 'read', 'group-read', 'read', 'granted_workspace_shared'),
  (27, 'autonomous', 'read', 'none', 'read', 'group-read', 'edit', 'granted_workspace_shared'),
  (28, 'autonomous', 'read', 'none', 'read', 'group-edit', 'none', 'not_granted'),
  (29, 'autonomous', 'read', 'none', 'read', 'group-edit', 'read', 'granted_workspace_shared'),
  (30, 'autonomous', 'read', 'none', 'read', 'group-edit', 'edit', 'granted_workspace_shared'),
  (31, 'autonomous', 'read', 'none', 'edit', 'none', 'none', 'not_granted'),
  (32, 'autonomous', 'read', 'none', 'edit', 'none', 'read', 'granted_workspace_shared'),
  (33, 'autonomous', 'read', 'none', 'edit', 'none', 'edit', 'granted_workspace_shared'),
  (34, 'autonomous', 'read', 'none', 'edit', 'user-read', 'none', 'not_granted'),
  (35, 'autonomous', 'read', 'none', 'edit', 'user-read', 'read', 'granted_workspace_shared'),
  (36, 'autonomous', 'read', 'none', 'edit', 'user-read', 'edit', 'granted_workspace_shared'),
  (37, 'autonomous', 'read', 'none', 'edit', 'user-edit', 'none', 'not_granted'),
  (38, 'autonomous', 'read', 'none', 'edit', 'user-edit', 'read', 'granted_workspace_shared'),
  (39, 'autonomous', 'read', 'none', 'edit', 'user-edit', 'edit', 'granted_workspace_shared'),
  (40, 'autonomous', 'read', 'none', 'edit', 'group-read', 'none', 'not_granted'),
  (41, 'autonomous', 'read', 'none', 'edit', 'group-read', 'read', 'granted_workspace_shared'),
  (42, 'autonomous', 'read', 'none', 'edit', 'group-read', 'edit', 'granted_workspace_shared'),
  (43, 'autonomous', 'read', 'none', 'edit', 'group-edit', 'none', 'not_granted'),
  (44, 'autonomous', 'read', 'none', 'edit', 'group-edit', 'read', 'granted_workspace_shared'),
  (45, 'autonomous', 'read', 'none', 'edit', 'group-edit', 'edit', 'granted_workspace_shared'),
  (46, 'autonomous', 'read', 'read', 'none', 'none', 'none', 'owner_denied'),
  (47, 'autonomous', 'read', 'read', 'none', 'none', 'read', 'granted'),
  (48, 'autonomous', 'read', 'read', 'none', 'none', 'edit', 'granted'),
  (49, 'autonomous', 'read', 'read', 'none', 'user-read', 'none', 'granted'),
  (50, 'autonomous', 'read', 'read', 'none', 'user-read', 'read', 'granted'),
  (51, 'autonomous', 'read', 'read', 'none', 'user-read', 'edit', 'granted'),
  (52, 'autonomous', 'read', 'read', 'none', 'user-edit', 'none', 'granted'),
  (53, 'autonomous', 'read', 'read', 'none', 'user-edit', 'read', 'granted'),
  (54, 'autonomous', 'read', 'read', 'none', 'user-edit', 'edit', 'granted'),
  (55, 'autonomous', 'read', 'read', 'none', 'group-read', 'none', 'granted'),
  (56, 'autonomous', 'read', 'read', 'none', 'group-read', 'read', 'granted'),
  (57, 'autonomous', 'read', 'read', 'none', 'group-read', 'edit', 'granted'),
  (58, 'autonomous', 'read', 'read', 'none', 'group-edit', 'none', 'granted'),
  (59, 'autonomous', 'read', 'read', 'none', 'group-edit', 'read', 'granted'),
  (60, 'autonomous', 'read', 'read', 'none', 'group-edit', 'edit', 'granted'),
  (61, 'autonomous', 'read', 'read', 'read', 'none', 'none', 'owner_denied'),
  (62, 'autonomous', 'read', 'read', 'read', 'none', 'read', 'granted'),
  (63, 'autonomous', 'read', 'read', 'read', 'none', 'edit', 'granted'),
  (64, 'autonomous', 'read', 'read', 'read', 'user-read', 'none', 'granted'),
  (65, 'autonomous', 'read', 'read', 'read', 'user-read', 'read', 'granted'),
  (66, 'autonomous', 'read', 'read', 'read', 'user-read', 'edit', 'granted'),
  (67, 'autonomous', 'read', 'read', 'read', 'user-edit', 'none', 'granted'),
  (68, 'autonomous', 'read', 'read', 'read', 'user-edit', 'read', 'granted'),
  (69, 'autonomous', 'read', 'read', 'read', 'user-edit', 'edit', 'granted'),
  (70, 'autonomous', 'read', 'read', 'read', 'group-read', 'none', 'granted'),
  (71, 'autonomous', 'read', 'read', 'read', 'group-read', 'read', 'granted'),
  (72, 'autonomous', 'read', 'read', 'read', 'group-read', 'edit', 'granted'),
  (73, 'autonomous', 'read', 'read', 'read', 'group-edit', 'none', 'granted'),
  (74, 'autonomous', 'read', 'read', 'read', 'group-edit', 'read', 'granted'),
  (75, 'autonomous', 'read', 'read', 'read', 'group-edit', 'edit', 'granted'),
  (76, 'autonomous', 'read', 'read', 'edit', 'none', 'none', 'owner_denied'),
  (77, 'autonomous', 'read', 'read', 'edit', 'none', 'read', 'granted'),
  (78, 'autonomous', 'read', 'read', 'edit', 'none', 'edit', 'granted'),
  (79, 'autonomous', 'read', 'read', 'edit', 'user-read', 'none', 'granted'),
  (80, 'autonomous', 'read', 'read', 'edit', 'user-read', 'read', 'granted'),
  (81, 'autonomous', 'read', 'read', 'edit', 'user-read', 'edit', 'granted'),
  (82, 'autonomous', 'read', 'read', 'edit', 'user-edit', 'none', 'granted'),
  (83, 'autonomous', 'read', 'read', 'edit', 'user-edit', 'read', 'granted'),
  (84, 'autonomous', 'read', 'read', 'edit', 'user-edit', 'edit', 'granted'),
  (85, 'autonomous', 'read', 'read', 'edit', 'group-read', 'none', 'granted'),
  (86, 'autonomous', 'read', 'read', 'edit', 'group-read', 'read', 'granted'),
  (87, 'autonomous', 'read', 'read', 'edit', 'group-read', 'edit', 'granted'),
  (88, 'autonomous', 'read', 'read', 'edit', 'group-edit', 'none', 'granted'),
  (89, 'autonomous', 'read', 'read', 'edit', 'group-edit', 'read', 'granted'),
  (90, 'autonomous', 'read', 'read', 'edit', 'group-edit', 'edit', 'granted'),
  (91, 'autonomous', 'read', 'edit', 'none', 'none', 'none', 'owner_denied'),
  (92, 'autonomous', 'read', 'edit', 'none', 'none', 'read', 'granted'),
  (93, 'autonomous', 'read', 'edit', 'none', 'none', 'edit', 'granted'),
  (94, 'autonomous', 'read', 'edit', 'none', 'user-read', 'none', 'granted'),
  (95, 'autonomous', 'read', 'edit', 'none', 'user-read', 'read', 'granted'),
  (96, 'autonomous', 'read', 'edit', 'none', 'user-read', 'edit', 'granted'),
  (97, 'autonomous', 'read', 'edit', 'none', 'user-edit', 'none', 'granted'),
  (98, 'autonomous', 'read', 'edit', 'none', 'user-edit', 'read', 'granted'),
  (99, 'autonomous', 'read', 'edit', 'none', 'user-edit', 'edit', 'granted'),
  (100, 'autonomous', 'read', 'edit', 'none', 'group-read', 'none', 'granted'),
  (101, 'autonomous', 'read', 'edit', 'none', 'group-read', 'read', 'granted'),
  (102, 'autonomous', 'read', 'edit', 'none', 'group-read', 'edit', 'granted'),
  (103, 'autonomous', 'read', 'edit', 'none', 'group-edit', 'none', 'granted'),
  (104, 'autonomous', 'read', 'edit', 'none', 'group-edit', 'read', 'granted'),
  (105, 'autonomous', 'read', 'edit', 'none', 'group-edit', 'edit', 'granted'),
  (106, 'autonomous', 'read', 'edit', 'read', 'none', 'none', 'owner_denied'),
  (107, 'autonomous', 'read', 'edit', 'read', 'none', 'read', 'granted'),
  (108, 'autonomous', 'read', 'edit', 'read', 'none', 'edit', 'granted'),
  (109, 'autonomous', 'read', 'edit', 'read', 'user-read', 'none', 'granted'),
  (110, 'autonomous', 'read', 'edit', 'read', 'user-read', 'read', 'granted'),
  (111, 'autonomous', 'read', 'edit', 'read', 'user-read', 'edit', 'granted'),
  (112, 'autonomous', 'read', 'edit', 'read', 'user-edit', 'none', 'granted'),
  (113, 'autonomous', 'read', 'edit', 'read', 'user-edit', 'read', 'granted'),
  (114, 'autonomous', 'read', 'edit', 'read', 'user-edit', 'edit', 'granted'),
  (115, 'autonomous', 'read', 'edit', 'read', 'group-read', 'none', 'granted'),
  (116, 'autonomous', 'read', 'edit', 'read', 'group-read', 'read', 'granted'),
  (117, 'autonomous', 'read', 'edit', 'read', 'group-read', 'edit', 'granted'),
  (118, 'autonomous', 'read', 'edit', 'read', 'group-edit', 'none', 'granted'),
  (119, 'autonomous', 'read', 'edit', 'read', 'group-edit', 'read', 'granted'),
  (120, 'autonomous', 'read', 'edit', 'read', 'group-edit', 'edit', 'granted'),
  (121, 'autonomous', 'read', 'edit', 'edit', 'none', 'none', 'owner_denied'),
  (122, 'autonomous', 'read', 'edit', 'edit', 'none', 'read', 'granted'),
  (123, 'autonomous', 'read', 'edit', 'edit', 'none', 'edit', 'granted'),
  (124, 'autonomous', 'read', 'edit', 'edit', 'user-read', 'none', 'granted'),
  (125, 'autonomous', 'read', 'edit', 'edit', 'user-read', 'read', 'granted'),
  (126, 'autonomous', 'read', 'edit', 'edit', 'user-read', 'edit', 'granted'),
  (127, 'autonomous', 'read', 'edit', 'edit', 'user-edit', 'none', 'granted'),
  (128, 'autonomous', 'read', 'edit', 'edit', 'user-edit', 'read', 'granted'),
  (129, 'autonomous', 'read', 'edit', 'edit', 'user-edit', 'edit', 'granted'),
  (130, 'autonomous', 'read', 'edit', 'edit', 'group-read', 'none', 'granted'),
  (131, 'autonomous', 'read', 'edit', 'edit', 'group-read', 'read', 'granted'),
  (132, 'autonomous', 'read', 'edit', 'edit', 'group-read', 'edit', 'granted'),
  (133, 'autonomous', 'read', 'edit', 'edit', 'group-edit', 'none', 'granted'),
  (134, 'autonomous', 'read', 'edit', 'edit', 'group-edit', 'read', 'granted'),
  (135, 'autonomous', 'read', 'edit', 'edit', 'group-edit', 'edit', 'granted'),
  (136, 'autonomous', 'edit', 'none', 'none', 'none', 'none', 'not_granted'),
  (137, 'autonomous', 'edit', 'none', 'none', 'none', 'read', 'not_granted'),
  (138, 'autonomous', 'edit', 'none', 'none', 'none', 'edit', 'not_granted'),
  (139, 'autonomous', 'edit', 'none', 'none', 'user-read', 'none', 'not_granted'),
  (140, 'autonomous', 'edit', 'none', 'none', 'user-read', 'read', 'not_granted'),
  (141, 'autonomous', 'edit', 'none', 'none', 'user-read', 'edit', 'not_granted'),
  (142, 'autonomous', 'edit', 'none', 'none', 'user-edit', 'none', 'not_granted'),
  (143, 'autonomous', 'edit', 'none', 'none', 'user-edit', 'read', 'not_granted'),
  (144, 'autonomous', 'edit', 'none', 'none', 'user-edit', 'edit', 'not_granted'),
  (145, 'autonomous', 'edit', 'none', 'none', 'group-read', 'none', 'not_granted'),
  (146, 'autonomous', 'edit', 'none', 'none', 'group-read', 'read', 'not_granted'),
  (147, 'autonomous', 'edit', 'none', 'none', 'group-read', 'edit', 'not_granted'),
  (148, 'autonomous', 'edit', 'none', 'none', 'group-edit', 'none', 'not_granted'),
  (149, 'autonomous', 'edit', 'none', 'none', 'group-edit', 'read', 'not_granted'),
  (150, 'autonomous', 'edit', 'none', 'none', 'group-edit', 'edit', 'not_granted'),
  (151, 'autonomous', 'edit', 'none', 'read', 'none', 'none', 'not_granted'),
  (152, 'autonomous', 'edit', 'none', 'read', 'none', 'read', 'grant_read_only'),
  (153, 'autonomous', 'edit', 'none', 'read', 'none', 'edit', 'grant_read_only'),
  (154, 'autonomous', 'edit', 'none', 'read', 'user-read', 'none', 'not_granted'),
  (155, 'autonomous', 'edit', 'none', 'read', 'user-read', 'read', 'grant_read_only'),
  (156, 'autonomous', 'edit', 'none', 'read', 'user-read', 'edit', 'grant_read_only'),
  (157, 'autonomous', 'edit', 'none', 'read', 'user-edit', 'none', 'not_granted'),
  (158, 'autonomous', 'edit', 'none', 'read', 'user-edit', 'read', 'grant_read_only'),
  (159, 'autonomous', 'edit', 'none', 'read', 'user-edit', 'edit', 'grant_read_only'),
  (160, 'autonomous', 'edit', 'none', 'read', 'group-read', 'none', 'not_granted'),
  (161, 'autonomous', 'edit', 'none', 'read', 'group-read', 'read', 'grant_read_only'),
  (162, 'autonomous', 'edit', 'none', 'read', 'group-read', 'edit', 'grant_read_only'),
  (163, 'autonomous', 'edit', 'none', 'read', 'group-edit', 'none', 'not_granted'),
  (164, 'autonomous', 'edit', 'none', 'read', 'group-edit', 'read', 'grant_read_only'),
  (165, 'autonomous', 'edit', 'none', 'read', 'group-edit', 'edit', 'grant_read_only'),
  (166, 'autonomous', 'edit', 'none', 'edit', 'none', 'none', 'not_granted'),
  (167, 'autonomous', 'edit', 'none', 'edit', 'none', 'read', 'owner_denied'),
  (168, 'autonomous', 'edit', 'none', 'edit', 'none', 'edit', 'granted_workspace_shared'),
  (169, 'autonomous', 'edit', 'none', 'edit', 'user-read', 'none', 'not_granted'),
  (170, 'autonomous', 'edit', 'none', 'edit', 'user-read', 'read', 'owner_denied'),
  (171, 'autonomous', 'edit', 'none', 'edit', 'user-read', 'edit', 'granted_workspace_shared'),
  (172, 'autonomous', 'edit', 'none', 'edit', 'user-edit', 'none', 'not_granted'),
  (173, 'autonomous', 'edit', 'none', 'edit', 'user-edit', 'read', 'owner_denied'),
  (174, 'autonomous', 'edit', 'none', 'edit', 'user-edit', 'edit', 'granted_workspace_shared'),
  (175, 'autonomous', 'edit', 'none', 'edit', 'group-read', 'none', 'not_granted'),
  (176, 'autonomous', 'edit', 'none', 'edit', 'group-read', 'read', 'owner_denied'),
  (177, 'autonomous', 'edit', 'none', 'edit', 'group-read', 'edit', 'granted_workspace_shared'),
  (178, 'autonomous', 'edit', 'none', 'edit', 'group-edit', 'none', 'not_granted'),
  (179, 'autonomous', 'edit', 'none', 'edit', 'group-edit', 'read', 'owner_denied'),
  (180, 'autonomous', 'edit', 'none', 'edit', 'group-edit', 'edit', 'granted_workspace_shared'),
  (181, 'autonomous', 'edit', 'read', 'none', 'none', 'none', 'grant_read_only'),
  (182, 'autonomous', 'edit', 'read', 'none', 'none', 'read', 'grant_read_only'),
  (183, 'autonomous', 'edit', 'read', 'none', 'none', 'edit', 'grant_read_only'),
  (184, 'autonomous', 'edit', 'read', 'none', 'user-read', 'none', 'grant_read_only'),
  (185, 'autonomous', 'edit', 'read', 'none', 'user-read', 'read', 'grant_read_only'),
  (186, 'autonomous', 'edit', 'read', 'none', 'user-read', 'edit', 'grant_read_only'),
  (187, 'autonomous', 'edit', 'read', 'none', 'user-edit', 'none', 'grant_read_only'),
  (188, 'autonomous', 'edit', 'read', 'none', 'user-edit', 'read', 'grant_read_only'),
  (189, 'autonomous', 'edit', 'read', 'none', 'user-edit', 'edit', 'grant_read_only'),
  (190, 'autonomous', 'edit', 'read', 'none', 'group-read', 'none', 'grant_read_only'),
  (191, 'autonomous', 'edit', 'read', 'none', 'group-read', 'read', 'grant_read_only'),
  (192, 'autonomous', 'edit', 'read', 'none', 'group-read', 'edit', 'grant_read_only'),
  (193, 'autonomous', 'edit', 'read', 'none', 'group-edit', 'none', 'grant_read_only'),
  (194, 'autonomous', 'edit', 'read', 'none', 'group-edit', 'read', 'grant_read_only'),
  (195, 'autonomous', 'edit', 'read', 'none', 'group-edit', 'edit', 'grant_read_only'),
  (196, 'autonomous', 'edit', 'read', 'read', 'none', 'none', 'grant_read_only'),
  (197, 'autonomous', 'edit', 'read', 'read', 'none', 'read', 'grant_read_only'),
  (198, 'autonomous', 'edit', 'read', 'read', 'none', 'edit', 'grant_read_only'),
  (199, 'autonomous', 'edit', 'read', 'read', 'user-read', 'none', 'grant_read_only'),
  (200, 'autonomous', 'edit', 'read', 'read', 'user-read', 'read', 'grant_read_only'),
  (201, 'autonomous', 'edit', 'read', 'read', 'user-read', 'edit', 'grant_read_only'),
  (202, 'autonomous', 'edit', 'read', 'read', 'user-edit', 'none', 'grant_read_only'),
  (203, 'autonomous', 'edit', 'read', 'read', 'user-edit', 'read', 'grant_read_only'),
  (204, 'autonomous', 'edit', 'read', 'read', 'user-edit', 'edit', 'grant_read_only'),
  (205, 'autonomous', 'edit', 'read', 'read', 'group-read', 'none', 'grant_read_only'),
  (206, 'autonomous', 'edit', 'read', 'read', 'group-read', 'read', 'grant_read_only'),
  (207, 'autonomous', 'edit', 'read', 'read', 'group-read', 'edit', 'grant_read_only'),
  (208, 'autonomous', 'edit', 'read', 'read', 'group-edit', 'none', 'grant_read_only'),
  (209, 'autonomous', 'edit', 'read', 'read', 'group-edit', 'read', 'grant_read_only'),
  (210, 'autonomous', 'edit', 'read', 'read', 'group-edit', 'edit', 'grant_read_only'),
  (211, 'autonomous', 'edit', 'read', 'edit', 'none', 'none', 'grant_read_only'),
  (212, 'autonomous', 'edit', 'read', 'edit', 'none', 'read', 'grant_read_only'),
  (213, 'autonomous', 'edit', 'read', 'edit', 'none', 'edit', 'granted_workspace_shared'),
  (214, 'autonomous', 'edit', 'read', 'edit', 'user-read', 'none', 'grant_read_only'),
  (215, 'autonomous', 'edit', 'read', 'edit', 'user-read', 'read', 'grant_read_only'),
  (216, 'autonomous', 'edit', 'read', 'edit', 'user-read', 'edit', 'granted_workspace_shared'),
  (217, 'autonomous', 'edit', 'read', 'edit', 'user-edit', 'none', 'grant_read_only'),
  (218, 'autonomous', 'edit', 'read', 'edit', 'user-edit', 'read', 'grant_read_only'),
  (219, 'autonomous', 'edit', 'read', 'edit', 'user-edit', 'edit', 'granted_workspace_shared'),
  (220, 'autonomous', 'edit', 'read', 'edit', 'group-read', 'none', 'grant_read_only'),
  (221, 'autonomous', 'edit', 'read', 'edit', 'group-read', 'read', 'grant_read_only'),
  (222, 'autonomous', 'edit', 'read', 'edit', 'group-read', 'edit', 'granted_workspace_shared'),
  (223, 'autonomous', 'edit', 'read', 'edit', 'group-edit', 'none', 'grant_read_only'),
  (224, 'autonomous', 'edit', 'read', 'edit', 'group-edit', 'read', 'grant_read_only'),
  (225, 'autonomous', 'edit', 'read', 'edit', 'group-edit', 'edit', 'granted_workspace_shared'),
  (226, 'autonomous', 'edit', 'edit', 'none', 'none', 'none', 'owner_denied'),
  (227, 'autonomous', 'edit', 'edit', 'none', 'none', 'read', 'owner_denied'),
  (228, 'autonomous', 'edit', 'edit', 'none', 'none', 'edit', 'granted'),
  (229, 'autonomous', 'edit', 'edit', 'none', 'user-read', 'none', 'owner_denied'),
  (230, 'autonomous', 'edit', 'edit', 'none', 'user-read', 'read', 'owner_denied'),
  (231, 'autonomous', 'edit', 'edit', 'none', 'user-read', 'edit', 'granted'),
  (232, 'autonomous', 'edit', 'edit', 'none', 'user-edit', 'none', 'granted'),
  (233, 'autonomous', 'edit', 'edit', 'none', 'user-edit', 'read', 'granted'),
  (234, 'autonomous', 'edit', 'edit', 'none', 'user-edit', 'edit', 'granted'),
  (235, 'autonomous', 'edit', 'edit', 'none', 'group-read', 'none', 'owner_denied'),
  (236, 'autonomous', 'edit', 'edit', 'none', 'group-read', 'read', 'owner_denied'),
  (237, 'autonomous', 'edit', 'edit', 'none', 'group-read', 'edit', 'granted'),
  (238, 'autonomous', 'edit', 'edit', 'none', 'group-edit', 'none', 'granted'),
  (239, 'autonomous', 'edit', 'edit', 'none', 'group-edit', 'read', 'granted'),
  (240, 'autonomous', 'edit', 'edit', 'none', 'group-edit', 'edit', 'granted'),
  (241, 'autonomous', 'edit', 'edit', 'read', 'none', 'none', 'owner_denied'),
  (242, 'autonomous', 'edit', 'edit', 'read', 'none', 'read', 'owner_denied'),
  (243, 'autonomous', 'edit', 'edit', 'read', 'none', 'edit', 'granted'),
  (244, 'autonomous', 'edit', 'edit', 'read', 'user-read', 'none', 'owner_denied'),
  (245, 'autonomous', 'edit', 'edit', 'read', 'user-read', 'read', 'owner_denied'),
  (246, 'autonomous', 'edit', 'edit', 'read', 'user-read', 'edit', 'granted'),
  (247, 'autonomous', 'edit', 'edit', 'read', 'user-edit', 'none', 'granted'),
  (248, 'autonomous', 'edit', 'edit', 'read', 'user-edit', 'read', 'granted'),
  (249, 'autonomous', 'edit', 'edit', 'read', 'user-edit', 'edit', 'granted'),
  (250, 'autonomous', 'edit', 'edit', 'read', 'group-read', 'none', 'owner_denied'),
  (251, 'autonomous', 'edit', 'edit', 'read', 'group-read', 'read', 'owner_denied'),
  (252, 'autonomous', 'edit', 'edit', 'read', 'group-read', 'edit', 'granted'),
  (253, 'autonomous', 'edit', 'edit', 'read', 'group-edit', 'none', 'granted'),
  (254, 'autonomous', 'edit', 'edit', 'read', 'group-edit', 'read', 'granted'),
  (255, 'autonomous', 'edit', 'edit', 'read', 'group-edit', 'edit', 'granted'),
  (256, 'autonomous', 'edit', 'edit', 'edit', 'none', 'none', 'owner_denied'),
  (257, 'autonomous', 'edit', 'edit', 'edit', 'none', 'read', 'owner_denied'),
  (258, 'autonomous', 'edit', 'edit', 'edit', 'none', 'edit', 'granted'),
  (259, 'autonomous', 'edit', 'edit', 'edit', 'user-read', 'none', 'owner_denied'),
  (260, 'autonomous', 'edit', 'edit', 'edit', 'user-read', 'read', 'owner_denied'),
  (261, 'autonomous', 'edit', 'edit', 'edit', 'user-read', 'edit', 'granted'),
  (262, 'autonomous', 'edit', 'edit', 'edit', 'user-edit', 'none', 'granted'),
  (263, 'autonomous', 'edit', 'edit', 'edit', 'user-edit', 'read', 'granted'),
  (264, 'autonomous', 'edit', 'edit', 'edit', 'user-edit', 'edit', 'granted'),
  (265, 'autonomous', 'edit', 'edit', 'edit', 'group-read', 'none', 'owner_denied'),
  (266, 'autonomous', 'edit', 'edit', 'edit', 'group-read', 'read', 'owner_denied'),
  (267, 'autonomous', 'edit', 'edit', 'edit', 'group-read', 'edit', 'granted'),
  (268, 'autonomous', 'edit', 'edit', 'edit', 'group-edit', 'none', 'granted'),
  (269, 'autonomous', 'edit', 'edit', 'edit', 'group-edit', 'read', 'granted'),
  (270, 'autonomous', 'edit', 'edit', 'edit', 'group-edit', 'edit', 'granted'),
  (271, 'manual', 'read', 'none', 'none', 'none', 'none', 'user_denied'),
  (272, 'manual', 'read', 'none', 'none', 'none', 'read', 'granted'),
  (273, 'manual', 'read', 'none', 'none', 'none', 'edit', 'granted'),
  (274, 'manual', 'read', 'none', 'none', 'user-read', 'none', 'granted'),
  (275, 'manual', 'read', 'none', 'none', 'user-read', 'read', 'granted'),
  (276, 'manual', 'read', 'none', 'none', 'user-read', 'edit', 'granted'),
  (277, 'manual', 'read', 'none', 'none', 'user-edit', 'none', 'granted'),
  (278, 'manual', 'read', 'none', 'none', 'user-edit', 'read', 'granted'),
  (279, 'manual', 'read', 'none', 'none', 'user-edit', 'edit', 'granted'),
  (280, 'manual', 'read', 'none', 'none', 'group-read', 'none', 'granted'),
  (281, 'manual', 'read', 'none', 'none', 'group-read', 'read', 'granted'),
  (282, 'manual', 'read', 'none', 'none', 'group-read', 'edit', 'granted'),
  (283, 'manual', 'read', 'none', 'none', 'group-edit', 'none', 'granted'),
  (284, 'manual', 'read', 'none', 'none', 'group-edit', 'read', 'granted'),
  (285, 'manual', 'read', 'none', 'none', 'group-edit', 'edit', 'granted'),
  (286, 'manual', 'read', 'edit', 'none', 'none', 'none', 'user_denied'),
  (287, 'manual', 'read', 'edit', 'none', 'none', 'read', 'granted'),
  (288, 'manual', 'read', 'edit', 'none', 'none', 'edit', 'granted'),
  (289, 'manual', 'read', 'edit', 'none', 'user-read', 'none', 'granted'),
  (290, 'manual', 'read', 'edit', 'none', 'user-read', 'read', 'granted'),
  (291, 'manual', 'read', 'edit', 'none', 'user-read', 'edit', 'granted'),
  (292, 'manual', 'read', 'edit', 'none', 'user-edit', 'none', 'granted'),
  (293, 'manual', 'read', 'edit', 'none', 'user-edit', 'read', 'granted'),
  (294, 'manual', 'read', 'edit', 'none', 'user-edit', 'edit', 'granted'),
  (295, 'manual', 'read', 'edit', 'none', 'group-read', 'none', 'granted'),
  (296, 'manual', 'read', 'edit', 'none', 'group-read', 'read', 'granted'),
  (297, 'manual', 'read', 'edit', 'none', 'group-read', 'edit', 'granted'),
  (298, 'manual', 'read', 'edit', 'none', 'group-edit', 'none', 'granted'),
  (299, 'manual', 'read', 'edit', 'none', 'group-edit', 'read', 'granted'),
  (300, 'manual', 'read', 'edit', 'none', 'group-edit', 'edit', 'granted'),
  (301, 'manual', 'edit', 'none', 'none', 'none', 'none', 'user_denied'),
  (302, 'manual', 'edit', 'none', 'none', 'none', 'read', 'user_denied'),
  (303, 'manual', 'edit', 'none', 'none', 'none', 'edit', 'granted'),
  (304, 'manual', 'edit', 'none', 'none', 'user-read', 'none', 'user_denied'),
  (305, 'manual', 'edit', 'none', 'none', 'user-read', 'read', 'user_denied'),
  (306, 'manual', 'edit', 'none', 'none', 'user-read', 'edit', 'granted'),
  (307, 'manual', 'edit', 'none', 'none', 'user-edit', 'none', 'granted'),
  (308, 'manual', 'edit', 'none', 'none', 'user-edit', 'read', 'granted'),
  (309, 'manual', 'edit', 'none', 'none', 'user-edit', 'edit', 'granted'),
  (310, 'manual', 'edit', 'none', 'none', 'group-read', 'none', 'user_denied'),
  (311, 'manual', 'edit', 'none', 'none', 'group-read', 'read', 'user_denied'),
  (312, 'manual', 'edit', 'none', 'none', 'group-read', 'edit', 'granted'),
  (313, 'manual', 'edit', 'none', 'none', 'group-edit', 'none', 'granted'),
  (314, 'manual', 'edit', 'none', 'none', 'group-edit', 'read', 'granted'),
  (315, 'manual', 'edit', 'none', 'none', 'group-edit', 'edit', 'granted'),
  (316, 'manual', 'edit', 'edit', 'none', 'none', 'none', 'user_denied'),
  (317, 'manual', 'edit', 'edit', 'none', 'none', 'read', 'user_denied'),
  (318, 'manual', 'edit', 'edit', 'none', 'none', 'edit', 'granted'),
  (319, 'manual', 'edit', 'edit', 'none', 'user-read', 'none', 'user_denied'),
  (320, 'manual', 'edit', 'edit', 'none', 'user-read', 'read', 'user_denied'),
  (321, 'manual', 'edit', 'edit', 'none', 'user-read', 'edit', 'granted'),
  (322, 'manual', 'edit', 'edit', 'none', 'user-edit', 'none', 'granted'),
  (323, 'manual', 'edit', 'edit', 'none', 'user-edit', 'read', 'granted'),
  (324, 'manual', 'edit', 'edit', 'none', 'user-edit', 'edit', 'granted'),
  (325, 'manual', 'edit', 'edit', 'none', 'group-read', 'none', 'user_denied'),
  (326, 'manual', 'edit', 'edit', 'none', 'group-read', 'read', 'user_denied'),
  (327, 'manual', 'edit', 'edit', 'none', 'group-read', 'edit', 'granted'),
  (328, 'manual', 'edit', 'edit', 'none', 'group-edit', 'none', 'granted'),
  (329, 'manual', 'edit', 'edit', 'none', 'group-edit', 'read', 'granted'),
  (330, 'manual', 'edit', 'edit', 'none', 'group-edit', 'edit', 'granted');

-- the subject whose ACL is set: the owner (autonomous) or the caller (manual)
CREATE TEMP VIEW cell_setup AS
SELECT c.*, 7200000 + c.n AS agent_id, 'mr' || c.n AS resource_id,
       CASE WHEN c.regime = 'manual' THEN 'mc' || c.n ELSE 'mo' || c.n END AS subject,
       CASE WHEN c.regime = 'manual' THEN 'mc' || c.n END AS caller
FROM cells c;

INSERT INTO agent.agents (id, workspace_id, owner_id, name)
SELECT agent_id, 'ws-matrix', 'mo' || n, 'cell ' || n FROM cell_setup;
INSERT INTO agent.access (agent_id, resource_type, resource_id, access)
SELECT agent_id, 'page', resource_id, grant_state FROM cell_setup WHERE grant_state <> 'none';
INSERT INTO agent.access (agent_id, resource_type, resource_id, access)
SELECT agent_id, 'workspace_shared', '*', ws_grant FROM cell_setup WHERE ws_grant <> 'none';
INSERT INTO agent.resource_acl (workspace_id, resource_type, resource_id, principal, access)
SELECT 'ws-matrix', 'page', resource_id, 'user:' || subject, split_part(acl, '-', 2)
FROM cell_setup WHERE acl LIKE 'user-%';
INSERT INTO agent.group_members (workspace_id, group_id, user_id)
SELECT 'ws-matrix', 'mg' || n, subject FROM cell_setup WHERE acl LIKE 'group-%';
INSERT INTO agent.resource_acl (workspace_id, resource_type, resource_id, principal, access)
SELECT 'ws-matrix', 'page', resource_id, 'group:mg' || n, split_part(acl, '-', 2)
FROM cell_setup WHERE acl LIKE 'group-%';
INSERT INTO agent.resource_acl (workspace_id, resource_type, resource_id, principal, access)
SELECT 'ws-matrix', 'page', resource_id, 'workspace', ws_share FROM cell_setup WHERE ws_share <> 'none';
-- in manual cells the owner may edit everything: the owner's ACL must not matter
INSERT INTO agent.resource_acl (workspace_id, resource_type, resource_id, principal, access)
SELECT 'ws-matrix', 'page', resource_id, 'user:mo' || n, 'edit' FROM cell_setup WHERE regime = 'manual';

SELECT is((SELECT e.reason FROM agent.explain_access(s.agent_id, 'page', s.resource_id, s.mode, s.regime, s.caller) e),
          s.expected,
          format('cell %s: %s %s, grant %s, workspace_shared grant %s, ACL %s, workspace share %s -> %s',
                 s.n, s.regime, s.mode, s.grant_state, s.ws_grant, s.acl, s.ws_share, s.expected))
FROM cell_setup s ORDER BY s.n;

SELECT is((SELECT count(*)::int FROM cell_setup s, agent.explain_access(s.agent_id, 'page', s.resource_id, s.mode, s.regime, s.caller) e
           WHERE agent.can_access(s.agent_id, 'page', s.resource_id, s.mode, s.regime, s.caller) IS DISTINCT FROM e.allowed
              OR e.allowed IS DISTINCT FROM (e.reason IN ('granted', 'granted_workspace_shared'))),
          0, 'can_access agrees with explain_access, and allowed is true exactly for granted reasons');

SELECT is((SELECT count(*)::int FROM cell_setup s
           WHERE agent.can_access(s.agent_id, 'page', s.resource_id, s.mode, s.regime, s.caller)),
          (SELECT count(*)::int FROM cells WHERE expected IN ('granted', 'granted_workspace_shared')),
          'can_access in a WHERE clause keeps exactly the granted cells');

-- ---------------------------------------------------------------------------
-- suspended, deleted, unknown
-- ---------------------------------------------------------------------------
INSERT INTO agent.agents (id, workspace_id, owner_id, name, status) VALUES (7210001, 'ws-sp', 'so1', 'suspended', 'suspended');
INSERT INTO agent.agents (id, workspace_id, owner_id, name, deleted_at) VALUES (7210002, 'ws-sp', 'so2', 'deleted', now());
INSERT INTO agent.access (agent_id, resource_type, resource_id, access) VALUES
  (7210001, 'page', 'sp1', 'edit'), (7210002, 'page', 'sp2', 'edit');
INSERT INTO agent.resource_acl (workspace_id, resource_type, resource_id, principal, access) VALUES
  ('ws-sp', 'page', 'sp1', 'user:so1', 'edit'), ('ws-sp', 'page', 'sp1', 'user:su1', 'read'),
  ('ws-sp', 'page', 'sp2', 'user:so2', 'edit'), ('ws-sp', 'page', 'sp2', 'user:su2', 'edit');

SELECT is((SELECT reason FROM agent.explain_access(7210001, 'page', 'sp1', 'read')), 'agent_suspended', 'suspended agent, autonomous read: agent_suspended');
SELECT is((SELECT reason FROM agent.explain_access(7210001, 'page', 'sp1', 'edit')), 'agent_suspended', 'suspended agent, autonomous edit: agent_suspended');
SELECT is((SELECT reason FROM agent.explain_access(7210001, 'page', 'sp1', 'read', 'manual', 'su1')), 'granted', 'suspended agent, manual read: suspension does not stop chat');
SELECT is((SELECT reason FROM agent.explain_access(7210001, 'page', 'sp1', 'edit', 'manual', 'su1')), 'user_denied', 'suspended agent, manual edit with a read ACL: user_denied');
SELECT is((SELECT reason FROM agent.explain_access(7210002, 'page', 'sp2', 'read')), 'agent_deleted', 'deleted agent, autonomous: agent_deleted');
SELECT is((SELECT reason FROM agent.explain_access(7210002, 'page', 'sp2', 'read', 'manual', 'su2')), 'agent_deleted', 'deleted agent, manual: agent_deleted');
SELECT is((SELECT reason FROM agent.explain_access(7219999, 'page', 'sp1', 'read')), 'agent_not_found', 'unknown agent, autonomous: agent_not_found');
SELECT is((SELECT reason FROM agent.explain_access(7219999, 'page', 'sp1', 'edit', 'manual', 'su1')), 'agent_not_found', 'unknown agent, manual: agent_not_found');
SELECT is(agent.can_access(7210001, 'page', 'sp1', 'read'), false, 'can_access: suspended is false, not an error');
SELECT is(agent.can_access(7210002, 'page', 'sp2', 'read', 'manual', 'su2'), false, 'can_access: deleted is false, not an error');
SELECT is(agent.can_access(7219999, 'page', 'sp1'), false, 'can_access: unknown is false, not an error');

-- ---------------------------------------------------------------------------
-- where the owner's ACL comes from: workspace isolation, types, other users
-- ---------------------------------------------------------------------------
INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES (7210003, 'ws-sp', 'so3', 'isolation');
INSERT INTO agent.access (agent_id, resource_type, resource_id, access) VALUES
  (7210003, 'page', 'sp3', 'read'), (7210003, 'page', 'sp4', 'read'), (7210003, 'page', 'sp5', 'read'),
  (7210003, 'page', 'sp6', 'read'), (7210003, 'page', 'sp7', 'read'), (7210003, 'collection', 'sp8', 'read');
INSERT INTO agent.resource_acl (workspace_id, resource_type, resource_id, principal, access) VALUES
  ('ws-other', 'page', 'sp3', 'user:so3', 'edit'),
  (NULL, 'page', 'sp4', 'user:so3', 'read'),
  ('ws-sp', 'page', 'sp5', 'group:gx', 'read'),
  ('ws-sp', 'page', 'sp6', 'user:someone_else', 'edit'),
  ('ws-other', 'page', 'sp7', 'workspace', 'edit'),
  ('ws-sp', 'page', 'sp8', 'user:so3', 'edit');
INSERT INTO agent.group_members (workspace_id, group_id, user_id) VALUES ('ws-other', 'gx', 'so3');

SELECT is((SELECT reason FROM agent.explain_access(7210003, 'page', 'sp3')), 'owner_denied', 'an ACL row of another workspace does not count');
SELECT is((SELECT reason FROM agent.explain_access(7210003, 'page', 'sp4')), 'granted', 'an ACL row without workspace counts');
SELECT is((SELECT reason FROM agent.explain_access(7210003, 'page', 'sp5')), 'owner_denied', 'a group membership of another workspace does not count');
SELECT is((SELECT reason FROM agent.explain_access(7210003, 'page', 'sp6')), 'owner_denied', 'another user''s ACL does not count for the owner');
SELECT is((SELECT reason FROM agent.explain_access(7210003, 'page', 'sp7')), 'owner_denied', 'a workspace share of another workspace does not count');
SELECT is((SELECT reason FROM agent.explain_access(7210003, 'page', 'sp8')), 'not_granted', 'a grant on a collection does not grant the page of the same id');
SELECT is((SELECT reason FROM agent.explain_access(7210003, 'collection', 'sp8')), 'owner_denied', 'an ACL on a page does not cover the collection of the same id');
SELECT is((SELECT reason FROM agent.explain_access(7210003, 'page', 'sp4', 'edit')), 'grant_read_only', 'edit on a read grant: grant_read_only');

-- ---------------------------------------------------------------------------
-- the workspace share is evaluated now, never snapshotted; grants too
-- ---------------------------------------------------------------------------
INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES (7210004, 'ws-sp', 'so4', 'dynamic');
INSERT INTO agent.access (agent_id, resource_type, resource_id, access) VALUES (7210004, 'workspace_shared', '*', 'read');
SELECT is((SELECT reason FROM agent.explain_access(7210004, 'page', 'sp9')), 'not_granted', 'not yet shared with the workspace: not_granted');
INSERT INTO agent.resource_acl (workspace_id, resource_type, resource_id, principal, access) VALUES ('ws-sp', 'page', 'sp9', 'workspace', 'read');
SELECT is((SELECT reason FROM agent.explain_access(7210004, 'page', 'sp9')), 'granted_workspace_shared', 'shared with the workspace in the same transaction: seen at once');
DELETE FROM agent.resource_acl WHERE resource_id = 'sp9';
SELECT is(agent.can_access(7210004, 'page', 'sp9'), false, 'share removed: refused at once');
INSERT INTO agent.resource_acl (workspace_id, resource_type, resource_id, principal, access) VALUES ('ws-sp', 'page', 'sp9', 'workspace', 'read');
SELECT is(agent.revoke(7210004, 'workspace_shared', '*'), true, 'revoke reports the grant it removed');
SELECT is((SELECT reason FROM agent.explain_access(7210004, 'page', 'sp9')), 'not_granted', 'workspace_shared grant revoked: not_granted at once');
UPDATE agent.agents SET status = 'suspended' WHERE id = 7210004;
SELECT is((SELECT reason FROM agent.explain_access(7210004, 'page', 'sp9')), 'agent_suspended', 'suspended in the same transaction: seen at once');

-- ---------------------------------------------------------------------------
-- a custom ACL function replaces agent.resource_acl
-- ---------------------------------------------------------------------------
CREATE FUNCTION public.matrix_acl(u text, t text, i text, m text) RETURNS boolean
LANGUAGE sql STABLE AS $$
  SELECT CASE WHEN u IS NULL THEN i = 'cw' AND m = 'read'
              ELSE u = 'co' AND (i IN ('c1', 'cw') OR (i = 'c2' AND m = 'read')) END
$$;
CREATE FUNCTION public.matrix_bad_acl(u integer) RETURNS boolean LANGUAGE sql AS $$ SELECT true $$;
INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES (7210005, 'ws-sp', 'co', 'custom acl');
INSERT INTO agent.access (agent_id, resource_type, resource_id, access) VALUES
  (7210005, 'page', 'c1', 'edit'), (7210005, 'page', 'c2', 'edit'), (7210005, 'page', 'c3', 'read'),
  (7210005, 'workspace_shared', '*', 'edit');
INSERT INTO agent.resource_acl (workspace_id, resource_type, resource_id, principal, access) VALUES
  ('ws-sp', 'page', 'c3', 'user:co', 'edit');
SELECT is((SELECT reason FROM agent.explain_access(7210005, 'page', 'c3')), 'granted', 'default ACL: the resource_acl row grants c3');
SELECT lives_ok($$SELECT agent.set_acl_function('public.matrix_acl(text,text,text,text)')$$, 'set_acl_function accepts a function of the right signature');
SELECT is((SELECT reason FROM agent.explain_access(7210005, 'page', 'c1', 'edit')), 'granted', 'custom ACL: owner may edit c1');
SELECT is((SELECT reason FROM agent.explain_access(7210005, 'page', 'c2', 'read')), 'granted', 'custom ACL: owner may read c2');
SELECT is((SELECT reason FROM agent.explain_access(7210005, 'page', 'c2', 'edit')), 'owner_denied', 'custom ACL: owner may not edit c2');
SELECT is((SELECT reason FROM agent.explain_access(7210005, 'page', 'c3')), 'owner_denied', 'custom ACL: agent.resource_acl is no longer read');
SELECT is((SELECT reason FROM agent.explain_access(7210005, 'page', 'cw')), 'granted_workspace_shared', 'custom ACL: called with a NULL user for the workspace share');
SELECT is((SELECT reason FROM agent.explain_access(7210005, 'page', 'cw', 'edit')), 'owner_denied', 'custom ACL: shared with the workspace read-only, no edit');
SELECT is((SELECT reason FROM agent.explain_access(7210005, 'page', 'c2', 'edit', 'manual', 'co')), 'user_denied', 'custom ACL, manual: user_denied');
SELECT is((SELECT reason FROM agent.explain_access(7210005, 'page', 'c1', 'edit', 'manual', 'co')), 'granted', 'custom ACL, manual: granted');
SELECT lives_ok($$SELECT agent.set_acl_function(NULL)$$, 'set_acl_function(NULL) goes back to the default');
SELECT is((SELECT reason FROM agent.explain_access(7210005, 'page', 'c3')), 'granted', 'default ACL again: the resource_acl row grants c3');
SELECT throws_ok($$SELECT agent.set_acl_function('public.matrix_bad_acl(integer)')$$, '22023',
                 'function public.matrix_bad_acl(integer) does not have the signature of an ACL function',
                 'set_acl_function refuses a function of another signature');

-- ---------------------------------------------------------------------------
-- bad arguments: can_access raises, explain_access explains
-- ---------------------------------------------------------------------------
SELECT throws_ok($$SELECT agent.can_access(7210003, 'page', 'sp4', 'write')$$, '22023', 'invalid access mode "write"', 'can_access: invalid mode raises 22023');
SELECT throws_ok($$SELECT agent.can_access(7210003, 'page', 'sp4', NULL)$$, '22023', 'invalid access mode "NULL"', 'can_access: NULL mode raises 22023');
SELECT throws_ok($$SELECT agent.can_access(7210003, 'page', 'sp4', 'read', 'robot')$$, '22023', 'invalid regime "robot"', 'can_access: invalid regime raises 22023');
SELECT throws_ok($$SELECT agent.can_access(7210003, 'page', 'sp4', 'read', 'manual')$$, '22023', 'a manual access check needs a user_id', 'can_access: manual without user raises 22023');
SELECT throws_ok($$SELECT agent.can_access(NULL, 'page', 'sp4')$$, '22023', 'agent_id, resource_type and resource_id must not be NULL', 'can_access: NULL agent raises 22023');
SELECT throws_ok($$SELECT agent.can_access(7210003, NULL, 'sp4')$$, '22023', 'agent_id, resource_type and resource_id must not be NULL', 'can_access: NULL resource type raises 22023');
SELECT throws_ok($$SELECT agent.can_access(7210003, 'page', NULL)$$, '22023', 'agent_id, resource_type and resource_id must not be NULL', 'can_access: NULL resource id raises 22023');
SELECT is((SELECT (allowed, reason)::text FROM agent.explain_access(7210003, 'page', 'sp4', 'write')), '(f,invalid_mode)', 'explain_access: invalid_mode row');
SELECT is((SELECT (allowed, reason)::text FROM agent.explain_access(7210003, 'page', 'sp4', 'read', 'robot')), '(f,invalid_regime)', 'explain_access: invalid_regime row');
SELECT is((SELECT (allowed, reason)::text FROM agent.explain_access(7210003, 'page', 'sp4', 'read', 'manual')), '(f,user_required)', 'explain_access: user_required row');
SELECT is((SELECT reason FROM agent.explain_access(7219999, 'page', 'sp4', 'write')), 'invalid_mode', 'arguments are checked before the agent is looked up');

-- ---------------------------------------------------------------------------
-- many checks for one agent in one statement (its grants are then loaded at
-- once, the ACL rows of each resource cached): the same answers as a plain
-- join of the tables, before and after a change in the same transaction
-- ---------------------------------------------------------------------------
INSERT INTO agent.agents (id, workspace_id, owner_id, name) VALUES (7210006, 'ws-bulk', 'bo', 'bulk'), (7210007, 'ws-bulk', 'bo', 'huge');
INSERT INTO agent.access (agent_id, resource_type, resource_id, access)
SELECT 7210006, 'page', 'b' || i, CASE WHEN i % 3 = 0 THEN 'edit' ELSE 'read' END FROM generate_series(1, 600, 2) i;
INSERT INTO agent.access (agent_id, resource_type, resource_id, access)
SELECT 7210007, 'page', 'b' || i, CASE WHEN i % 3 = 0 THEN 'edit' ELSE 'read' END FROM generate_series(1, 20100) i;
INSERT INTO agent.resource_acl (workspace_id, resource_type, resource_id, principal, access)
SELECT 'ws-bulk', 'page', 'b' || i, 'user:bo', CASE WHEN i % 4 IN (0, 1) THEN 'edit' ELSE 'read' END
FROM generate_series(1, 20100) i WHERE i % 5 <> 0;
CREATE TEMP VIEW bulk_expected AS
SELECT g.agent_id, g.resource_id, m.mode
FROM agent.access g JOIN agent.resource_acl r ON r.resource_type = g.resource_type AND r.resource_id = g.resource_id
     CROSS JOIN (VALUES ('read'), ('edit')) m(mode)
WHERE g.agent_id IN (7210006, 7210007) AND g.resource_type = 'page' AND r.principal = 'user:bo'
  AND (m.mode = 'read' OR (g.access = 'edit' AND r.access = 'edit'));
SELECT is((SELECT count(*)::int FROM generate_series(1, 700) i, (VALUES ('read'), ('edit')) m(mode)
           WHERE agent.can_access(7210006, 'page', 'b' || i, m.mode)),
          (SELECT count(*)::int FROM bulk_expected WHERE agent_id = 7210006),
          '700 resources x 2 modes for one agent in one statement: the same as a join of the tables');
SELECT is((SELECT count(*)::int FROM generate_series(1, 20200) i
           WHERE agent.can_access(7210007, 'page', 'b' || i, CASE WHEN i % 2 = 0 THEN 'edit' ELSE 'read' END)),
          (SELECT count(*)::int FROM bulk_expected WHERE agent_id = 7210007
             AND mode = CASE WHEN substr(resource_id, 2)::int % 2 = 0 THEN 'edit' ELSE 'read' END),
          'an agent with more grants than are ever loaded at once: the same answers, probe by probe');
DELETE FROM agent.access WHERE agent_id = 7210006 AND resource_id IN ('b3', 'b9');
UPDATE agent.resource_acl SET access = 'read' WHERE resource_id = 'b33';
SELECT is((SELECT count(*)::int FROM generate_series(1, 700) i, (VALUES ('read'), ('edit')) m(mode)
           WHERE agent.can_access(7210006, 'page', 'b' || i, m.mode)),
          (SELECT count(*)::int FROM bulk_expected WHERE agent_id = 7210006),
          'after revoking grants and lowering an ACL in the same transaction: seen at once');
SELECT is(agent.can_access(7210006, 'page', 'b3'), false, 'a revoked grant, checked alone: refused');
INSERT INTO agent.agents (id, workspace_id, owner_id, name)
SELECT 7210007 + k, 'ws-bulk', 'bo', 'bulk ' || k FROM generate_series(1, 3) k;
INSERT INTO agent.access (agent_id, resource_type, resource_id, access)
SELECT 7210007 + k, g.resource_type, g.resource_id, g.access
FROM agent.access g, generate_series(1, 3) k WHERE g.agent_id = 7210006;
CREATE TEMP VIEW bulk4_expected AS
SELECT g.agent_id, g.resource_id, m.mode
FROM agent.access g JOIN agent.resource_acl r ON r.resource_type = g.resource_type AND r.resource_id = g.resource_id
     CROSS JOIN (VALUES ('read'), ('edit')) m(mode)
WHERE g.agent_id IN (7210006, 7210008, 7210009, 7210010) AND r.principal = 'user:bo'
  AND (m.mode = 'read' OR (g.access = 'edit' AND r.access = 'edit'));
-- agent after agent (sets dropped once cold), and agents interleaved (no room)
CREATE TEMP VIEW bulk4_grouped AS
SELECT count(*)::int AS n
FROM (SELECT a.id, i, m.mode FROM (VALUES (7210006), (7210008), (7210009), (7210010)) a(id),
             generate_series(1, 700) i, (VALUES ('read'), ('edit')) m(mode)
      ORDER BY a.id, i, m.mode OFFSET 0) c
WHERE agent.can_access(c.id, 'page', 'b' || c.i, c.mode);
CREATE TEMP VIEW bulk4_interleaved AS
SELECT count(*)::int AS n
FROM (SELECT a.id, i, m.mode FROM (VALUES (7210006), (7210008), (7210009), (7210010)) a(id),
             generate_series(1, 700) i, (VALUES ('read'), ('edit')) m(mode)
      ORDER BY i, a.id, m.mode OFFSET 0) c
WHERE agent.can_access(c.id, 'page', 'b' || c.i, c.mode);
SET LOCAL pg_agents.access_cache_grants = 500;
SELECT is((SELECT n FROM bulk4_grouped), (SELECT count(*)::int FROM bulk4_expected),
          'four agents one after the other, room for one grant set: the same answers');
SELECT is((SELECT n FROM bulk4_interleaved), (SELECT count(*)::int FROM bulk4_expected),
          'four agents interleaved, room for one grant set: the same answers');
SET LOCAL pg_agents.access_cache_grants = 0;
SELECT is((SELECT n FROM bulk4_interleaved), (SELECT count(*)::int FROM bulk4_expected),
          'no grant sets at all (access_cache_grants = 0): the same answers');
RESET pg_agents.access_cache_grants;

SELECT * FROM finish();
ROLLBACK;
