/* What the workers' loops share about their signer's socket. */
#ifndef ASSENT_WIO_H
#define ASSENT_WIO_H

#include "gateway/proto/ipc.h"

/* The socket is readable: read what came and hand each whole frame to on (a's arena is
 * reset before each; the frame's descriptors are closed after it unless on took them).
 * Each frame is checked against its type's table first (frame_down_check): one that
 * breaks it, or has no table, reaches no handler and is logged as an error naming the
 * frame type and the field, so a handler reads its fields with frame_get_*.
 * 0: go on; 1: the signer went away (the worker ends, exit 0); AS_ECORRUPT: it sent what is
 * no frame (exit 2). */
int wio_frames(struct ipc_conn *c, struct cv_arena *a, void (*on)(void *arg, struct ipc_frame *f), void *arg,
	       char *err) AS_MUST_USE;

#endif
