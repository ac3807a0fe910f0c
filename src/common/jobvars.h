/* jobvars.h — gflow's own job variables in the words of a job's command.
 *
 * `gbatch --array 1-10 python task.py --i '$GFLOW_ARRAY_TASK_ID'` passes
 * each task its number without any shell: the runner, just before it
 * starts the job, replaces `$NAME` and `${NAME}` in every argv word, for
 * NAME one of GFLOW_JOB_ID, GFLOW_ARRAY_TASK_ID, GFLOW_GPU_IDS,
 * GFLOW_GPU_MEMORY_MB, by the value the job's environment holds (empty
 * when it holds none). Only these, whose values are digits and commas: a
 * word may be a script a shell reads (`sh -c 'echo $GFLOW_JOB_ID'`), so a
 * value put into it must not be able to carry shell syntax; one that holds
 * anything else is not put in (the reference stays). GFLOW_JOB_NAME and any
 * other free text reach the job only through its environment. Nothing else
 * is expanded: no other variable, no quoting, no globbing, and a substituted
 * value is never looked at again. libc only (the runner links it). */
#ifndef GF_JOBVARS_H
#define GF_JOBVARS_H

/* The expanded copy of word in *out (malloc'ed), or *out = NULL when word
 * names none of the variables. envp: NAME=value entries, NULL-terminated.
 * Returns 0, or -1 when out of memory. */
int gf_jobvars_expand(const char *word, char *const *envp, char **out);

/* The value of name in envp (NAME=value entries), or NULL. */
const char *gf_env_get(char *const *envp, const char *name);

#endif
