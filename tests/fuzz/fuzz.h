/*
 * fuzz.h -- what the fuzz targets of tests/fuzz/ share: the entry point
 * libFuzzer calls, the check that turns a broken invariant into a finding,
 * and a read-only file in memory that the engine's readers (SSTables, the
 * log) open through the environment layer as they would a file on disk.
 *
 * Each target is one LLVMFuzzerTestOneInput.  It is linked either with
 * libFuzzer (`make fuzz`, configured with --enable-fuzzing) or with
 * tests/fuzz/replay.c, whose main() feeds it every file of the target's
 * committed corpus as a TAP test in `make check`.  A target must not keep
 * state from one input to the next (beyond caches it rebuilds), must free
 * what it allocates (ASan's leak check runs under libFuzzer), and checks
 * more than "no crash": a round trip or an invariant of the decoder.
 */
#ifndef SMOLFS_FUZZ_H
#define SMOLFS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * A broken invariant is a finding: say which and abort, so that libFuzzer
 * saves the input and the replay driver's TAP stream ends in an error.
 */
#define FUZZ_CHECK(cond, ...) do {                                              \
		if (!(cond)) {                                                   \
			fprintf(stderr, "%s:%d: invariant broken: %s: ", __FILE__, \
				__LINE__, #cond);                                \
			fprintf(stderr, __VA_ARGS__);                            \
			fputc('\n', stderr);                                     \
			abort();                                                 \
		}                                                                \
	} while (0)

/* A little-endian reader over the fuzzer's bytes, for targets that take structured input. */
struct fuzz_in {
	const uint8_t *p;
	size_t n;
};
static inline unsigned fuzz_byte(struct fuzz_in *in)
{
	if (in->n == 0)
		return 0;
	in->n--;
	return *in->p++;
}
/* Up to max bytes (a length read from the input itself, so fuzzing explores lengths). */
static inline const uint8_t *fuzz_bytes(struct fuzz_in *in, size_t max, size_t *len)
{
	size_t n = fuzz_byte(in);
	const uint8_t *p = in->p;

	if (n > max)
		n = max;
	if (n > in->n)
		n = in->n;
	in->p += n;
	in->n -= n;
	*len = n;
	return p;
}

/*
 * A file reading data[0..len) (borrowed: the input outlives the file),
 * opened in an environment of its own that offers pread and close alone,
 * so readers take the pread path; closed and freed with env_close
 * (tests/fuzz/memfile.c).
 */
struct env_file *fuzz_file_new(const uint8_t *data, size_t len);
/* A file whose appends go to the end of out (borrowed); sync does nothing. */
struct buf;
struct env_file *fuzz_file_append(struct buf *out);

#endif
