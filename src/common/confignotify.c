/* confignotify.c — [[notifications.webhooks]] and [[notifications.emails]]
 * of gflow.toml (config.h's struct gf_webhook, struct gf_email): each
 * target's keys checked (URLs, headers, mailboxes, events) and the lists
 * kept in file order. */
#include "configint.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"

void cfg_free_webhooks(struct gf_webhook *w, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(w[i].url);
		cfg_free_strv(w[i].events, w[i].n_events);
		cfg_free_strv(w[i].filter_users, w[i].n_filter_users);
		cfg_free_strv(w[i].header_names, w[i].n_headers);
		cfg_free_strv(w[i].header_values, w[i].n_headers);
	}
	free(w);
}

void cfg_free_emails(struct gf_email *m, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(m[i].smtp_url);
		free(m[i].from);
		free(m[i].subject_prefix);
		cfg_free_strv(m[i].to, m[i].n_to);
		cfg_free_strv(m[i].events, m[i].n_events);
		cfg_free_strv(m[i].filter_users, m[i].n_filter_users);
	}
	free(m);
}

/* events = [...] of a target: known names, or ["*"] (stored as none:
 * every event). */
static int get_events(struct src *s, char ***v, size_t *n, struct gf_err *e)
{
	size_t i;

	if (cfg_get_strlist(s, v, n, e))
		return -1;
	if (*n == 0)
		return gf_err_set(e, "lists no event (use [\"*\"] for every event)");
	for (i = 0; i < *n; i++) {
		if (!strcmp((*v)[i], "*") && *n == 1) {
			cfg_free_strv(*v, *n);
			*v = NULL;
			*n = 0;
			return 0;
		}
		if (!gf_event_known((*v)[i], false)) {
			s->at = toml_array_at(s->v, i);
			return gf_err_set(e, "unknown event '%.100s' (known: job_submitted, job_updated, "
			    "job_started, job_completed, job_failed, job_cancelled, job_timeout, job_held, "
			    "job_released, job_gpu_memory_exceeded, job_idle, gpu_available, reservation_created, "
			    "reservation_cancelled, "
			    "scheduler_online, or \"*\" alone)", (*v)[i]);
		}
	}
	return 0;
}

/* headers = { Name = "value", ... } */
static int get_headers(struct src *s, struct gf_webhook *w, struct gf_err *e)
{
	const struct toml_value *t = s->v;
	size_t i, j;

	if (toml_type(t) != TOML_TABLE)
		return cfg_expected(s, "a table of header names and string values", e);
	for (i = 0; i < toml_table_len(t); i++) {
		const char *k = cfg_key_at(t, i), *v = cfg_plain_string(toml_table_at(t, i));

		s->at = toml_table_at(t, i);
		for (j = 0; k && k[j]; j++)
			if (!isalnum((unsigned char)k[j]) && !strchr("!#$%&'*+-.^_`|~", k[j]))
				k = NULL;
		if (!k || !*k)
			return gf_err_set(e, "'%.100s' is not an HTTP header name", toml_table_key(t, i));
		if (!v)
			return cfg_expected(s, "a string", e);
		for (j = 0; v[j]; j++)
			if ((unsigned char)v[j] < 0x20 || v[j] == 0x7f)
				return gf_err_set(e, "%s: a header value must not hold control characters", k);
		if (cfg_strlist_push(&w->header_names, &w->n_headers, k, strlen(k), e))
			return -1;
		w->n_headers--;
		if (cfg_strlist_push(&w->header_values, &w->n_headers, v, strlen(v), e))
			return -1;
	}
	s->at = NULL;
	return 0;
}

/* The address of "Name <addr>" or "addr", checked; 0 or -1. */
static int get_mailbox(struct src *s, const char *v, struct gf_err *e)
{
	const char *lt = strchr(v, '<');
	char addr[320];
	size_t n;

	if (lt) {
		n = strcspn(lt + 1, ">");
		if (lt[1 + n] != '>' || lt[2 + n])
			return cfg_expected(s, "an address such as \"name@host\" or \"Name <name@host>\"", e);
		snprintf(addr, sizeof addr, "%.*s", (int)(n < 319 ? n : 319), lt + 1);
	} else {
		snprintf(addr, sizeof addr, "%s", v);
	}
	if (strchr(addr, ',') || gf_mail_check_list(addr, e))
		return cfg_expected(s, "an address such as \"name@host\" or \"Name <name@host>\"", e);
	return 0;
}

/* smtp://[user:pass@]host[:port][?tls=required|opportunistic], or smtps:// */
static int check_smtp_url(struct src *s, const char *u, struct gf_err *e)
{
	const char *host, *q;

	if (!strncmp(u, "smtp://", 7))
		host = u + 7;
	else if (!strncmp(u, "smtps://", 8))
		host = u + 8;
	else
		return cfg_expected(s, "an smtp:// or smtps:// URL", e);
	if (strchr(host, '@'))
		host = strrchr(host, '@') + 1;
	if (!*host || *host == ':' || *host == '/' || *host == '?')
		return gf_err_set(e, "'%.200s' names no host", u);
	for (q = u; *q; q++)
		if ((unsigned char)*q <= ' ' || *q == 0x7f)
			return gf_err_set(e, "'%.200s' holds a space or control character", u);
	q = strchr(host, '?');
	if (q && strcmp(q, "?tls=required") && strcmp(q, "?tls=opportunistic"))
		return gf_err_set(e, "'%.200s': the only query supported is ?tls=required or ?tls=opportunistic", q);
	if (q && !strncmp(u, "smtps://", 8))
		return gf_err_set(e, "'%.200s': smtps:// is always TLS, ?tls= is for smtp://", u);
	return 0;
}

/* One [[notifications.webhooks]] (w) or [[notifications.emails]] (m) table. */
static int get_target(struct src *s, const struct toml_value *t, struct gf_webhook *w, struct gf_email *m,
    struct gf_err *e)
{
	size_t i;

	for (i = 0; i < toml_table_len(t); i++) {
		const char *k = cfg_key_at(t, i);
		struct src item = { .v = toml_table_at(t, i) };
		int64_t n;
		int rc = 0;

		if (!k) {
			rc = -1;
		} else if (!strcmp(k, "events")) {
			rc = w ? get_events(&item, &w->events, &w->n_events, e)
			       : get_events(&item, &m->events, &m->n_events, e);
		} else if (!strcmp(k, "filter_users")) {
			rc = w ? cfg_get_strlist(&item, &w->filter_users, &w->n_filter_users, e)
			       : cfg_get_strlist(&item, &m->filter_users, &m->n_filter_users, e);
		} else if (!strcmp(k, "timeout_secs") || !strcmp(k, "max_retries")) {
			bool to = k[0] == 't';

			rc = cfg_get_int(&item, to ? 1 : 0, to ? 3600 : 20, NULL, &n, e);
			if (!rc)
				*(to ? (w ? &w->timeout_secs : &m->timeout_secs)
				     : (w ? &w->max_retries : &m->max_retries)) = (int)n;
		} else if (w && !strcmp(k, "url")) {
			rc = cfg_get_string(&item, &w->url, e);
			if (!rc && strncmp(w->url, "http://", 7) && strncmp(w->url, "https://", 8))
				rc = cfg_expected(&item, "an http:// or https:// URL", e);
		} else if (w && !strcmp(k, "headers")) {
			rc = get_headers(&item, w, e);
		} else if (m && !strcmp(k, "smtp_url")) {
			rc = cfg_get_string(&item, &m->smtp_url, e) || check_smtp_url(&item, m->smtp_url, e);
		} else if (m && !strcmp(k, "from")) {
			rc = cfg_get_string(&item, &m->from, e) || get_mailbox(&item, m->from, e);
		} else if (m && !strcmp(k, "to")) {
			rc = cfg_get_strlist(&item, &m->to, &m->n_to, e);
			for (size_t j = 0; !rc && j < m->n_to; j++) {
				item.at = toml_array_at(item.v, j);
				rc = get_mailbox(&item, m->to[j], e);
			}
		} else if (m && !strcmp(k, "subject_prefix")) {
			rc = cfg_get_string(&item, &m->subject_prefix, e);
		} else {
			k = NULL;
		}
		if (!k) {
			s->line = toml_table_key_line(t, i);
			s->col = toml_table_key_col(t, i);
			return gf_err_set(e, "unknown key '%.100s' (known: %s)", toml_table_key(t, i),
			    w ? "url, events, filter_users, headers, timeout_secs, max_retries"
			      : "smtp_url, from, to, events, filter_users, subject_prefix, timeout_secs, max_retries");
		}
		if (rc) {
			s->at = cfg_src_node(&item);
			return gf_err_prefix(e, "%s", k);
		}
	}
	s->at = t;
	if (w && !w->url)
		return gf_err_set(e, "url is required");
	if (m && !m->smtp_url)
		return gf_err_set(e, "smtp_url is required");
	if (m && !m->from)
		return gf_err_set(e, "from is required");
	s->at = NULL;
	return 0;
}

/* An array of tables: [[notifications.webhooks]] / [[notifications.emails]],
 * or webhooks = [{...}]. */
int cfg_get_targets(struct src *s, struct gf_config *c, bool webhooks, struct gf_err *e)
{
	const char *what = webhooks ? "an array of tables ([[notifications.webhooks]])"
				    : "an array of tables ([[notifications.emails]])";
	struct gf_webhook *w = NULL;
	struct gf_email *m = NULL;
	size_t n, i;

	if (!s->v)
		return gf_err_set(e, "%s can only be set in the config file", webhooks ? "webhooks" : "emails");
	if (toml_type(s->v) != TOML_ARRAY)
		return cfg_expected(s, what, e);
	n = toml_array_len(s->v);
	if (webhooks)
		w = calloc(n ? n : 1, sizeof *w);
	else
		m = calloc(n ? n : 1, sizeof *m);
	if (!w && !m)
		return gf_err_set(e, "out of memory");
	for (i = 0; i < n; i++) {
		const struct toml_value *t = toml_array_at(s->v, i);

		if (w)
			w[i] = (struct gf_webhook){ .timeout_secs = 10, .max_retries = 3 };
		else
			m[i] = (struct gf_email){ .timeout_secs = 10, .max_retries = 3 };
		if (toml_type(t) != TOML_TABLE) {
			s->at = t;
			cfg_expected(s, what, e);
			goto fail;
		}
		if (get_target(s, t, w ? &w[i] : NULL, m ? &m[i] : NULL, e)) {
			gf_err_prefix(e, "%s %zu", webhooks ? "webhook" : "email", i + 1);
			goto fail;
		}
	}
	if (w) {
		cfg_free_webhooks(c->webhooks, c->n_webhooks);
		c->webhooks = w;
		c->n_webhooks = n;
	} else {
		cfg_free_emails(c->emails, c->n_emails);
		c->emails = m;
		c->n_emails = n;
	}
	return 0;
fail:
	if (w)
		cfg_free_webhooks(w, n);
	else
		cfg_free_emails(m, n);
	return -1;
}

