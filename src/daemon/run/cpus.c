/* cpus.c — CPUs as a resource: how many jobs may book ([daemon] cpus, by
 * default the CPUs this daemon may run on; 0: not counted), and with [daemon]
 * constrain_cpus which ones a job gets. The pass counts them
 * (core/sched.c); a job started with constrain_cpus on is given the first
 * CPUs of the daemon's list that no other active job holds, stored with it
 * (cpu_ids, "0-1,4": it survives restarts); the runner's child pins the
 * job to them (sched_setaffinity) before its exec. */
#include "run.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int cpus_setup(struct server *s, struct gf_err *e)
{
	cpu_set_t set;
	int n = 0;

	free(s->cpu_list);
	s->cpu_list = NULL;
	s->cpus_total = 0;
	CPU_ZERO(&set);
	if (sched_getaffinity(0, sizeof set, &set)) {
		long c = sysconf(_SC_NPROCESSORS_ONLN);

		for (long i = 0; i < c && i < CPU_SETSIZE; i++)
			CPU_SET((int)i, &set);
	}
	if (!(s->cpu_list = calloc(CPU_SETSIZE, sizeof *s->cpu_list)))
		return gf_err_set(e, "out of memory");
	for (int i = 0; i < CPU_SETSIZE; i++)
		if (CPU_ISSET(i, &set))
			s->cpu_list[n++] = i;
	if (n == 0)
		s->cpu_list[n++] = 0;
	if (s->cfg.cpus > n)
		return gf_err_set(e, "[daemon] cpus = %d: this daemon may run on only %d CPU%s (its affinity)",
				  s->cfg.cpus, n, n == 1 ? "" : "s");
	if (s->cfg.cpus == 0 && s->cfg.constrain_cpus)
		return gf_err_set(e, "[daemon] constrain_cpus = true needs CPUs counted; [daemon] cpus = 0 turns "
				     "that off");
	s->cpus_total = s->cfg.cpus >= 0 ? s->cfg.cpus : n;
	return 0;
}

/* Marks in used[] (indices into cpu_list) the CPUs of a cpulist "0-1,4". */
static void mark_list(const struct server *s, const char *list, bool *used)
{
	const char *p = list;

	while (p && *p) {
		char *end;
		long a = strtol(p, &end, 10), b = a;

		if (end == p)
			return;
		if (*end == '-') {
			p = end + 1;
			b = strtol(p, &end, 10);
			if (end == p)
				return;
		}
		for (int i = 0; i < s->cpus_total; i++)
			if (s->cpu_list[i] >= a && s->cpu_list[i] <= b)
				used[i] = true;
		p = *end == ',' ? end + 1 : end;
		if (*end && *end != ',')
			return;
	}
}

void cpus_assign(struct server *s, struct job *j)
{
	int want = job_cpus(j), got = 0;
	bool *used, *take;
	char buf[4096];
	size_t len = 0;

	if (!s->cfg.constrain_cpus || !s->cpus_total) {
		if (jm(j)->cpu_ids)
			job_set_str(&jm_w(j)->cpu_ids, NULL);
		return;
	}
	used = calloc((size_t)s->cpus_total, sizeof *used);
	take = calloc((size_t)s->cpus_total, sizeof *take);
	if (!used || !take)
		abort();
	for (size_t i = 0; i < s->nopen; i++) {
		const struct job *o = jobs_open_at(s, i);

		if (o && o != j && o->active && jm(o)->cpu_ids)
			mark_list(s, jm(o)->cpu_ids, used);
	}
	/* Free ones first; should too few be free (the list changed since
	 * those jobs started), shared ones make up the number. */
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < s->cpus_total && got < want; i++)
			if (!take[i] && (pass || !used[i])) {
				take[i] = true;
				got++;
			}
	buf[0] = '\0';
	for (int i = 0; i < s->cpus_total; i++) {
		int k = i;

		if (!take[i])
			continue;
		while (k + 1 < s->cpus_total && take[k + 1] && s->cpu_list[k + 1] == s->cpu_list[k] + 1)
			k++;
		if (len < sizeof buf)
			len += (size_t)snprintf(buf + len, sizeof buf - len, len ? ",%d" : "%d", s->cpu_list[i]);
		if (k > i && len < sizeof buf)
			len += (size_t)snprintf(buf + len, sizeof buf - len, "-%d", s->cpu_list[k]);
		i = k;
	}
	free(used);
	free(take);
	job_set_str(&jm_w(j)->cpu_ids, buf);
}
