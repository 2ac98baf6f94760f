/* wio.h: the workers' reading of their signer's frames. */
#include "gateway/worker/wio.h"

int wio_frames(struct ipc_conn *c, struct cv_arena *a, void (*on)(void *arg, struct ipc_frame *f), void *arg, char *err)
{
	if (ipc_read(c, err) == AS_ECORRUPT)
		return AS_ECORRUPT;
	for (;;) {
		cv_arena_reset(a);
		struct ipc_frame f;
		int g = ipc_next(c, a, &f, err);
		if (g != 0)
			return g == AS_EIO || g == AS_ECORRUPT ? 1 : 0; /* 1: the signer went away */
		on(arg, &f);
		ipc_frame_close_fds(&f);
	}
}
