"""Every command example of the other tool's reference pages
(reference/*-reference.md and quick-reference.md) and user guide, run as written against
a real daemon: none may be refused as a wrong command line (exit status 2,
"unknown option", "unexpected argument"), unless refused as not supported
(reservations and quotas are another issue's). Lines with <placeholders>
are forms, not examples. Lifecycle lines that would stop or replace the
test's daemon are driven by test_lifecycle*.py and test_cli_names.py."""
import json
import shlex
import subprocess

EXAMPLES = r"""
gbatch --gpus 1 python train.py
gbatch --time 2:00:00 python train.py
gbatch --memory 8G python train.py
gbatch --gpu-memory 20G --shared --gpus 1 python train.py
gbatch --priority 50 python urgent.py
gbatch --name my-run python train.py
gbatch --project ml-research python train.py
gbatch --max-retries 2 python train.py
gbatch --notify-email alice@example.com --notify-on job_failed,job_timeout python train.py
gbatch --begin 22:00 python night-run.py
gbatch --begin 2026-02-01T08:00:00 python monthly-report.py
gbatch --begin now+2h python train.py        # relative: minutes by default, or s/m/h/d units
gbatch --conda-env myenv python script.py
gbatch --depends-on-all 1,2,3 python merge.py     # AND
gbatch --depends-on-any 4,5 python fallback.py    # OR
gbatch --depends-on 123 --no-auto-cancel python next.py
gbatch --array 1-10 python task.py --i '$GFLOW_ARRAY_TASK_ID'
gbatch --param lr=0.001,0.01 --param bs=32,64 python train.py --lr {lr} --batch-size {bs}
gbatch --param-file params.csv --name-template 'run_{id}' python train.py --id {id}
gbatch --max-concurrent 2 --param lr=0.001,0.01 python train.py --lr {lr}
gbatch --dry-run --gpus 1 python train.py
gbatch python train.py --epochs 100
gbatch train.sh
gbatch --gpus 1 --time 2:00:00 --name train-resnet python train.py
gbatch --gpus 1 --shared --gpu-memory 20G python train.py
gbatch --array 1-10 python process.py --task '$GFLOW_ARRAY_TASK_ID'
gbatch completion bash
gcancel 42
gcancel 1,2,3
gcancel 10-20
gcancel --kill 42      # Slurm-style no-op flag (optional)
gcancel --dry-run 42
gctl show-gpus
gctl gpu-process ignore --gpu 0 --pid 1234
gctl gpu-process unignore --gpu 0 --pid 1234
gctl gpu-process list
gctl set-gpus 0,2
gctl set-gpus all
gctl reserve create --user alice --gpus 2 --start '2026-01-28 14:00' --duration 2h
gctl reserve create --user alice --gpu-spec 0,2 --start '2026-01-28 14:00' --duration 2h
gctl reserve create --user bob --gpu-spec 0-3 --start '2026-01-28 16:00' --duration 1h
gctl reserve list
gctl reserve list --active
gctl reserve list --user alice --status active
gctl reserve list --timeline --range 48h
gctl quota list
gctl quota set --user alice --max-running-gpus 4 --max-queued-jobs 50
gctl quota set --project cv-team --max-running-gpus 8
gctl quota set --default-user --max-running-jobs 4
gctl quota remove --user alice
gctl quota remove --default-user
gflowd init --yes
gflowd init
gflowd start
gflowd start --gpus 0,2 --gpu-allocation-strategy random
gflowd start --gpu-poll-interval-secs 3
gflowd status
ginfo
gjob show 42
gjob log @
gjob log @ --first 20
gjob log 42 --last 50
gjob attach @
gjob hold 10-12
gjob release 10,11
gjob release 12 --at now+1h
gjob release 12 --at 22:00
gjob update 42 --gpus 2 --time-limit 4:00:00
gjob update 42 --max-retries 2
gjob redo 42 --time 8:00:00
gjob redo 42 --cascade
gjob close-sessions --all
gjob completion bash
gjob completion zsh
gjob completion fish
gqueue                               # active jobs (Queued, Hold, Running)
gqueue -a                            # all jobs including completed
gqueue -s Running,Queued             # filter by state
gqueue -j 12,13,14                   # filter by job IDs (comma-separated)
gqueue -u alice                      # filter by user (default: current user; use 'all' for all users)
gqueue -P ml-research                # filter by project code
gqueue -T                            # only jobs with active tmux sessions
gqueue -t                            # dependency tree view
gqueue -g                            # group by state
gqueue -w                            # auto-refresh every 2s
gqueue -w --interval 5               # auto-refresh every 5s
gqueue -f JOBID,NAME,ST,TIME,NODES,NODELIST(REASON)
gqueue -f JOBID,NAME,PROJECT,ST,TIME,NODES,NODELIST(REASON)
gqueue -s Running -f JOBID,NAME,ST,NODES,NODELIST(REASON)
gqueue -f JOBID,NAME,PROJECT,ST,TIMELIMIT,MEMORY,NODELIST(REASON)
gstats
gstats --since 7d
gstats --user alice
gstats --all-users --output json
gstats --since today --output csv
gstats completion bash
gstats completion zsh
gstats completion fish
"""

# the user guide's and getting started's examples (user-guide/*.md, ...)
GUIDE = r"""
gflowd start
gflowd status
ginfo
gbatch echo 'Hello from gflow!'
gqueue
gbatch --gpus 1 python train.py
gqueue -s Running,Queued -f JOBID,NAME,ST,NODES,NODELIST(REASON)
gctl show-gpus
gbatch --gpus 2 python multi_gpu_train.py
gqueue -s Running -f JOBID,NAME,ST,NODES,NODELIST(REASON)
gbatch --gpus 1 --shared --gpu-memory 20G python train.py
gctl set-gpus 0,2
gbatch --time 10 python preprocess.py
gbatch --depends-on @ --gpus 1 --time 4:00:00 python train.py
gbatch --depends-on @ --time 10 python evaluate.py
gbatch --depends-on-all 101,102,103 python merge.py
gbatch --depends-on-any 201,202,203 python process_first_success.py
gqueue -t
gqueue -s Queued -f JOBID,NAME,ST,NODELIST(REASON)
gbatch python train.py
gbatch --gpus 1 --time 2:00:00 --name train-resnet python train.py
gbatch --project ml-research python train.py
gbatch --max-retries 2 python train.py
gbatch --notify-email alice@example.com --notify-on job_failed,job_timeout python train.py
gbatch python train.py --epochs 100 --lr 0.01
gbatch train.sh
gbatch --time 30 python quick.py
gbatch --priority 50 python urgent.py
gbatch --conda-env myenv python script.py
gbatch --notify-email alice@example.com python train.py
gbatch --notify-email alice@example.com --notify-email oncall@example.com --notify-on job_failed,job_timeout python train.py
gbatch --depends-on-all 1,2,3 python merge.py
gbatch --depends-on-any 4,5 python process_first_success.py
gbatch --dry-run --gpus 1 python train.py
gbatch --array 1-10 python process.py --task '$GFLOW_ARRAY_TASK_ID'
gqueue -f JOBID,NAME,ST,NODES,NODELIST(REASON)
gqueue -f JOBID,NAME,ST,TIME,TIMELIMIT
gbatch --time 0:30 sleep 1000   # 30 seconds
gbatch --time 30 sleep 1000     # 30 minutes
gbatch --depends-on-all @,@~1,@~2 python merge.py
gbatch python -c 'import os,sys; print("CONDA_DEFAULT_ENV=", os.getenv("CONDA_DEFAULT_ENV")); print("python=", sys.executable)'
gjob show 42
gbatch --param-file params.csv --name-template 'run_{id}' python train.py --id {id}
gbatch --param lr=0.001,0.01 --max-concurrent 1 python train.py --lr {lr}
gctl set-gpus all
gctl reserve create --user alice --gpus 2 --start '2026-01-28 14:00' --duration 2h
gctl reserve list --active
gctl reserve list --timeline --range 48h
"""


def examples(text=EXAMPLES):
    for line in text.strip().splitlines():
        yield shlex.split(line, comments=True)


def test_every_documented_example_is_a_valid_command_line(gflow):
    g = gflow
    g.gpus(4)
    g.start()
    # jobs 1..210, held, so that the ids the examples name exist
    g.cli("gbatch", "--hold", "--array", "1-210", "true", check=True)
    (g.tmp / "params.csv").write_text("id\n1\n2\n")
    (g.tmp / "train.sh").write_text("#!/bin/sh\necho train\n")
    for f in ("train.py", "urgent.py", "night-run.py", "monthly-report.py", "script.py", "merge.py",
              "fallback.py", "next.py", "task.py", "process.py", "multi_gpu_train.py", "preprocess.py",
              "evaluate.py", "process_first_success.py", "quick.py"):
        (g.tmp / f).write_text("print('ok')\n")
    wrong = []
    for words in list(examples()) + list(examples(GUIDE)):
        if "-w" in words:
            p = subprocess.Popen(words, env=g.env, cwd=g.tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True)
            try:
                out, err = p.communicate(timeout=2.5)
                wrong.append(f"{' '.join(words)}: exited ({p.returncode}): {err.strip()}")
            except subprocess.TimeoutExpired:
                p.kill()
                out, err = p.communicate()
                assert "JOBID" in out, words
            continue
        r = g.cli(*words)
        usage = r.returncode == 2 or any(s in r.stderr for s in ("unknown option", "unexpected argument",
                                                                 "unknown command"))
        if usage and "not supported" not in r.stderr:
            wrong.append(f"{' '.join(words)}: {r.returncode}: {r.stderr.strip()}")
    assert not wrong, "\n".join(wrong)
    # a few whose effect is easy to see here
    assert g.cli("gqueue", "-j", "12,13,14", "-f", "JOBID", check=True).stdout.split()[1:] == ["12", "13", "14"]
    # gcancel 42 came first, so gjob update 42 was refused and redo made new jobs of it
    assert g.job(42)["state"] == "Cancelled" and g.job(42)["gpus"] == 0
    redone = [j for j in json.loads(g.cli("gqueue", "-a", "-o", "json", check=True).stdout) if j.get("redo_of") == 42]
    assert sorted(j.get("time_limit_secs") or 0 for j in redone) == [0, 8 * 3600]
    assert g.job(10)["state"] == "Cancelled" and g.job(21)["state"] == "Hold"
    out = g.cli("gstats", "--since", "today", "--output", "csv", check=True).stdout
    assert out.startswith("metric,value\n")
