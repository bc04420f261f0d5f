/*
 * kv_crc32c.c -- tests for engine/crc32c.c: the published CRC-32C check
 * values, extension, masking, and agreement between the fast path this CPU
 * takes (SSE4.2 or slicing-by-8) and a bit-at-a-time reference written from
 * the definition, over random buffers at every alignment.
 */
#include "tap.h"
#include "crc32c.h"
#include "util.h"

#include <stdlib.h>

/* CRC-32C from the definition: reflected polynomial 0x82F63B78, one bit per step. */
static uint32_t crc_reference(uint32_t crc, const unsigned char *p, size_t n)
{
	crc = ~crc;
	while (n--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = crc & 1 ? (crc >> 1) ^ 0x82f63b78u : crc >> 1;
	}
	return ~crc;
}

static void test_vectors(void)
{
	unsigned char buf[32];
	unsigned char inc[32], dec[32];

	is_int(crc32c("123456789", 9), 0xe3069283u, "CRC-32C of \"123456789\" is 0xE3069283");
	memset(buf, 0, sizeof(buf));
	is_int(crc32c(buf, 32), 0x8a9136aau, "CRC-32C of 32 zero bytes is 0x8A9136AA");
	memset(buf, 0xff, sizeof(buf));
	is_int(crc32c(buf, 32), 0x62a8ab43u, "CRC-32C of 32 0xFF bytes is 0x62A8AB43");
	/* RFC 3720 (iSCSI), B.4: incrementing and decrementing bytes. */
	for (int i = 0; i < 32; i++) {
		inc[i] = (unsigned char)i;
		dec[i] = (unsigned char)(31 - i);
	}
	is_int(crc32c(inc, 32), 0x46dd794eu, "CRC-32C of bytes 0..31 is 0x46DD794E");
	is_int(crc32c(dec, 32), 0x113fdb5cu, "CRC-32C of bytes 31..0 is 0x113FDB5C");
	is_int(crc32c("", 0), 0, "CRC-32C of nothing is 0");
	is_int(crc_reference(0, (const unsigned char *)"123456789", 9), 0xe3069283u,
	       "the bit-at-a-time reference gives the check value too");
}

static void test_extend(void)
{
	const char *s = "hello, world: a checksum over several pieces";
	size_t n = strlen(s);
	int bad = 0;

	for (size_t cut = 0; cut <= n; cut++)
		if (crc32c_extend(crc32c(s, cut), s + cut, n - cut) != crc32c(s, n))
			bad++;
	is_int(bad, 0,
	       "extending the CRC of a prefix by the rest equals the CRC of the whole, "
	       "at every cut");
	ok(crc32c_extend(crc32c(s, n), "", 0) == crc32c(s, n),
	   "extending by nothing changes nothing");
	ok(crc32c("a", 1) != crc32c("b", 1), "different bytes give different CRCs");
}

static void test_mask(void)
{
	uint64_t rng = 42;
	int bad = 0, fixed = 0;
	uint32_t c = crc32c("foo", 3);

	ok(crc32c_mask(c) != c, "masking changes the CRC");
	ok(crc32c_mask(crc32c_mask(c)) != crc32c_mask(c),
	   "masking twice differs from masking once");
	is_int(crc32c_unmask(crc32c_mask(c)), c, "unmask undoes mask");
	for (int i = 0; i < 100000; i++) {
		uint32_t x = (uint32_t)rand_next(&rng);
		if (crc32c_unmask(crc32c_mask(x)) != x || crc32c_mask(crc32c_unmask(x)) != x)
			bad++;
		fixed += crc32c_mask(x) == x;
	}
	is_int(bad, 0, "mask and unmask are inverse bijections on 100000 random values");
	is_int(fixed, 0, "mask leaves no random value unchanged");
	is_int(crc32c_unmask(crc32c_mask(0)), 0, "0 round-trips through the mask");
	is_int(crc32c_unmask(crc32c_mask(UINT32_MAX)), UINT32_MAX,
	       "0xFFFFFFFF round-trips through the mask");
}

static void test_against_reference(void)
{
	enum { MAXLEN = 20000 };
	unsigned char *mem = malloc(MAXLEN + 64);
	uint64_t rng = 0x1234567887654321ull;
	int bad = 0, bad_ext = 0;

#if defined(__x86_64__) && defined(__GNUC__)
	int hw = __builtin_cpu_supports("sse4.2");
	diag("this CPU %s SSE4.2: crc32c takes the %s path", hw ? "has" : "lacks",
	     hw ? "crc32 instruction" : "table");
#endif
	for (int t = 0; t < 2000; t++) {
		size_t off = rand_next(&rng) % 16;
		/*
		 * Half the trials short, for the head and tail loops around the
		 * 8-byte body; a quarter within a few bytes of a whole number of
		 * three-lane rounds (768 bytes each), where the rounds end and the
		 * tail begins; the rest anywhere up to MAXLEN.
		 */
		size_t len = t % 2 ? rand_next(&rng) % 24
			   : t % 4 == 0 ? 768 * (rand_next(&rng) % 26) + rand_next(&rng) % 17
			   : rand_next(&rng) % MAXLEN;
		if (len > MAXLEN)
			len = MAXLEN;
		uint32_t seed = t % 3 ? 0 : (uint32_t)rand_next(&rng);
		for (size_t i = 0; i < len; i++)
			mem[off + i] = (unsigned char)rand_next(&rng);
		if (crc32c_extend(seed, mem + off, len) != crc_reference(seed, mem + off, len))
			bad++;
		if (len > 0) {
			size_t cut = rand_next(&rng) % len;
			uint32_t a = crc32c_extend(seed, mem + off, cut);
			uint32_t whole = crc32c_extend(a, mem + off + cut, len - cut);
			if (whole != crc_reference(seed, mem + off, len))
				bad_ext++;
		}
	}
	is_int(bad, 0, "crc32c agrees with the bit-at-a-time reference on 2000 random buffers, "
	       "lengths 0..20000 at offsets 0..15, with and without a starting CRC");
	is_int(bad_ext, 0, "a CRC extended at a random cut agrees with the reference on the whole");
	free(mem);
}

int main(void)
{
	plan(19);
	test_vectors();
	test_extend();
	test_mask();
	test_against_reference();
	return exit_status();
}
