/* Standalone main for a libFuzzer harness, so that `make check` replays the corpora
 * under gcc's sanitizers without libFuzzer: each argument is a file or a directory
 * whose regular files are replayed in name order. Exit 0 when every input ran
 * (the harness aborts, or a sanitizer stops the process, on a failure); 2 when an
 * input cannot be read or there is none at all. Arguments starting with '-' are
 * ignored so that libFuzzer-style flags do no harm. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));
/* From the sanitizer runtime (sanitizer/common_interface_defs.h). */
void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

#define REPLAY_MAX (64u << 20) /* no corpus file is anywhere near this */

/* The input being replayed, named when a sanitizer or an abort() stops the process. */
static char current[4096];

static void say_current(void)
{
	static const char pre[] = "replay: failing input: ";
	size_t n = strnlen(current, sizeof current);
	if (n == 0)
		return;
	/* Only async-signal-safe calls: this also runs from the SIGABRT handler. */
	if (write(STDERR_FILENO, pre, sizeof pre - 1) < 0 || write(STDERR_FILENO, current, n) < 0 ||
	    write(STDERR_FILENO, "\n", 1) < 0)
		return;
}

static void on_abort(int sig)
{
	say_current();
	signal(sig, SIG_DFL);
	raise(sig);
}

static int replay_file(const char *path, size_t *count)
{
	FILE *f = fopen(path, "rb");
	struct stat st;
	if (!f || fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > REPLAY_MAX) {
		fprintf(stderr, "replay: cannot read %s: %s\n", path,
			f ? "not a regular file of at most 64 MiB" : strerror(errno));
		if (f)
			fclose(f);
		return -1;
	}
	size_t n = (size_t)st.st_size;
	/* Exactly n bytes on the heap (even 0), so that AddressSanitizer sees a read past the end. */
	uint8_t *p = malloc(n);
	if ((!p && n) || fread(p, 1, n, f) != n) {
		fprintf(stderr, "replay: cannot read %s\n", path);
		free(p);
		fclose(f);
		return -1;
	}
	fclose(f);
	snprintf(current, sizeof current, "%s", path);
	LLVMFuzzerTestOneInput(p, n);
	current[0] = 0;
	free(p);
	(*count)++;
	return 0;
}

static int replay_dir(const char *dir, size_t *count)
{
	struct dirent **names;
	int n = scandir(dir, &names, NULL, alphasort);
	if (n < 0) {
		fprintf(stderr, "replay: cannot list %s: %s\n", dir, strerror(errno));
		return -1;
	}
	int rc = 0;
	for (int i = 0; i < n; i++) {
		char path[4096];
		struct stat st;
		if (rc == 0 && snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name) < (int)sizeof path &&
		    stat(path, &st) == 0 && S_ISREG(st.st_mode))
			rc = replay_file(path, count);
		free(names[i]);
	}
	free(names);
	return rc;
}

int main(int argc, char **argv)
{
	if (LLVMFuzzerInitialize)
		LLVMFuzzerInitialize(&argc, &argv);
	if (__sanitizer_set_death_callback)
		__sanitizer_set_death_callback(say_current);
	signal(SIGABRT, on_abort);
	size_t count = 0;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (argv[i][0] == '-')
			continue;
		if (stat(argv[i], &st) != 0) {
			fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
			return 2;
		}
		if ((S_ISDIR(st.st_mode) ? replay_dir(argv[i], &count) : replay_file(argv[i], &count)) != 0)
			return 2;
	}
	if (count == 0) {
		fprintf(stderr, "replay: no input to replay\n");
		return 2;
	}
	fprintf(stderr, "replay: %zu inputs ran without a failure\n", count);
	return 0;
}
