/* jsonapi.h — the JSON values a file is built with: jansson's (the daemon)
 * or jval.h's (the client, whose files are built with GF_JVAL). The files of
 * src/common that take JSON values include this, so that both link them. */
#ifndef GF_JSONAPI_H
#define GF_JSONAPI_H

#ifdef GF_JVAL
#include "jval.h"
#else
#include <jansson.h>
#endif

#endif
