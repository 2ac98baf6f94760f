/* wio.h: the workers' reading of their signer's frames. */
#include "gateway/worker/wio.h"

#include "gateway/proto/frames.h"

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
		char why[AS_ERRLEN];
		if (frame_down_check(f.type, f.body, why) == 0) /* its table, before any handler */
			on(arg, &f);
		else
			ipc_log(c->fd, "error", "a frame from the signer refused: %s", why);
		ipc_frame_close_fds(&f);
	}
}
