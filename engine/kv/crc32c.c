/*
 * crc32c.c -- CRC-32C over the reflected polynomial 0x82F63B78.
 *
 * The portable path processes eight bytes per step with eight 256-entry tables
 * built at first use ("slicing by 8").  On x86-64 CPUs with SSE4.2 the crc32
 * instruction does the same work several times faster; the choice is made
 * once, from cpuid.
 *
 * The instruction takes three cycles to give its result and can start one
 * each cycle, so one running CRC uses a third of it.  Buffers of at least
 * three lanes are cut into rounds of three LANE-byte lanes whose CRCs run
 * side by side, then joined: a CRC register is linear, so the CRC of A|B
 * from register x is shift(x, |B|) ^ crc(0, B), where shift feeds |B| zero
 * bytes through the register; for the one lane length that shift is four
 * table lookups (lane_shift).  A 4 KiB block's CRC took about a third of
 * the time this way (tests/kv_crc32c.c checks every path against a
 * bit-at-a-time reference).
 */
#include "crc32c.h"

#include <pthread.h>
#include <string.h>

static uint32_t table[8][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void table_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
		table[0][i] = c;
	}
	for (int t = 1; t < 8; t++)
		for (uint32_t i = 0; i < 256; i++)
			table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xff];
}

static uint32_t crc_portable(uint32_t crc, const unsigned char *p, size_t n)
{
	pthread_once(&table_once, table_init);
	while (n && ((uintptr_t)p & 7)) {
		crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xff];
		n--;
	}
	while (n >= 8) {
		uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
				     (uint32_t)p[3] << 24);
		uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 |
			      (uint32_t)p[7] << 24;
		crc = table[7][lo & 0xff] ^ table[6][(lo >> 8) & 0xff] ^ table[5][(lo >> 16) & 0xff] ^
		      table[4][lo >> 24] ^ table[3][hi & 0xff] ^ table[2][(hi >> 8) & 0xff] ^
		      table[1][(hi >> 16) & 0xff] ^ table[0][hi >> 24];
		p += 8;
		n -= 8;
	}
	while (n--)
		crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xff];
	return crc;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>

#define LANE 256   /* bytes per lane of a three-lane round */

/* shift_table[k][b]: the register after LANE zero bytes from b << 8k. */
static uint32_t shift_table[4][256];
static pthread_once_t shift_once = PTHREAD_ONCE_INIT;

__attribute__((target("sse4.2")))
static void shift_init(void)
{
	for (int k = 0; k < 4; k++)
		for (uint32_t b = 0; b < 256; b++) {
			uint64_t c = b << (8 * k);

			for (int i = 0; i < LANE / 8; i++)
				c = __builtin_ia32_crc32di(c, 0);
			shift_table[k][b] = (uint32_t)c;
		}
}

/* The register after LANE zero bytes from x (linear in x, byte by byte). */
static inline uint32_t lane_shift(uint32_t x)
{
	return shift_table[0][x & 0xff] ^ shift_table[1][(x >> 8) & 0xff] ^
	       shift_table[2][(x >> 16) & 0xff] ^ shift_table[3][x >> 24];
}

__attribute__((target("sse4.2")))
static uint32_t crc_sse42(uint32_t crc, const unsigned char *p, size_t n)
{
	uint64_t c = crc;

	while (n && ((uintptr_t)p & 7)) {
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
		n--;
	}
	if (n >= 3 * LANE) {
		pthread_once(&shift_once, shift_init);
		do {
			uint64_t b = 0, d = 0;

			for (size_t i = 0; i < LANE; i += 8) {
				uint64_t va, vb, vd;

				memcpy(&va, p + i, 8);
				memcpy(&vb, p + LANE + i, 8);
				memcpy(&vd, p + 2 * LANE + i, 8);
				c = __builtin_ia32_crc32di(c, va);
				b = __builtin_ia32_crc32di(b, vb);
				d = __builtin_ia32_crc32di(d, vd);
			}
			c = lane_shift(lane_shift((uint32_t)c) ^ (uint32_t)b) ^ (uint32_t)d;
			p += 3 * LANE;
			n -= 3 * LANE;
		} while (n >= 3 * LANE);
	}
	while (n >= 8) {
		uint64_t v;
		memcpy(&v, p, 8);
		c = __builtin_ia32_crc32di(c, v);
		p += 8;
		n -= 8;
	}
	while (n--)
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
	return (uint32_t)c;
}

static int have_sse42(void)
{
	unsigned a, b, c, d;

	if (!__get_cpuid(1, &a, &b, &c, &d))
		return 0;
	return (c & bit_SSE4_2) != 0;
}
#endif

uint32_t crc32c_extend(uint32_t crc, const void *data, size_t n)
{
#if defined(__x86_64__) && defined(__GNUC__)
	static int hw = -1;  /* -1 unknown; racing first callers store the same answer */
	int h = __atomic_load_n(&hw, __ATOMIC_RELAXED);
	if (h < 0) {
		h = have_sse42();
		__atomic_store_n(&hw, h, __ATOMIC_RELAXED);
	}
	if (h)
		return ~crc_sse42(~crc, data, n);
#endif
	return ~crc_portable(~crc, data, n);
}
