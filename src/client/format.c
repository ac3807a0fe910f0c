/* format.c — display formatting of durations, sizes, times, exit statuses,
 * states and argv lines. */
#include "format.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

void fmt_duration(int64_t secs, char *buf, size_t size)
{
	int64_t d, h, m, s;

	if (secs < 0)
		secs = 0;
	d = secs / 86400;
	h = secs / 3600 % 24;
	m = secs / 60 % 60;
	s = secs % 60;
	if (d > 0)
		snprintf(buf, size, "%lld-%02lld:%02lld:%02lld", (long long)d,
		    (long long)h, (long long)m, (long long)s);
	else
		snprintf(buf, size, "%lld:%02lld:%02lld", (long long)h,
		    (long long)m, (long long)s);
}

void fmt_job_elapsed(const json_t *job, double now, char *buf, size_t size)
{
	double start = jnum(job, "start_time", 0), end = jnum(job, "end_time", 0);

	if (start <= 0) {
		snprintf(buf, size, "0:00");
		return;
	}
	if (end <= 0)
		end = now;
	fmt_duration((int64_t)(end - start), buf, size);
}

void fmt_mb(int64_t mb, char *buf, size_t size)
{
	if (mb > 0 && mb % (1024 * 1024) == 0)
		snprintf(buf, size, "%lldT", (long long)(mb / (1024 * 1024)));
	else if (mb > 0 && mb % 1024 == 0)
		snprintf(buf, size, "%lldG", (long long)(mb / 1024));
	else
		snprintf(buf, size, "%lldM", (long long)mb);
}

void fmt_mb_human(int64_t mb, char *buf, size_t size)
{
	if (mb < 1024) {
		snprintf(buf, size, "%lldM", (long long)(mb < 0 ? 0 : mb));
	} else if (mb % 1024 == 0 || mb >= 100 * 1024) {
		snprintf(buf, size, "%.0fG", (double)mb / 1024);
	} else {
		snprintf(buf, size, "%.1fG", (double)mb / 1024);
	}
}

void fmt_local_time(double t, char *buf, size_t size)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (t <= 0 || !localtime_r(&tt, &tm) ||
	    strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm) == 0)
		snprintf(buf, size, "-");
}

static const struct {
	int sig;
	const char *name;
} signal_names[] = {
	{ SIGHUP, "SIGHUP" }, { SIGINT, "SIGINT" }, { SIGQUIT, "SIGQUIT" },
	{ SIGILL, "SIGILL" }, { SIGTRAP, "SIGTRAP" }, { SIGABRT, "SIGABRT" },
	{ SIGBUS, "SIGBUS" }, { SIGFPE, "SIGFPE" }, { SIGKILL, "SIGKILL" },
	{ SIGUSR1, "SIGUSR1" }, { SIGSEGV, "SIGSEGV" }, { SIGUSR2, "SIGUSR2" },
	{ SIGPIPE, "SIGPIPE" }, { SIGALRM, "SIGALRM" }, { SIGTERM, "SIGTERM" },
	{ SIGCHLD, "SIGCHLD" }, { SIGCONT, "SIGCONT" }, { SIGSTOP, "SIGSTOP" },
	{ SIGTSTP, "SIGTSTP" }, { SIGTTIN, "SIGTTIN" }, { SIGTTOU, "SIGTTOU" },
	{ SIGURG, "SIGURG" }, { SIGXCPU, "SIGXCPU" }, { SIGXFSZ, "SIGXFSZ" },
	{ SIGVTALRM, "SIGVTALRM" }, { SIGPROF, "SIGPROF" },
	{ SIGWINCH, "SIGWINCH" }, { SIGIO, "SIGIO" }, { SIGSYS, "SIGSYS" },
};

const char *fmt_signal_name(int sig)
{
	size_t i;

	for (i = 0; i < sizeof signal_names / sizeof signal_names[0]; i++)
		if (signal_names[i].sig == sig)
			return signal_names[i].name;
	return NULL;
}

void fmt_exit(const json_t *job, int compact, char *buf, size_t size)
{
	const char *name;
	int sig;

	if (jhas(job, "exit_code")) {
		snprintf(buf, size, "%lld", (long long)jint(job, "exit_code", 0));
		return;
	}
	if (!jhas(job, "exit_signal")) {
		snprintf(buf, size, "-");
		return;
	}
	sig = (int)jint(job, "exit_signal", 0);
	name = fmt_signal_name(sig);
	if (compact && name)
		snprintf(buf, size, "%s", name);
	else if (compact)
		snprintf(buf, size, "signal %d", sig);
	else if (name)
		snprintf(buf, size, "signal %d (%s)", sig, name);
	else
		snprintf(buf, size, "signal %d", sig);
}

void fmt_shell_word(struct sbuf *b, const char *w)
{
	const char *p;
	int safe = *w != '\0';

	for (p = w; *p && safe; p++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		    "0123456789_@%+=:,./-", *p))
			safe = 0;
	if (safe) {
		sbuf_adds(b, w);
		return;
	}
	sbuf_addc(b, '\'');
	for (p = w; *p; p++) {
		if (*p == '\'')
			sbuf_adds(b, "'\\''");
		else
			sbuf_addc(b, *p);
	}
	sbuf_addc(b, '\'');
}

char *fmt_argv_line(const json_t *argv)
{
	struct sbuf b = { 0 };
	size_t i;

	for (i = 0; i < json_array_size(argv); i++) {
		const char *w = json_string_value(json_array_get(argv, i));

		if (i)
			sbuf_addc(&b, ' ');
		fmt_shell_word(&b, w ? w : "");
	}
	return sbuf_take(&b);
}

static const struct {
	const char *name, *code;
} states[] = {
	{ "Queued", "PD" }, { "Hold", "H" }, { "Running", "R" },
	{ "Finished", "CD" }, { "Failed", "F" }, { "Cancelled", "CA" },
	{ "Timeout", "TO" },
};

const char *state_canonical(const char *s)
{
	static const struct {
		const char *word, *name;
	} extra[] = {
		{ "pending", "Queued" }, { "completed", "Finished" },
		{ "held", "Hold" }, { "canceled", "Cancelled" },
	};
	size_t i;

	for (i = 0; i < sizeof states / sizeof states[0]; i++)
		if (strcasecmp(s, states[i].name) == 0 ||
		    strcasecmp(s, states[i].code) == 0)
			return states[i].name;
	for (i = 0; i < sizeof extra / sizeof extra[0]; i++)
		if (strcasecmp(s, extra[i].word) == 0)
			return extra[i].name;
	return NULL;
}

const char *state_short(const char *name)
{
	size_t i;

	for (i = 0; name && i < sizeof states / sizeof states[0]; i++)
		if (strcmp(name, states[i].name) == 0)
			return states[i].code;
	return "?";
}

int state_is_ended(const char *name)
{
	return name && (strcmp(name, "Finished") == 0 ||
	    strcmp(name, "Failed") == 0 || strcmp(name, "Cancelled") == 0 ||
	    strcmp(name, "Timeout") == 0);
}

char *fmt_int_list(const json_t *arr)
{
	struct sbuf b = { 0 };
	size_t i;

	for (i = 0; i < json_array_size(arr); i++) {
		json_t *v = json_array_get(arr, i);

		if (i)
			sbuf_addc(&b, ',');
		if (json_is_integer(v))
			sbuf_addf(&b, "%lld", (long long)json_integer_value(v));
		else if (json_is_string(v))
			sbuf_adds(&b, json_string_value(v));
	}
	return sbuf_take(&b);
}
