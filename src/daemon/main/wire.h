/* wire.h — the daemon's event subscribers (wire.c). */
#ifndef GF_WIRE_H
#define GF_WIRE_H

struct server;

/* Subscribe every layer's handlers to the events below them; once, before
 * anything can fire. */
void wire_hooks(struct server *s);

#endif
