"""Issue 26, items 6, 8 and 13: what a job's runner is given and where its
log goes, against a user who reads /proc, plants files, or names a job like
shell code."""
import os
import re
from pathlib import Path


# ---- 13: job variables in argv carry no free text --------------------------

def test_job_name_is_never_shell_code(gflow, tmp_path):
    g = gflow
    g.start()
    target = tmp_path / "pwned"
    names = [f"a$(touch {target})b", "it's", 'q"`touch ' + str(target) + '`"']
    ids = [g.submit("--name", n, "sh", "-c", 'echo "[$GFLOW_JOB_NAME]"; echo "id=$GFLOW_JOB_ID"')
           for n in names]
    for n, jid in zip(names, ids):
        g.wait_state(jid, "Finished")
        assert g.log_of(jid) == f"[{n}]\nid={jid}\n"
    assert not target.exists()
    # the numeric ones are still put into words (no shell needed)
    jid = g.submit("--name", "x", "echo", "$GFLOW_JOB_ID/${GFLOW_ARRAY_TASK_ID}/$GFLOW_JOB_NAME")
    g.wait_state(jid, "Finished")
    assert g.log_of(jid).strip() == f"{jid}/0/$GFLOW_JOB_NAME"


def test_help_says_which_are_substituted(gflow):
    out = gflow.cli("gbatch", "--help", check=True).stdout
    para = out.split("Resources:")[0]
    assert "$GFLOW_JOB_NAME, free text, is never put into a word" in para
    for v in ("$GFLOW_ARRAY_TASK_ID", "$GFLOW_JOB_ID", "$GFLOW_GPU_IDS", "$GFLOW_GPU_MEMORY_MB"):
        assert v in para
