/* What the workers' loops share about their signer's socket. */
#ifndef ASSENT_WIO_H
#define ASSENT_WIO_H

#include "gateway/proto/ipc.h"

/* The socket is readable: read what came and hand each whole frame to on (a's arena is
 * reset before each; the frame's descriptors are closed after it unless on took them).
 * 0: go on; 1: the signer went away (the worker ends, exit 0); AS_ECORRUPT: it sent what is
 * no frame (exit 2). */
int wio_frames(struct ipc_conn *c, struct cv_arena *a, void (*on)(void *arg, struct ipc_frame *f), void *arg,
	       char *err) AS_MUST_USE;

#endif
