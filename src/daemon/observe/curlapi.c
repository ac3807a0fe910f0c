/* curlapi.c — finds libcurl at run time (see curlapi.h). */
#include "curlapi.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stddef.h>

/* The runtime names of libcurl's ABI 4: Debian's OpenSSL build (what
 * libcurl4-openssl-dev builds against), then its GnuTLS build. */
static const char *const sonames[] = { "libcurl.so.4", "libcurl-gnutls.so.4" };

static void *lib;	/* kept open once loaded (libcurl keeps global state) */
static bool inited;
static struct curlapi loaded;

static int load_lib(struct gf_err *e)
{
	static const struct {
		const char *name;
		size_t off;
	} syms[] = {
		{ "curl_global_init", offsetof(struct curlapi, global_init) },
		{ "curl_global_cleanup", offsetof(struct curlapi, global_cleanup) },
		{ "curl_easy_init", offsetof(struct curlapi, easy_init) },
		{ "curl_easy_setopt", offsetof(struct curlapi, easy_setopt) },
		{ "curl_easy_perform", offsetof(struct curlapi, easy_perform) },
		{ "curl_easy_getinfo", offsetof(struct curlapi, easy_getinfo) },
		{ "curl_easy_strerror", offsetof(struct curlapi, easy_strerror) },
		{ "curl_easy_cleanup", offsetof(struct curlapi, easy_cleanup) },
		{ "curl_slist_append", offsetof(struct curlapi, slist_append) },
		{ "curl_slist_free_all", offsetof(struct curlapi, slist_free_all) },
	};
	const char *why = "not found";
	void *h = NULL;

	for (size_t i = 0; i < sizeof sonames / sizeof *sonames && !h; i++)
		if (!(h = dlopen(sonames[i], RTLD_NOW | RTLD_LOCAL)))
			why = dlerror();
	if (!h)
		return gf_err_set(e, "notifications: cannot load libcurl (%s); install the libcurl4 package",
				  why);
	for (size_t i = 0; i < sizeof syms / sizeof *syms; i++) {
		void *f = dlsym(h, syms[i].name);

		if (!f) {
			dlclose(h);
			return gf_err_set(e, "notifications: the libcurl found lacks %s", syms[i].name);
		}
		/* POSIX: a function's address survives the trip through void *. */
		*(void **)((char *)&loaded + syms[i].off) = f;
	}
	lib = h;
	return 0;
}

int curlapi_load(struct curlapi *api, struct gf_err *e)
{
	if (!lib && load_lib(e))
		return -1;
	if (!inited) {
		if (loaded.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
			return gf_err_set(e, "notifications: libcurl could not start");
		inited = true;
	}
	*api = loaded;
	return 0;
}

void curlapi_release(void)
{
	if (inited)
		loaded.global_cleanup();
	inited = false;
}
