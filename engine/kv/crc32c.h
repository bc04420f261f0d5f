/*
 * crc32c.h -- CRC-32C (Castagnoli), the checksum on every WAL record, SSTable
 * block, footer and manifest record.  Uses the SSE4.2 instruction when the CPU
 * has it, a table otherwise; both give the same values.
 */
#ifndef SMOLFS_CRC32C_H
#define SMOLFS_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* The CRC of data appended to bytes whose CRC was crc (start with 0). */
uint32_t crc32c_extend(uint32_t crc, const void *data, size_t n);

static inline uint32_t crc32c(const void *data, size_t n)
{
	return crc32c_extend(0, data, n);
}

/*
 * Stored CRCs are masked: a CRC computed over bytes that themselves contain
 * CRCs (a block holding a record holding a checksum) is otherwise prone to
 * cancelling out.  Rotate and add a constant; unmask undoes it.
 */
static inline uint32_t crc32c_mask(uint32_t crc)
{
	return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

static inline uint32_t crc32c_unmask(uint32_t m)
{
	uint32_t r = m - 0xa282ead8u;
	return (r >> 17) | (r << 15);
}

#endif
