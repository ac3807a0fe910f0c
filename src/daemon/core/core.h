/* core.h — the core layer (src/daemon/core/): pure data and functions, no
 * struct server, no I/O. job.c and job.h (the job record, its states and
 * JSON form), jobw.c and jobw.h (its wire form, written field by field),
 * sched.c and sched.h (sched_pass(): decisions from a snapshot). The place
 * for what can be computed from data alone: a start estimate, a preemption
 * choice. May call: common and libc only. Everything above may call it. */
#ifndef GF_CORE_H
#define GF_CORE_H

#include "job.h"
#include "jobw.h"
#include "sched.h"

#endif
