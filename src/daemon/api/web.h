/* web.h — the dashboard's files, compiled in (scripts/embed-web.py makes
 * web_assets.c from web/ at build time; web.c serves them). */
#ifndef GF_WEB_H
#define GF_WEB_H

#include <stddef.h>

struct web_asset {
	const char *path;	/* "/ui/app.js" */
	const char *type;	/* Content-Type */
	const char *etag;	/* quoted */
	const unsigned char *data;
	size_t size;
};

extern const struct web_asset web_assets[];	/* ends with path == NULL */

#endif
