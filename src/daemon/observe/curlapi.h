/* curlapi.h — libcurl, loaded when the first notification target needs it.
 *
 * Most daemons send no notification: linking libcurl would map it and its
 * TLS, LDAP, Kerberos and SSH libraries into every gflowd (~5 MiB of
 * resident pages and their relocations at each start). notify.c calls
 * libcurl only through this table, filled by curlapi_load(). */
#ifndef GF_CURLAPI_H
#define GF_CURLAPI_H

#include <curl/curl.h>

#include "err.h"

struct curlapi {
	CURLcode (*global_init)(long flags);
	void (*global_cleanup)(void);
	CURL *(*easy_init)(void);
	CURLcode (*easy_setopt)(CURL *c, CURLoption opt, ...);
	CURLcode (*easy_perform)(CURL *c);
	CURLcode (*easy_getinfo)(CURL *c, CURLINFO info, ...);
	const char *(*easy_strerror)(CURLcode cc);
	void (*easy_cleanup)(CURL *c);
	struct curl_slist *(*slist_append)(struct curl_slist *l, const char *s);
	void (*slist_free_all)(struct curl_slist *l);
};

/* Loads libcurl (once per process) and runs curl_global_init; then the
 * table is filled. Call it from the loop thread before any worker starts. */
int curlapi_load(struct curlapi *api, struct gf_err *e);
/* curl_global_cleanup, once every worker has stopped (libcurl stays mapped;
 * a later curlapi_load starts it again). */
void curlapi_release(void);

#endif
