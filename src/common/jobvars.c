/* jobvars.c — expands gflow's own job variables in argv words (see
 * jobvars.h); a pure function over a word and an environment. */
#include "jobvars.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Only variables whose values are numbers or lists of them: a value is
 * put into a word that a shell may read as code (`sh -c '... $NAME'`), so
 * it must never carry shell syntax. GFLOW_JOB_NAME, free text, reaches the
 * job only through its environment. */
static const char *const names[] = { "GFLOW_JOB_ID", "GFLOW_ARRAY_TASK_ID", "GFLOW_GPU_IDS", "GFLOW_GPU_MEMORY_MB" };

static bool name_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

/* The variable referred to at s (just after a '$'): its name and the
 * length of the reference, or NULL. Like a shell, `$GFLOW_JOB_IDX` names
 * GFLOW_JOB_IDX (not ours), so an unbraced name ends at a non-name char. */
static const char *ref_at(const char *s, size_t *len)
{
	bool braced = *s == '{';
	const char *p = s + braced;
	size_t n = 0;

	while (name_char(p[n]))
		n++;
	if (braced && p[n] != '}')
		return NULL;
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strlen(names[i]) == n && !strncmp(p, names[i], n)) {
			*len = n + 2 * braced;
			return names[i];
		}
	return NULL;
}

const char *gf_env_get(char *const *envp, const char *name)
{
	size_t n = strlen(name);

	for (; envp && *envp; envp++)
		if (!strncmp(*envp, name, n) && (*envp)[n] == '=')
			return *envp + n + 1;
	return NULL;
}

/* The value to put in place of name: "" when unset; NULL (the reference
 * is left as it is) when it holds anything but digits and commas, which
 * the daemon never sets (a runner given another environment might). */
static const char *lookup(char *const *envp, const char *name)
{
	const char *v = gf_env_get(envp, name);

	if (!v)
		return "";
	return v[strspn(v, "0123456789,")] ? NULL : v;
}

int gf_jobvars_expand(const char *word, char *const *envp, char **out)
{
	size_t size = 1, reflen;
	const char *name, *v;
	bool any = false;
	char *o;

	*out = NULL;
	for (const char *p = word; *p; p++) {
		if (*p == '$' && (name = ref_at(p + 1, &reflen)) && (v = lookup(envp, name))) {
			size += strlen(v);
			p += reflen;
			any = true;
		} else {
			size++;
		}
	}
	if (!any)
		return 0;
	if (!(o = malloc(size)))
		return -1;
	*out = o;
	for (const char *p = word; *p; p++) {
		if (*p == '$' && (name = ref_at(p + 1, &reflen)) && (v = lookup(envp, name))) {
			memcpy(o, v, strlen(v));
			o += strlen(v);
			p += reflen;
		} else {
			*o++ = *p;
		}
	}
	*o = '\0';
	return 0;
}
