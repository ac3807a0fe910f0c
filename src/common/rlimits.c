/* rlimits.c — the submitter's resource limits: captured, written as text,
 * read back, capped and applied (rlimits.h). */
#include "rlimits.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

static const struct {
	const char *name;
	int resource;
	const char *proc;	/* its line's name in /proc/PID/limits */
} table[GF_NRLIMITS] = {
	{ "as", RLIMIT_AS, "Max address space" },
	{ "core", RLIMIT_CORE, "Max core file size" },
	{ "cpu", RLIMIT_CPU, "Max cpu time" },
	{ "data", RLIMIT_DATA, "Max data size" },
	{ "fsize", RLIMIT_FSIZE, "Max file size" },
	{ "memlock", RLIMIT_MEMLOCK, "Max locked memory" },
	{ "nofile", RLIMIT_NOFILE, "Max open files" },
	{ "nproc", RLIMIT_NPROC, "Max processes" },
	{ "rss", RLIMIT_RSS, "Max resident set" },
	{ "stack", RLIMIT_STACK, "Max stack size" },
};

const char *gf_rlimit_name(int i)
{
	return table[i].name;
}

int gf_rlimit_resource(int i)
{
	return table[i].resource;
}

void gf_rlimits_capture(struct gf_rlimits *r)
{
	memset(r, 0, sizeof *r);
	for (int i = 0; i < GF_NRLIMITS; i++)
		r->set[i] = getrlimit(table[i].resource, &r->v[i]) == 0;
}

/* One value: a number or "unlimited", ending at `end`. */
static int parse_value(const char *p, const char *end, rlim_t *v)
{
	unsigned long long x = 0;

	if ((size_t)(end - p) == 9 && !memcmp(p, "unlimited", 9)) {
		*v = RLIM_INFINITY;
		return 0;
	}
	if (p == end || end - p > 19)
		return -1;
	for (; p < end; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		x = x * 10 + (unsigned)(*p - '0');
	}
	if (x > 0x7fffffffffffffffULL || (rlim_t)x == RLIM_INFINITY)
		return -1;
	*v = (rlim_t)x;
	return 0;
}

/* RLIM_INFINITY is the largest rlim_t: plain comparisons order it. */
int gf_rlimits_parse(const char *s, struct gf_rlimits *r, struct gf_err *e)
{
	memset(r, 0, sizeof *r);
	if (s[strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789=:,")])
		return gf_err_set(e, "the limits hold a character other than a-z, 0-9, '=', ':' and ','");
	while (*s) {
		const char *comma = strchr(s, ','), *end = comma ? comma : s + strlen(s);
		const char *eq = memchr(s, '=', (size_t)(end - s)), *colon;
		int len = (int)(end - s > 40 ? 40 : end - s), i;

		if (!eq)
			return gf_err_set(e, "limit '%.*s' is not NAME=SOFT:HARD", len, s);
		for (i = 0; i < GF_NRLIMITS; i++)
			if (strlen(table[i].name) == (size_t)(eq - s) && !memcmp(table[i].name, s, (size_t)(eq - s)))
				break;
		if (i == GF_NRLIMITS)
			return gf_err_set(e, "limit '%.*s' is none gflow carries (as, core, cpu, data, fsize, "
					  "memlock, nofile, nproc, rss, stack)", len, s);
		if (r->set[i])
			return gf_err_set(e, "limit '%s' is given twice", table[i].name);
		colon = memchr(eq + 1, ':', (size_t)(end - eq - 1));
		if (parse_value(eq + 1, colon ? colon : end, &r->v[i].rlim_cur) ||
		    (colon && parse_value(colon + 1, end, &r->v[i].rlim_max)))
			return gf_err_set(e, "limit '%.*s' is not NAME=SOFT:HARD (numbers or \"unlimited\")", len, s);
		if (!colon)
			r->v[i].rlim_max = r->v[i].rlim_cur;
		if (r->v[i].rlim_cur > r->v[i].rlim_max)
			return gf_err_set(e, "limit '%.*s': the soft value is above the hard one", len, s);
		r->set[i] = true;
		s = comma ? comma + 1 : end;
		if (comma && !*s)
			return gf_err_set(e, "the limits end in a comma");
	}
	return 0;
}

static size_t put_value(char *buf, size_t size, rlim_t v)
{
	int n = v == RLIM_INFINITY ? snprintf(buf, size, "unlimited") : snprintf(buf, size, "%llu", (unsigned long long)v);

	return n < 0 ? 0 : (size_t)n;
}

size_t gf_rlimits_format(const struct gf_rlimits *r, char *buf, size_t size)
{
	size_t len = 0;

	if (size)
		buf[0] = '\0';
	for (int i = 0; i < GF_NRLIMITS; i++) {
		if (!r->set[i])
			continue;
		len += (size_t)snprintf(buf + (len < size ? len : size), len < size ? size - len : 0, "%s%s=",
					len ? "," : "", table[i].name);
		len += put_value(buf + (len < size ? len : size), len < size ? size - len : 0, r->v[i].rlim_cur);
		if (r->v[i].rlim_max != r->v[i].rlim_cur) {
			len += (size_t)snprintf(buf + (len < size ? len : size), len < size ? size - len : 0, ":");
			len += put_value(buf + (len < size ? len : size), len < size ? size - len : 0,
					 r->v[i].rlim_max);
		}
	}
	return len;
}

void gf_rlimits_clamp(struct gf_rlimits *r, const struct gf_rlimits *cap)
{
	for (int i = 0; i < GF_NRLIMITS; i++) {
		if (!r->set[i] || !cap->set[i])
			continue;
		if (r->v[i].rlim_max > cap->v[i].rlim_max)
			r->v[i].rlim_max = cap->v[i].rlim_max;
		if (r->v[i].rlim_cur > r->v[i].rlim_max)
			r->v[i].rlim_cur = r->v[i].rlim_max;
	}
}

void gf_rlimits_drop_held(struct gf_rlimits *r, const struct gf_rlimits *have)
{
	for (int i = 0; i < GF_NRLIMITS; i++)
		if (r->set[i] && have->set[i] && r->v[i].rlim_cur == have->v[i].rlim_cur &&
		    r->v[i].rlim_max == have->v[i].rlim_max)
			r->set[i] = false;
}

rlim_t gf_rlimits_stack(const struct gf_rlimits *r, rlim_t own)
{
	for (int i = 0; i < GF_NRLIMITS; i++)
		if (table[i].resource == RLIMIT_STACK && r->set[i])
			return r->v[i].rlim_cur;
	return own;
}

int gf_rlimits_apply(const struct gf_rlimits *r, int *which)
{
	for (int i = 0; i < GF_NRLIMITS; i++)
		if (r->set[i] && setrlimit(table[i].resource, &r->v[i])) {
			*which = i;
			return -1;
		}
	return 0;
}

/* One value of /proc/PID/limits at *p (a number or "unlimited"), *p moved
 * past it and the blanks after it. */
static int proc_value(const char **p, rlim_t *v)
{
	const char *q = *p, *end;

	end = q;
	while (*end && *end != ' ' && *end != '\n')
		end++;
	if (parse_value(q, end, v))
		return -1;
	while (*end == ' ')
		end++;
	*p = end;
	return 0;
}

int gf_rlimits_parse_proc(const char *text, struct gf_rlimits *r)
{
	int found = 0;

	memset(r, 0, sizeof *r);
	for (const char *line = text; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
		for (int i = 0; i < GF_NRLIMITS; i++) {
			size_t n = strlen(table[i].proc);
			const char *p = line + n;
			struct rlimit v;

			/* The name is followed by blanks: "Max cpu time" is
			 * not "Max cpu time2". */
			if (strncmp(line, table[i].proc, n) || *p != ' ')
				continue;
			while (*p == ' ')
				p++;
			if (proc_value(&p, &v.rlim_cur) || proc_value(&p, &v.rlim_max) || v.rlim_cur > v.rlim_max)
				break;
			r->set[i] = true;
			r->v[i] = v;
			found++;
			break;
		}
	}
	return found ? 0 : -1;
}

int gf_rlimits_of_pid(long pid, unsigned uid, struct gf_rlimits *r)
{
	char path[64], text[4096];
	struct stat before, after;
	ssize_t n;
	int fd;

	if (pid <= 0)
		return -1;
	snprintf(path, sizeof path, "/proc/%ld", pid);
	if (stat(path, &before) || before.st_uid != uid)
		return -1;
	snprintf(path, sizeof path, "/proc/%ld/limits", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, text, sizeof text - 1);
	close(fd);
	snprintf(path, sizeof path, "/proc/%ld", pid);
	/* The same process still: a pid taken over meanwhile has another
	 * /proc entry (its inode is new). */
	if (n <= 0 || stat(path, &after) || after.st_ino != before.st_ino || after.st_uid != uid)
		return -1;
	text[n] = '\0';
	return gf_rlimits_parse_proc(text, r);
}
