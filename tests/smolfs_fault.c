/*
 * smolfs_fault.c -- the test build of the daemon: smolfs (the files of fs/ compiled
 * again with -DSMOLFS_FAULT_HOOK) on the engine's fault-injecting
 * environment, steered at run time by the test script that mounted it.
 * Built by `make check` as tests/smolfs_fault, never installed.
 *
 * Before the database opens, main() calls smolfs_test_env() here, which
 * puts a fault environment (around the POSIX one) in the engine's options
 * and starts a thread that reads commands, one a line, from the FIFO named
 * by SMOLFS_FAULT_CTL:
 *
 *   fail OPS MATCH ERRNO [COUNT]   fail the calls of the kinds in OPS (a comma
 *                                  list of open, read, append, sync, rename,
 *                                  unlink, writes, all) on paths holding MATCH
 *                                  (`*`: any path) with ERRNO (EIO, ENOSPC,
 *                                  EDQUOT, ENOMEM), COUNT of them (default:
 *                                  all from now on)
 *   clear                          inject nothing any more
 *
 * Each command, once applied, is answered by a line appended to the file
 * SMOLFS_FAULT_CTL.ack: "ok N" (N counts the commands so far) or "bad N: why",
 * so the script knows the fault is in place before it writes.
 * SMOLFS_FAULT_WRITE_BUFFER (bytes), if set, is the engine's memtable size,
 * so that a test's few writes fill one and a flush (table writes and a
 * manifest edit) follows.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kv.h"
#include "kv/env.h"

int smolfs_test_env(struct kv_options *opt);

/* The daemon's fault environment: kept for the whole life of the process. */
static struct kv_env *fault_env;
static char *ack_path;
static long ncommands;

static const struct { const char *name; unsigned mask; } op_names[] = {
	{ "open", ENV_OP_OPEN }, { "read", ENV_OP_READ }, { "append", ENV_OP_APPEND },
	{ "sync", ENV_OP_SYNC }, { "rename", ENV_OP_RENAME }, { "unlink", ENV_OP_UNLINK },
	{ "writes", ENV_OP_WRITES }, { "all", ENV_OP_ALL },
};

static const struct { const char *name; int err; } err_names[] = {
	{ "EIO", EIO }, { "ENOSPC", ENOSPC }, { "EDQUOT", EDQUOT }, { "ENOMEM", ENOMEM },
};

/* "append,sync": the mask; 0 for a name not known. */
static unsigned parse_ops(char *s)
{
	unsigned mask = 0;
	char *save = NULL;

	for (char *w = strtok_r(s, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		size_t i;

		for (i = 0; i < sizeof(op_names) / sizeof(op_names[0]); i++)
			if (!strcmp(w, op_names[i].name))
				break;
		if (i == sizeof(op_names) / sizeof(op_names[0]))
			return 0;
		mask |= op_names[i].mask;
	}
	return mask;
}

static int parse_err(const char *s)
{
	for (size_t i = 0; i < sizeof(err_names) / sizeof(err_names[0]); i++)
		if (!strcmp(s, err_names[i].name))
			return err_names[i].err;
	return 0;
}

/* Apply one command line; NULL, or why it was refused. */
static const char *apply(char *line)
{
	char *save = NULL, *verb, *ops, *match, *err, *count, *end;
	unsigned mask;
	long n = -1;
	int e;

	verb = strtok_r(line, " \t\n", &save);
	if (!verb)
		return "an empty command";
	if (!strcmp(verb, "clear")) {
		env_fault_clear(fault_env);
		return NULL;
	}
	if (strcmp(verb, "fail"))
		return "not a command (fail, clear)";
	ops = strtok_r(NULL, " \t\n", &save);
	match = strtok_r(NULL, " \t\n", &save);
	err = strtok_r(NULL, " \t\n", &save);
	count = strtok_r(NULL, " \t\n", &save);
	if (!ops || !match || !err)
		return "fail OPS MATCH ERRNO [COUNT]";
	mask = parse_ops(ops);
	if (!mask)
		return "OPS: a comma list of open, read, append, sync, rename, unlink, writes, all";
	e = parse_err(err);
	if (!e)
		return "ERRNO: EIO, ENOSPC, EDQUOT or ENOMEM";
	if (count) {
		errno = 0;
		n = strtol(count, &end, 10);
		if (errno || *end || n <= 0)
			return "COUNT: a number of calls, 1 or more";
	}
	env_fault_inject(fault_env, mask, 0, n, -e, strcmp(match, "*") ? match : NULL);
	return NULL;
}

static void acknowledge(const char *why)
{
	FILE *f = fopen(ack_path, "a");

	if (!f) {
		fprintf(stderr, "smolfs_fault: %s: %s\n", ack_path, strerror(errno));
		return;
	}
	if (why)
		fprintf(f, "bad %ld: %s\n", ncommands, why);
	else
		fprintf(f, "ok %ld\n", ncommands);
	fclose(f);
}

/*
 * The FIFO is opened for reading and writing, so that the open never waits
 * for a writer and the reads never see an end of file between two writers.
 * The thread lives as long as the process.
 */
static void *control(void *arg)
{
	FILE *f = arg;
	char line[512];

	while (fgets(line, sizeof(line), f)) {
		const char *why;

		ncommands++;
		why = apply(line);
		fprintf(stderr, "smolfs_fault: command %ld: %s%s\n", ncommands,
			why ? "refused: " : "applied", why ? why : "");
		acknowledge(why);
	}
	return NULL;
}

int smolfs_test_env(struct kv_options *opt)
{
	const char *ctl = getenv("SMOLFS_FAULT_CTL");
	const char *wb = getenv("SMOLFS_FAULT_WRITE_BUFFER");
	pthread_attr_t attr;
	pthread_t t;
	FILE *f;
	int fd, r;

	if (!ctl)
		return -EINVAL;
	fault_env = env_fault_new(env_posix());
	opt->env = fault_env;
	if (wb)
		opt->write_buffer_size = strtoul(wb, NULL, 10);
	if (asprintf(&ack_path, "%s.ack", ctl) < 0)
		return -ENOMEM;
	fd = open(ctl, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	f = fdopen(fd, "r");
	if (!f) {
		r = -errno;
		close(fd);
		return r;
	}
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	r = -pthread_create(&t, &attr, control, f);
	pthread_attr_destroy(&attr);
	if (r < 0)
		fclose(f);
	return r;
}
