/* The records' program sink (the seed's CallbackSink, in a daemon's terms): with
 * ASSENT_RECORD_JSONL=|/abs/program the signer starts that program with the records' JSON
 * lines (calls and events, "record": "tool_call" | "event") on its standard input, and hands
 * the pipe's other end to the recorder in place of a file. The program gets no argument, an
 * empty environment (the signer's holds secrets) and the daemon's stderr; it is started
 * again with each recorder. */
#define _GNU_SOURCE
#include "gateway/signer/state.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int recsink_check(const char *jsonl, char *err, size_t n)
{
	if (jsonl[0] != '|')
		return 0;
	const char *prog = jsonl + 1;
	if (prog[0] != '/') {
		snprintf(err, n, "ASSENT_RECORD_JSONL=|PROGRAM: expected an absolute path, got '%.200s'", prog);
		return -1;
	}
	if (access(prog, X_OK) != 0) {
		snprintf(err, n, "ASSENT_RECORD_JSONL=|%.200s: cannot run it: %s", prog, strerror(errno));
		return -1;
	}
	return 0;
}

int recsink_start(const char *prog)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) != 0) {
		slog("error", "call records: no pipe for the program %s: %s", prog, strerror(errno));
		return -1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		slog("error", "call records: cannot start the program %s: %s", prog, strerror(errno));
		return -1;
	}
	if (pid == 0) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		int nul = open("/dev/null", O_WRONLY);
		if (nul < 0 || dup2(p[0], 0) < 0 || dup2(nul, 1) < 0)
			_exit(127);
		closefrom(3);
		char *argv[] = {(char *)prog, NULL}, *envp[] = {NULL};
		execve(prog, argv, envp);
		_exit(127);
	}
	close(p[0]);
	slog("info", "call records: JSON lines to the program %s (pid %d)", prog, (int)pid);
	return p[1];
}
