/* lifecycle.h — gflowd's management subcommands. */
#ifndef GF_LIFECYCLE_H
#define GF_LIFECYCLE_H

int lifecycle_main(int argc, char **argv, const char *usage);

#endif
