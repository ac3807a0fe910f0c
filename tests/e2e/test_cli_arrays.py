"""Arrays as the other tool's documentation shows them: gflow's own job
variables in argv words ($GFLOW_ARRAY_TASK_ID, ${GFLOW_ARRAY_TASK_ID}, and
the other numeric GFLOW_* job variables) become the job's values, without a
shell; nothing else is expanded ($GFLOW_JOB_NAME is free text: environment
only)."""


def ids_of(r):
    return [int(ln.split()[3]) for ln in r.stdout.splitlines() if ln.startswith("Submitted")]


def test_array_task_id_in_argv(gflow):
    g = gflow
    g.start()
    # the documented form, words passed as written (no shell anywhere)
    r = g.cli("gbatch", "--array", "1-3", "printf", "%s|%s|%s|%s\\n",
              "--i=$GFLOW_ARRAY_TASK_ID", "${GFLOW_ARRAY_TASK_ID}.out",
              "$HOME;$(id);`id`;$GFLOW_ARRAY_TASK_IDX", "j$GFLOW_JOB_ID n=${GFLOW_JOB_NAME} g=[$GFLOW_GPU_IDS]",
              check=True)
    ids = ids_of(r)
    assert len(ids) == 3
    for task, jid in zip(range(1, 4), ids):
        g.wait_state(jid, "Finished")
        assert g.log_of(jid).strip() == (
            f"--i={task}|{task}.out|$HOME;$(id);`id`;$GFLOW_ARRAY_TASK_IDX|j{jid} n=${{GFLOW_JOB_NAME}} g=[]")
    # what was submitted is kept as written
    assert g.job(ids[0])["command"][2] == "--i=$GFLOW_ARRAY_TASK_ID"


def test_documented_python_example(gflow, tmp_path):
    g = gflow
    g.start()
    task = tmp_path / "task.py"
    task.write_text("import sys\nprint('task', sys.argv[1:])\n")
    r = g.cli("gbatch", "--array", "1-10", "python3", str(task), "--i", "$GFLOW_ARRAY_TASK_ID", check=True)
    ids = ids_of(r)
    assert len(ids) == 10
    for i, jid in enumerate(ids, 1):
        g.wait_state(jid, "Finished")
        assert g.log_of(jid).strip() == f"task ['--i', '{i}']"


def test_job_name_value_is_not_reexpanded(gflow):
    g = gflow
    g.start()
    jid = g.submit("-J", "x$GFLOW_JOB_ID", "echo", "[$GFLOW_JOB_NAME]", "${GFLOW_GPU_MEMORY_MB}.")
    g.wait_state(jid, "Finished")
    # the name is free text: never put into a word (only the environment has it)
    assert g.log_of(jid).strip() == "[$GFLOW_JOB_NAME] ."


def test_outside_arrays_task_id_is_zero(gflow):
    g = gflow
    g.start()
    jid = g.submit("echo", "t=$GFLOW_ARRAY_TASK_ID")
    g.wait_state(jid, "Finished")
    assert g.log_of(jid).strip() == "t=0"


def test_help_documents_it(gflow):
    r = gflow.cli("gbatch", "--help", check=True)
    assert "$GFLOW_ARRAY_TASK_ID" in r.stdout and "Nothing else is expanded" in r.stdout
