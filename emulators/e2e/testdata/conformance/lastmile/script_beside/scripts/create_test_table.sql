-- Created by script_beside/playbook.yaml's start step.
DROP TABLE IF EXISTS lastmile_script_beside;
CREATE TABLE lastmile_script_beside (id int PRIMARY KEY, label text);
INSERT INTO lastmile_script_beside VALUES (1, 'one'), (2, 'two');
